// SPEC §8, openai style, against a real local endpoint.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls, sawToolResult } from "./support/llm.mjs"

const client = (llm, extra = {}) => createClient({ baseUrl: llm.url, style: "openai", model: "gpt-test", apiKey: "sk-local", ...extra })

test("request: path, auth and content-type headers, body key order", async (t) => {
  const llm = await startLLM([oaText("fine")])
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "clock", description: "time", run: () => "noon" })] })
  const res = await client(llm).run("what time is it?", { toolkit: tk })
  assert.equal(res.text, "fine")
  assert.equal(llm.requests.length, 1)
  const req = llm.requests[0]
  assert.equal(req.method, "POST")
  assert.equal(req.path, "/chat/completions")
  assert.equal(req.headers.authorization, "Bearer sk-local")
  assert.match(req.headers["content-type"], /^application\/json/)
  assert.deepStrictEqual(Object.keys(req.json), ["model", "messages", "tools", "tool_choice"])
  assert.equal(req.json.model, "gpt-test")
  assert.deepStrictEqual(req.json.messages, [{ role: "user", content: "what time is it?" }])
  assert.deepStrictEqual(req.json.tools, tk.toOpenAI())
  assert.equal(req.json.tool_choice, "auto")
})

test("request: a trailing slash on baseUrl is not doubled", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const c = createClient({ baseUrl: `${llm.url}/api/v1/`, style: "openai", model: "m", apiKey: "k" })
  await c.run("hi", { toolkit: await createToolkit({}) })
  assert.equal(llm.requests[0].path, "/api/v1/chat/completions")
})

test("request: an empty toolkit sends neither tools nor tool_choice", async (t) => {
  const llm = await startLLM([oaText("hello")])
  t.after(() => llm.close())
  await client(llm).run("hi", { toolkit: await createToolkit({ builtins: false }) })
  assert.deepStrictEqual(Object.keys(llm.requests[0].json), ["model", "messages"])
})

test("systemPrompt becomes the first message", async (t) => {
  const llm = await startLLM([oaText("ahoy")])
  t.after(() => llm.close())
  const res = await client(llm, { systemPrompt: "You are a pirate." }).run("greet me", { toolkit: await createToolkit({}) })
  assert.deepStrictEqual(llm.requests[0].json.messages, [
    { role: "system", content: "You are a pirate." },
    { role: "user", content: "greet me" },
  ])
  assert.deepStrictEqual(res.messages.slice(0, 2), llm.requests[0].json.messages)
})

test("history seeds the transcript; no system message is added to a non-empty history", async (t) => {
  const llm = await startLLM([oaText("it was 4")])
  t.after(() => llm.close())
  const history = [
    { role: "user", content: "what is 2+2?" },
    { role: "assistant", content: "4" },
  ]
  const res = await client(llm, { systemPrompt: "be brief" }).run("and what was it?", { toolkit: await createToolkit({}), history })
  assert.deepStrictEqual(llm.requests[0].json.messages, [...history, { role: "user", content: "and what was it?" }])
  assert.equal(res.messages.length, 4)
  assert.deepStrictEqual(res.messages[3], { role: "assistant", content: "it was 4" })
  assert.equal(history.length, 2, "the caller's array is not mutated")
})

test("an empty history still gets the system prompt", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  await client(llm, { systemPrompt: "sys" }).run("hi", { toolkit: await createToolkit({}), history: [] })
  assert.equal(llm.requests[0].json.messages[0].role, "system")
})

