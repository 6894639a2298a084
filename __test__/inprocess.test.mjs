// SPEC §8 In-process models: createInProcessClient({ model, generate, ...client options }).
import test from "node:test"
import assert from "node:assert/strict"
import { createInProcessClient, createToolkit, defineTool } from "../index.js"
import { runChild, envWithoutKeys } from "./support/llm.mjs"

const schema = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } }
const adder = () => defineTool({ name: "add", description: "add two numbers", inputSchema: schema, run: ({ a, b }) => String(a + b) })
const addDecl = { type: "function", function: { name: "add", description: "add two numbers", parameters: schema } }

test("generate receives { messages, tools, model, body } and its content is the answer", async () => {
  const seen = []
  const c = createInProcessClient({
    model: "local-m",
    systemPrompt: "Be exact.",
    generate: (req) => {
      seen.push(req)
      return { content: "hello there" }
    },
  })
  const res = await c.run("hi", { toolkit: await createToolkit({ builtins: false, extraTools: [adder()] }) })
  const messages = [{ role: "system", content: "Be exact." }, { role: "user", content: "hi" }]
  assert.equal(seen.length, 1)
  assert.deepStrictEqual(Object.keys(seen[0]), ["messages", "tools", "model", "body"])
  assert.deepStrictEqual(seen[0], {
    messages,
    tools: [addDecl],
    model: "local-m",
    body: { model: "local-m", messages, tools: [addDecl], tool_choice: "auto" },
  })
  assert.deepStrictEqual(res, {
    text: "hello there",
    messages: [...messages, { role: "assistant", content: "hello there" }],
    toolCalls: [],
    toolCallCount: 0,
    turns: 1,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    model: "local-m",
    status: "done",
  })
})

test("with an empty toolkit generate gets no tools and a body without tools/tool_choice", async () => {
  let got
  const c = createInProcessClient({ model: "m", generate: async (req) => { got = req; return { content: "ok" } } })
  await c.run("hi", { toolkit: await createToolkit({ builtins: false }) })
  assert.equal(got.tools, undefined)
  assert.deepStrictEqual(got.body, { model: "m", messages: [{ role: "user", content: "hi" }] })
})

test("toolCalls: object arguments are encoded, strings pass through untouched, a missing id is call_<index>", async () => {
  const turns = []
  const received = []
  const tk = await createToolkit({
    extraTools: [
      adder(),
      defineTool({ name: "echo", description: "", run: (a) => { received.push(["echo", a]); return a.text } }),
      defineTool({ name: "noargs", description: "", run: (a) => { received.push(["noargs", a]); return "nothing needed" } }),
    ],
  })
  const c = createInProcessClient({
    model: "m",
    generate: ({ messages }) => {
      turns.push(messages)
      if (turns.length === 1) {
        return {
          toolCalls: [
            { name: "add", arguments: { a: 2, b: 3 } },
            { id: "given-id", name: "echo", arguments: '{"text":   "spaced out"}' },
            { name: "noargs" },
          ],
        }
      }
      return { content: "all three ran" }
    },
  })
  const res = await c.run("go", { toolkit: tk })
  assert.equal(res.text, "all three ran")
  const assistant = {
    role: "assistant",
    tool_calls: [
      { id: "call_0", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } },
      { id: "given-id", type: "function", function: { name: "echo", arguments: '{"text":   "spaced out"}' } },
      { id: "call_2", type: "function", function: { name: "noargs", arguments: "{}" } },
    ],
  }
  assert.deepStrictEqual(turns[1], [
    { role: "user", content: "go" },
    assistant,
    { role: "tool", tool_call_id: "call_0", content: "5" },
    { role: "tool", tool_call_id: "given-id", content: "spaced out" },
    { role: "tool", tool_call_id: "call_2", content: "nothing needed" },
  ])
  assert.deepStrictEqual(res.messages[1], assistant)
  assert.deepStrictEqual(received.sort(), [["echo", { text: "spaced out" }], ["noargs", {}]])
  assert.deepStrictEqual(res.toolCalls.map((r) => [r.name, r.args, r.output]), [
    ["add", { a: 2, b: 3 }, "5"],
    ["echo", { text: "spaced out" }, "spaced out"],
    ["noargs", {}, "nothing needed"],
  ])
})

test("toolCalls win over content; an empty toolCalls list or no content gives a text answer", async () => {
  let n = 0
  const c = createInProcessClient({
    model: "m",
    generate: () => {
      n++
      if (n === 1) return { content: "ignored while calling", toolCalls: [{ id: "x", name: "add", arguments: { a: 1, b: 1 } }] }
      return { content: "two", toolCalls: [] }
    },
  })
  const res = await c.run("1+1", { toolkit: await createToolkit({ extraTools: [adder()] }) })
  assert.deepStrictEqual(res.messages[1], { role: "assistant", tool_calls: [{ id: "x", type: "function", function: { name: "add", arguments: '{"a":1,"b":1}' } }] })
  assert.deepStrictEqual(res.messages.at(-1), { role: "assistant", content: "two" })
  assert.equal(res.text, "two")

  const empty = await createInProcessClient({ model: "m", generate: () => ({}) }).run("?", { toolkit: await createToolkit({}) })
  assert.equal(empty.text, "")
  assert.deepStrictEqual(empty.messages.at(-1), { role: "assistant", content: "" })
  assert.equal(empty.status, "done")
})

