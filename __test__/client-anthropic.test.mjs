// SPEC §8, anthropic style, against a real local endpoint.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, anReply, text, toolUse } from "./support/llm.mjs"

const client = (base, extra = {}) => createClient({ baseUrl: base, style: "anthropic", model: "claude-test", apiKey: "ak-local", ...extra })
const hasToolResult = (req) => req.json.messages.some((m) => Array.isArray(m.content) && m.content.some((b) => b.type === "tool_result"))

test("endpoint: /v1/messages appended to a bare base, only /messages after a /v1 base", async (t) => {
  const llm = await startLLM([anReply([text("ok")])])
  t.after(() => llm.close())
  const tk = await createToolkit({})
  await client(llm.url).run("a", { toolkit: tk })
  await client(`${llm.url}/`).run("b", { toolkit: tk })
  await client(`${llm.url}/v1`).run("c", { toolkit: tk })
  await client(`${llm.url}/proxy/v1/`).run("d", { toolkit: tk })
  assert.deepStrictEqual(llm.requests.map((r) => r.path), ["/v1/messages", "/v1/messages", "/v1/messages", "/proxy/v1/messages"])
})

test("headers: x-api-key, anthropic-version, content-type; no Authorization", async (t) => {
  const llm = await startLLM([anReply([text("ok")])])
  t.after(() => llm.close())
  await client(llm.url).run("hi", { toolkit: await createToolkit({}) })
  const h = llm.requests[0].headers
  assert.equal(h["x-api-key"], "ak-local")
  assert.equal(h["anthropic-version"], "2023-06-01")
  assert.match(h["content-type"], /^application\/json/)
  assert.equal(h.authorization, undefined)
})

test("custom headers override anthropic-version and add new ones", async (t) => {
  const llm = await startLLM([anReply([text("ok")])])
  t.after(() => llm.close())
  await client(llm.url, { headers: { "anthropic-version": "2099-01-01", "anthropic-beta": "tools-x" } }).run("hi", { toolkit: await createToolkit({}) })
  const h = llm.requests[0].headers
  assert.equal(h["anthropic-version"], "2099-01-01")
  assert.equal(h["anthropic-beta"], "tools-x")
})

test("body: model, max_tokens 4096, system, messages, tools", async (t) => {
  const llm = await startLLM([anReply([text("ok")])])
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "lookup", description: "Look up", run: () => "" })] })
  await client(llm.url, { systemPrompt: "Answer in French." }).run("bonjour", { toolkit: tk })
  const body = llm.requests[0].json
  assert.deepStrictEqual(Object.keys(body), ["model", "max_tokens", "system", "messages", "tools"])
  assert.equal(body.model, "claude-test")
  assert.equal(body.max_tokens, 4096)
  assert.equal(body.system, "Answer in French.")
  assert.deepStrictEqual(body.messages, [{ role: "user", content: "bonjour" }])
  assert.deepStrictEqual(body.tools, tk.toAnthropic())
})

test("body: system is an empty string without a system prompt, no tools key with no tools", async (t) => {
  const llm = await startLLM([anReply([text("ok")])])
  t.after(() => llm.close())
  await client(llm.url).run("hi", { toolkit: await createToolkit({ builtins: false }) })
  const body = llm.requests[0].json
  assert.deepStrictEqual(Object.keys(body), ["model", "max_tokens", "system", "messages"])
  assert.equal(body.system, "")
})

test("history is prefixed; the system prompt stays in the system field", async (t) => {
  const llm = await startLLM([anReply([text("ok")])])
  t.after(() => llm.close())
  const history = [{ role: "user", content: "earlier" }, { role: "assistant", content: [{ type: "text", text: "noted" }] }]
  await client(llm.url, { systemPrompt: "sys" }).run("now", { toolkit: await createToolkit({}), history })
  const body = llm.requests[0].json
  assert.deepStrictEqual(body.messages, [...history, { role: "user", content: "now" }])
  assert.equal(body.system, "sys")
})

test("tool_use blocks run concurrently; results merge into ONE user message with is_error", { timeout: 5000 }, async (t) => {
  const llm = await startLLM((req) =>
    hasToolResult(req)
      ? anReply([text("Stock: "), text("3 left, "), { type: "thinking", thinking: "hidden" }, text("order placed.")], { input_tokens: 40, output_tokens: 9 })
      : anReply(
          [text("Let me check."), toolUse("tu_1", "stock", { sku: "A-1" }), toolUse("tu_2", "order", { sku: "A-1", qty: 99 })],
          { input_tokens: 25, output_tokens: 12 },
        ),
  )
  t.after(() => llm.close())
  let release
  const stockGate = new Promise((r) => (release = r))
  const stock = defineTool({ name: "stock", description: "", run: async ({ sku }) => { await stockGate; return `3 of ${sku}` } })
  const order = defineTool({ name: "order", description: "", run: ({ qty }) => { release(); throw new Error(`cannot order ${qty}`) } })
  const tk = await createToolkit({ extraTools: [stock, order] })
  const res = await client(llm.url).run("buy A-1", { toolkit: tk })

  const sent = llm.requests[1].json.messages
  assert.equal(sent.length, 3)
  assert.deepStrictEqual(sent[1], {
    role: "assistant",
    content: [text("Let me check."), toolUse("tu_1", "stock", { sku: "A-1" }), toolUse("tu_2", "order", { sku: "A-1", qty: 99 })],
  })
  assert.deepStrictEqual(sent[2], {
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: "tu_1", content: "3 of A-1", is_error: false },
      { type: "tool_result", tool_use_id: "tu_2", content: "cannot order 99", is_error: true },
    ],
  })
  assert.equal(res.text, "Stock: 3 left, order placed.")
  assert.equal(res.status, "done")
  assert.equal(res.turns, 2)
  assert.deepStrictEqual(res.usage, { promptTokens: 65, completionTokens: 21, totalTokens: 86 })
  assert.deepStrictEqual(res.toolCalls, [
    { name: "stock", args: { sku: "A-1" }, output: "3 of A-1", isError: false, metadata: undefined },
    { name: "order", args: { sku: "A-1", qty: 99 }, output: "cannot order 99", isError: true, metadata: undefined },
  ])
  assert.equal(res.messages.length, 4)
  assert.equal(res.messages[3].role, "assistant")
})

test("a tool_use without input gets empty args", async (t) => {
  const llm = await startLLM((req) => (hasToolResult(req) ? anReply([text("ok")]) : anReply([{ type: "tool_use", id: "t1", name: "noargs" }])))
  t.after(() => llm.close())
  let got
  const tk = await createToolkit({ extraTools: [defineTool({ name: "noargs", description: "", run: (a) => { got = a; return "x" } })] })
  await client(llm.url).run("go", { toolkit: tk })
  assert.deepStrictEqual(got, {})
})

test("maxTurns exhausted: incomplete with an empty text", async (t) => {
  let n = 0
  const llm = await startLLM(() => anReply([text("thinking aloud"), toolUse(`t${++n}`, "spin", {})], { input_tokens: 1, output_tokens: 2 }))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "spin", description: "", run: () => "again" })] })
  const res = await client(llm.url, { maxTurns: 2 }).run("go", { toolkit: tk })
  assert.equal(res.status, "incomplete")
  assert.equal(res.limit, "maxTurns")
  assert.equal(res.text, "")
  assert.equal(res.turns, 2)
  assert.deepStrictEqual(res.usage, { promptTokens: 2, completionTokens: 4, totalTokens: 6 })
})