test("a tool call round trip: tool message shape, records, usage, turns", async (t) => {
  const llm = await startLLM((req) =>
    sawToolResult(req)
      ? oaText("Paris is 18C.", { prompt_tokens: 20, completion_tokens: 5 })
      : oaCalls([{ id: "call_w1", name: "weather", args: { city: "Paris" } }], { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 }),
  )
  t.after(() => llm.close())
  const runs = []
  const weather = defineTool({ name: "weather", description: "Weather by city", run: (args) => { runs.push(args); return `18C in ${args.city}` } })
  const tk = await createToolkit({ extraTools: [weather] })
  const res = await client(llm).run("weather in Paris?", { toolkit: tk })

  assert.deepStrictEqual(runs, [{ city: "Paris" }])
  assert.equal(llm.requests.length, 2)
  const second = llm.requests[1].json.messages
  assert.deepStrictEqual(second[0], { role: "user", content: "weather in Paris?" })
  assert.equal(second[1].role, "assistant")
  assert.equal(second[1].tool_calls[0].id, "call_w1")
  assert.deepStrictEqual(second[2], { role: "tool", tool_call_id: "call_w1", content: "18C in Paris" })
  assert.deepStrictEqual(Object.keys(second[2]), ["role", "tool_call_id", "content"])

  assert.equal(res.text, "Paris is 18C.")
  assert.equal(res.status, "done")
  assert.equal(res.turns, 2)
  assert.equal(res.toolCallCount, 1)
  assert.deepStrictEqual(res.toolCalls, [{ name: "weather", args: { city: "Paris" }, output: "18C in Paris", isError: false, metadata: undefined }])
  // total_tokens is used when given, else prompt + completion.
  assert.deepStrictEqual(res.usage, { promptTokens: 30, completionTokens: 8, totalTokens: 38 })
  assert.equal(res.model, "gpt-test")
  assert.equal(res.pending, undefined)
  assert.equal(res.limit, undefined)
  assert.deepStrictEqual(Object.keys(res), ["text", "messages", "toolCalls", "toolCallCount", "turns", "usage", "model", "status"])
  // The transcript keeps the provider's null content; the wire carried "" for it (COMPAT).
  assert.equal(second[1].content, "")
  assert.equal(res.messages[1].content, null)
  assert.deepStrictEqual(res.messages, [second[0], { ...second[1], content: null }, ...second.slice(2), { role: "assistant", content: "Paris is 18C." }])
})

test("no usage in the replies gives zero usage", async (t) => {
  const llm = await startLLM([oaText("x")])
  t.after(() => llm.close())
  const res = await client(llm).run("hi", { toolkit: await createToolkit({}) })
  assert.deepStrictEqual(res.usage, { promptTokens: 0, completionTokens: 0, totalTokens: 0 })
  assert.equal(res.turns, 1)
  assert.equal(res.toolCallCount, 0)
  assert.deepStrictEqual(res.toolCalls, [])
})

test("tool metadata is carried on the record", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("done") : oaCalls([{ id: "c", name: "meta", args: {} }])))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "meta", description: "", run: () => ({ output: "o", isError: false, metadata: { rows: 3 } }) })] })
  const res = await client(llm).run("go", { toolkit: tk })
  assert.deepStrictEqual(res.toolCalls, [{ name: "meta", args: {}, output: "o", isError: false, metadata: { rows: 3 } }])
})

test("parallel tool calls in one turn run concurrently and are recorded in call order", { timeout: 5000 }, async (t) => {
  const llm = await startLLM((req) =>
    sawToolResult(req)
      ? oaText("both done")
      : oaCalls([
          { id: "c_wait", name: "waiter", args: { n: 1 } },
          { id: "c_open", name: "opener", args: { n: 2 } },
        ]),
  )
  t.after(() => llm.close())
  let openGate
  const gate = new Promise((resolve) => (openGate = resolve))
  const order = []
  // `waiter` can only finish once `opener` has run: sequential execution would deadlock.
  const waiter = defineTool({ name: "waiter", description: "", run: async () => { order.push("waiter:start"); const v = await gate; order.push("waiter:end"); return `waited for ${v}` } })
  const opener = defineTool({ name: "opener", description: "", run: async () => { order.push("opener"); openGate("opener"); return "opened" } })
  const tk = await createToolkit({ extraTools: [waiter, opener] })
  const res = await client(llm).run("do both", { toolkit: tk })
  assert.deepStrictEqual(order, ["waiter:start", "opener", "waiter:end"])
  assert.deepStrictEqual(res.toolCalls.map((c) => [c.name, c.output]), [["waiter", "waited for opener"], ["opener", "opened"]])
  const tools = llm.requests[1].json.messages.filter((m) => m.role === "tool")
  assert.deepStrictEqual(tools.map((m) => m.tool_call_id), ["c_wait", "c_open"])
  assert.equal(res.toolCallCount, 2)
  assert.equal(res.turns, 2)
})

test("a class-based Tool is run by the loop with this bound to the instance", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("ok") : oaCalls([{ id: "k1", name: "kv_get", args: { key: "color" } }])))
  t.after(() => llm.close())
  class KvTool {
    constructor(store) { this.store = store; this.name = "kv_get"; this.description = "read a key"; this.inputSchema = { type: "object", properties: { key: { type: "string" } } }; this.source = "custom" }
    async execute(args) { return { output: String(this.store.get(args.key)), isError: false } }
  }
  const tk = await createToolkit({ extraTools: [new KvTool(new Map([["color", "teal"]]))] })
  const res = await client(llm).run("color?", { toolkit: tk })
  assert.deepStrictEqual(res.toolCalls, [{ name: "kv_get", args: { key: "color" }, output: "teal", isError: false, metadata: undefined }])
})