test("usage: camelCase fields are mapped, totalTokens defaults to prompt + completion, absent usage is zeros", async () => {
  const answers = [
    { toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }], usage: { promptTokens: 3, completionTokens: 4 } },
    { content: "3", usage: { promptTokens: 1, completionTokens: 1, totalTokens: 10 } },
  ]
  const events = []
  const c = createInProcessClient({ model: "m", generate: () => answers.shift(), onMetric: (ev) => events.push(ev) })
  const res = await c.run("1+2", { toolkit: await createToolkit({ extraTools: [adder()] }) })
  assert.deepStrictEqual(res.usage, { promptTokens: 4, completionTokens: 5, totalTokens: 17 })
  assert.deepStrictEqual(events.filter((e) => e.event === "llm").map((e) => [e.status, e.promptTokens, e.completionTokens]), [["ok", 3, 4], ["ok", 1, 1]])
  const run = events.find((e) => e.event === "run")
  assert.equal(run.totalTokens, 17)

  const none = await createInProcessClient({ model: "m", generate: () => ({ content: "x" }) }).run("q", { toolkit: await createToolkit({}) })
  assert.deepStrictEqual(none.usage, { promptTokens: 0, completionTokens: 0, totalTokens: 0 })
})

test("retries default to 0: a throwing generate is called once and the run rejects with its error", async () => {
  class ModelCrash extends Error {}
  for (const flavour of ["sync", "async"]) {
    const crash = new ModelCrash(`${flavour}: out of memory`)
    let calls = 0
    const c = createInProcessClient({
      model: "m",
      generate: flavour === "sync" ? () => { calls++; throw crash } : async () => { calls++; throw crash },
    })
    const t0 = performance.now()
    await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e === crash)
    assert.equal(calls, 1, flavour)
    assert.ok(performance.now() - t0 < 400, "no backoff before the caller sees the error")
  }
})

test("explicit retries are honoured: a flaky generate recovers, and onError sees each failure", async () => {
  let calls = 0
  const infos = []
  const c = createInProcessClient({
    model: "m",
    retries: 2,
    retryBaseMs: 1,
    onError: (info) => { infos.push(info); return "retry" },
    generate: () => {
      calls++
      if (calls < 3) throw new Error(`GPU hiccup ${calls}`)
      return { content: "recovered" }
    },
  })
  const res = await c.run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "recovered")
  assert.equal(calls, 3)
  assert.deepStrictEqual(infos.map((i) => [i.attempt, i.retryable, i.error instanceof Error, i.error.message]), [
    [0, true, true, "GPU hiccup 1"],
    [1, true, true, "GPU hiccup 2"],
  ])
  // Out of budget: the last error surfaces.
  let n = 0
  const always = createInProcessClient({ model: "m", retries: 1, retryBaseMs: 1, generate: () => { n++; throw new Error(`try ${n}`) } })
  await assert.rejects(always.run("hi", { toolkit: await createToolkit({}) }), (e) => e.message === "try 2")
  assert.equal(n, 2)
})

test("wire options are not used: baseUrl, apiKey, style and fetch given anyway change nothing", async () => {
  let got
  let fetched = 0
  const c = createInProcessClient({
    model: "m",
    style: "anthropic",
    baseUrl: "http://127.0.0.1:9",
    apiKey: "",
    fetch: async () => { fetched++; throw new Error("must not be called") },
    systemPrompt: "sys",
    generate: (req) => { got = req; return { content: "still openai-shaped" } },
  })
  const res = await c.run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "still openai-shaped")
  assert.equal(fetched, 0)
  assert.deepStrictEqual(got.messages, [{ role: "system", content: "sys" }, { role: "user", content: "hi" }])
  assert.deepStrictEqual(res.messages.at(-1), { role: "assistant", content: "still openai-shaped" })
})

test("generate is called as a plain function; hooks, memory and maxTurns work as on any client", async () => {
  const receivers = []
  const turns = []
  const c = createInProcessClient({
    model: "m",
    maxTurns: 1,
    hooks: { beforeLLM: ({ turn }) => { turns.push(turn) } },
    generate: function (req) {
      receivers.push(this)
      return { content: `n=${req.messages.length}` }
    },
  })
  const tk = await createToolkit({})
  await c.ask("one", { toolkit: tk, id: "ip" })
  const second = await c.ask("two", { toolkit: tk, id: "ip" })
  assert.equal(second.text, "n=3")
  assert.deepStrictEqual(await c.conversationStore().get("ip"), second.messages)
  assert.deepStrictEqual(turns, [0, 0])
  assert.deepStrictEqual(receivers, [undefined, undefined])

  const looping = createInProcessClient({ model: "m", maxTurns: 2, generate: () => ({ toolCalls: [{ name: "add", arguments: { a: 0, b: 0 } }] }) })
  const res = await looping.run("loop", { toolkit: await createToolkit({ extraTools: [adder()] }) })
  assert.equal(res.status, "incomplete")
  assert.equal(res.limit, "maxTurns")
  assert.equal(res.turns, 2)
})

test("no API key and no environment variable is needed", async () => {
  const r = await runChild(`
    const { createInProcessClient, createToolkit } = await import(ENTRY)
    const c = createInProcessClient({ model: "offline", generate: ({ messages }) => ({ content: "echo: " + messages.at(-1).content }) })
    const res = await c.run("ping", { toolkit: await createToolkit({}) })
    console.log(JSON.stringify({ text: res.text, keys: ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"].filter((k) => process.env[k]) }))
  `, { env: envWithoutKeys(), timeoutMs: 5000 })
  assert.equal(r.code, 0, r.stderr)
  assert.deepStrictEqual(JSON.parse(r.stdout), { text: "echo: ping", keys: [] })
})

test("a missing or non-function generate throws the documented message", () => {
  const message = "toolnexus: createInProcessClient requires a `generate` function"
  for (const opts of [{ model: "m" }, { model: "m", generate: "not a function" }, { model: "m", generate: { content: "x" } }]) {
    assert.throws(() => createInProcessClient(opts), (e) => e instanceof Error && e.message === message)
  }
})
