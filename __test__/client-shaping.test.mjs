// SPEC §8 Gap 1 (requestParams, bodyTransform), runtime registration, and options not in this build.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, anReply, text, runChild } from "./support/llm.mjs"

test("requestParams merge into the body and win on collision (anthropic max_tokens)", async (t) => {
  const llm = await startLLM([anReply([text("ok")])])
  t.after(() => llm.close())
  const c = createClient({ baseUrl: llm.url, style: "anthropic", model: "c", apiKey: "k", requestParams: { max_tokens: 256, temperature: 0, metadata: { user_id: "u-1" } } })
  await c.run("hi", { toolkit: await createToolkit({ builtins: false }) })
  const body = llm.requests[0].json
  assert.deepStrictEqual(Object.keys(body), ["model", "max_tokens", "system", "messages", "temperature", "metadata"])
  assert.equal(body.max_tokens, 256)
  assert.equal(body.temperature, 0)
  assert.deepStrictEqual(body.metadata, { user_id: "u-1" })
})

test("requestParams cannot set messages, tools or stream; each refusal is warned on stderr", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const r = await runChild(`
    const { createClient, createToolkit } = await import(ENTRY)
    const c = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k",
      requestParams: { messages: [], tools: [{}], stream: true, seed: 7 } })
    console.log((await c.run("hi", { toolkit: await createToolkit({ builtins: false }) })).text)
  `, { timeoutMs: 5000 })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "ok\n")
  const body = llm.requests[0].json
  assert.deepStrictEqual(body, { model: "m", messages: [{ role: "user", content: "hi" }], seed: 7 })
  for (const key of ["messages", "tools", "stream"]) assert.match(r.stderr, new RegExp(`requestParams key "${key}" is not allowed`))
})

test("bodyTransform sees the merged body last and its return is sent; a falsy return keeps the body", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const seen = []
  const tk = await createToolkit({ builtins: false })
  const rewrite = createClient({
    baseUrl: llm.url, style: "openai", model: "m", apiKey: "k",
    requestParams: { user: "abc" },
    hooks: { beforeLLM: ({ messages }) => ({ messages: [...messages, { role: "user", content: "from hook" }] }) },
    bodyTransform: (body) => { seen.push(structuredClone(body)); return { model: "other-model", messages: body.messages.slice(-1) } },
  })
  await rewrite.run("hi", { toolkit: tk })
  assert.deepStrictEqual(seen, [{ model: "m", messages: [{ role: "user", content: "hi" }, { role: "user", content: "from hook" }], user: "abc" }])
  assert.deepStrictEqual(llm.requests[0].json, { model: "other-model", messages: [{ role: "user", content: "from hook" }] })

  const keep = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", bodyTransform: () => undefined })
  await keep.run("plain", { toolkit: tk })
  assert.deepStrictEqual(llm.requests[1].json, { model: "m", messages: [{ role: "user", content: "plain" }] })
})

test("bodyTransform may edit the body in place and return nothing: the edited body is sent", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const tk = await createToolkit({ builtins: false })
  const answers = [undefined, null, 0, "", false]
  for (const [i, answer] of answers.entries()) {
    const c = createClient({
      baseUrl: llm.url, style: "openai", model: "m", apiKey: "k",
      bodyTransform(body) {
        body.temperature = 0.5
        body.messages.push({ role: "user", content: "added" })
        delete body.model
        return answer
      },
    })
    await c.run("hi", { toolkit: tk })
    assert.deepStrictEqual(llm.requests[i].json, { messages: [{ role: "user", content: "hi" }, { role: "user", content: "added" }], temperature: 0.5 }, String(answer))
  }
  // Also when it answers later, with a Promise of nothing.
  const later = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", bodyTransform: async (body) => { body.seed = 7 } })
  await later.run("hi", { toolkit: tk })
  assert.deepStrictEqual(llm.requests[answers.length].json, { model: "m", messages: [{ role: "user", content: "hi" }], seed: 7 })
})

test("a tool registered after createToolkit is offered and run by the next run", async (t) => {
  const llm = await startLLM((req) =>
    req.json.messages.some((m) => m.role === "tool")
      ? oaText("used it")
      : { body: { choices: [{ message: { role: "assistant", content: null, tool_calls: [{ id: "r1", type: "function", function: { name: "late_tool", arguments: "{}" } }] } }] } },
  )
  t.after(() => llm.close())
  const tk = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "early", description: "", run: () => "e" })] })
  tk.register(defineTool({ name: "late_tool", description: "added later", run: () => "late output" }))
  const res = await createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" }).run("go", { toolkit: tk })
  assert.deepStrictEqual(llm.requests[0].json.tools.map((x) => x.function.name), ["early", "late_tool"])
  assert.deepStrictEqual(res.toolCalls, [{ name: "late_tool", args: {}, output: "late output", isError: false, metadata: undefined }])
})

test("store, onMetric and onError are accepted as given; malformed ones fail when used, with a TypeError naming the option", async (t) => {
  const base = { baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k" }
  const store = { get: async () => undefined, save: async () => {} }
  const c = createClient({ ...base, store, onMetric: () => {}, onError: () => "fail" })
  assert.equal(c.conversationStore(), store)
  // As in the reference, nothing is refused when the client is made.
  const malformed = [
    ["onMetric", "not a function"],
    ["onMetric", { event: "llm" }],
    ["onError", "retry"],
    ["onError", 42],
    ["store", {}],
    ["store", { get: async () => undefined }],
    ["store", { save: async () => {} }],
    ["store", { get: "nope", save: async () => {} }],
    ["store", "memory"],
  ]
  for (const [key, value] of malformed) {
    assert.doesNotThrow(() => createClient({ ...base, [key]: value }), `${key}: ${JSON.stringify(value)}`)
  }
  // Explicitly undefined is the same as leaving the option out.
  assert.doesNotThrow(() => createClient({ ...base, store: undefined, onMetric: undefined, onError: undefined }))
  // Used, they fail where the reference fails: an onMetric when the first metric is emitted, a
  // store without get() when ask() reads the conversation.
  const llm = await startLLM([oaText("hi")])
  t.after(() => llm.close())
  const tk = await createToolkit({ builtins: false })
  const live = { ...base, baseUrl: llm.url }
  await assert.rejects(createClient({ ...live, onMetric: "not a function" }).run("x", { toolkit: tk }), (e) => e instanceof TypeError && e.message.includes("onMetric"))
  await assert.rejects(createClient({ ...live, store: { save: async () => {} } }).ask("x", { toolkit: tk, id: "c1" }), TypeError)
})