test("maxTurns exhausted with no final text: status incomplete, limit maxTurns", async (t) => {
  let n = 0
  const llm = await startLLM(() => oaCalls([{ id: `c${++n}`, name: "again", args: {} }], { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "again", description: "", run: () => "more" })] })
  const res = await client(llm, { maxTurns: 3 }).run("loop", { toolkit: tk })
  assert.equal(res.status, "incomplete")
  assert.equal(res.limit, "maxTurns")
  assert.equal(res.text, "")
  assert.equal(res.turns, 3)
  assert.equal(llm.requests.length, 3)
  assert.equal(res.toolCallCount, 3)
  assert.deepStrictEqual(res.usage, { promptTokens: 3, completionTokens: 3, totalTokens: 6 })
  assert.equal(res.pending, undefined)
})

test("maxTurns exhausted but the assistant did say something: done with that text", async (t) => {
  const llm = await startLLM(() => oaCalls([{ id: "c", name: "again", args: {} }], undefined, "still working"))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "again", description: "", run: () => "more" })] })
  const res = await client(llm, { maxTurns: 2 }).run("loop", { toolkit: tk })
  assert.equal(res.status, "done")
  assert.equal(res.text, "still working")
  assert.equal(res.limit, undefined)
})

test("custom headers are added and override the client's own of the same name", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const c = client(llm, { headers: { Authorization: "Bearer from-header", "X-Trace-Id": "trace-9", "HTTP-Referer": "https://app.test" } })
  await c.run("hi", { toolkit: await createToolkit({}) })
  const h = llm.requests[0].headers
  assert.equal(h.authorization, "Bearer from-header")
  assert.equal(h["x-trace-id"], "trace-9")
  assert.equal(h["http-referer"], "https://app.test")
})

test("the API key can come from the environment", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const saved = process.env.OPENROUTER_API_KEY
  process.env.OPENROUTER_API_KEY = "or-from-env"
  t.after(() => { if (saved === undefined) delete process.env.OPENROUTER_API_KEY; else process.env.OPENROUTER_API_KEY = saved })
  await createClient({ baseUrl: llm.url, style: "openai", model: "m" }).run("hi", { toolkit: await createToolkit({}) })
  assert.equal(llm.requests[0].headers.authorization, "Bearer or-from-env")
})

test("one client serves concurrent runs independently", async (t) => {
  const llm = await startLLM((req) => oaText(`echo:${req.json.messages.at(-1).content}`))
  t.after(() => llm.close())
  const c = client(llm)
  const tk = await createToolkit({})
  const results = await Promise.all(["a", "b", "c", "d"].map((p) => c.run(p, { toolkit: tk })))
  assert.deepStrictEqual(results.map((r) => r.text), ["echo:a", "echo:b", "echo:c", "echo:d"])
})

test("the assistant message is kept verbatim in the transcript, extra provider fields included", async (t) => {
  const assistant = {
    role: "assistant",
    content: null,
    refusal: null,
    reasoning: "need the tool",
    tool_calls: [{ id: "v1", type: "function", function: { name: "noop", arguments: "{}" } }],
  }
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("ok") : { body: { choices: [{ index: 0, message: assistant, finish_reason: "tool_calls" }] } }))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "noop", description: "", run: () => "" })] })
  const res = await client(llm).run("go", { toolkit: tk })
  // On the wire the null content of a turn of tool calls is "" (llama-cpp-python refuses null; COMPAT).
  assert.deepStrictEqual(llm.requests[1].json.messages[1], { ...assistant, content: "" })
  assert.deepStrictEqual(res.messages[1], assistant)
  assert.deepStrictEqual(Object.keys(llm.requests[1].json.messages[1]), Object.keys(assistant))
})

test("unicode and large payloads cross the wire intact", async (t) => {
  const big = "ü€😀".repeat(150_000) // well over 1 MB of UTF-8
  const prompt = "naïve 東京 🚀 \"quoted\" \\ back\\slash \n newline"
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("réponse: ✓ 完了") : oaCalls([{ id: "u", name: "big", args: { note: "é😀" } }])))
  t.after(() => llm.close())
  let got
  const tk = await createToolkit({ extraTools: [defineTool({ name: "big", description: "", run: (a) => { got = a; return big } })] })
  const res = await client(llm).run(prompt, { toolkit: tk })
  assert.equal(llm.requests[0].json.messages[0].content, prompt)
  assert.deepStrictEqual(got, { note: "é😀" })
  assert.equal(llm.requests[1].json.messages.at(-1).content, big)
  assert.equal(res.toolCalls[0].output, big)
  assert.equal(res.text, "réponse: ✓ 完了")
})
