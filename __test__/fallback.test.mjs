// Model fallback (this package's addition, issue 44) through the public API: createClient's and
// the runtime's `fallback` entries, against scripted endpoints on 127.0.0.1. The core's own tests
// (crates/core/tests/it/fallback.rs) pin each rule; these pin that the rules reach `run`, `ask`,
// `stream` and the runtime, with the fields `onError` and `onMetric` receive.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool, agents } from "../index.js"
import { startLLM, oaText, anReply, text, toolUse, sse, SSE_DONE, oaDeltaText, closedPort } from "./support/llm.mjs"

const { AgentRuntime, isVerbError } = agents
const quick = { retries: 0, retryBaseMs: 1 }
const clock = async () =>
  createToolkit({ builtins: false, extraTools: [defineTool({ name: "clock", description: "the time", run: () => "noon" })] })

test("run: a 503 primary hands the call to an Anthropic-style entry, the tool round trip continues there, and the next call starts at the primary", async (t) => {
  // The primary fails its first call only; the entry answers that call with a tool call; the
  // second call (after the tool ran) goes to the primary again.
  const primary = await startLLM((_req, i) => (i === 0 ? { status: 503, body: "busy" } : oaText("it is noon")))
  const entry = await startLLM([anReply([toolUse("tu_1", "clock", {})])])
  t.after(() => Promise.all([primary.close(), entry.close()]))
  const errors = []
  const metrics = []
  const c = createClient({
    baseUrl: primary.url, style: "openai", model: "gpt-main", apiKey: "sk-main", ...quick,
    fallback: [{ baseUrl: entry.url, style: "anthropic", model: "claude-spare", apiKey: "an-key" }],
    onError: (info) => { errors.push(info); return info.retryable ? "retry" : "fail" },
    onMetric: (ev) => metrics.push(ev),
  })
  const res = await c.run("what time is it?", { toolkit: await clock() })
  assert.equal(res.status, "done")
  assert.equal(res.text, "it is noon")
  assert.equal(res.model, "gpt-main", "the primary answered the last call")
  assert.deepStrictEqual(res.toolCalls.map((x) => x.name), ["clock"])
  // The entry got an Anthropic request: its path, key, model and the tools in its shape.
  const asked = entry.requests[0]
  assert.equal(asked.path, "/v1/messages")
  assert.equal(asked.headers["x-api-key"], "an-key")
  assert.equal(asked.json.model, "claude-spare")
  assert.deepStrictEqual(asked.json.tools.map((x) => Object.keys(x).sort()), [["description", "input_schema", "name"]])
  // Its tool call entered the transcript in the primary's (OpenAI) style.
  const second = primary.requests[1].json.messages
  assert.equal(second[1].role, "assistant")
  assert.equal(second[1].tool_calls[0].function.name, "clock")
  assert.deepStrictEqual(second[2], { role: "tool", tool_call_id: second[1].tool_calls[0].id, content: "noon" })
  // onError was told which model failed; metrics say which entry answered.
  assert.deepStrictEqual(errors.map((e) => [e.status, e.model, e.fallback]), [[503, "gpt-main", undefined]])
  const llm = metrics.filter((m) => m.event === "llm")
  assert.deepStrictEqual(llm.map((m) => [m.model, m.status, m.fallback]), [
    ["gpt-main", "error", undefined],
    ["claude-spare", "ok", 0],
    ["gpt-main", "ok", undefined],
  ])
})

test("run: the last answering entry names result.model; a refused connection and a 404 each go on to the next entry", async (t) => {
  const missing = await startLLM([{ status: 404, body: { error: { message: "model not found" } } }])
  const last = await startLLM([oaText("from the third")])
  t.after(() => Promise.all([missing.close(), last.close()]))
  const c = createClient({
    baseUrl: `http://127.0.0.1:${await closedPort()}`, style: "openai", model: "m1", apiKey: "k", ...quick,
    fallback: [{ baseUrl: missing.url, model: "m2" }, { baseUrl: last.url, model: "m3" }],
  })
  const res = await c.run("hi", { toolkit: await createToolkit({ builtins: false }) })
  assert.equal(res.text, "from the third")
  assert.equal(res.model, "m3")
  assert.equal(missing.requests.length, 1)
  assert.equal(last.requests[0].headers.authorization, "Bearer k", "an entry without apiKey uses the primary's")
})

test("run: a 400, 401 or 403 fails the run as before and no entry is asked", async (t) => {
  for (const status of [400, 401, 403]) {
    const primary = await startLLM([{ status, body: { error: { message: `no (${status})` } } }])
    const entry = await startLLM([oaText("should not be asked")])
    const c = createClient({ baseUrl: primary.url, style: "openai", model: "m", apiKey: "k", ...quick, fallback: [{ baseUrl: entry.url }] })
    await assert.rejects(c.run("hi", { toolkit: await createToolkit({ builtins: false }) }), (e) => String(e.message).includes(String(status)))
    assert.equal(entry.requests.length, 0, `status ${status}`)
    await Promise.all([primary.close(), entry.close()])
  }
})

test("run: when every entry fails, the last failure is the run's error", async (t) => {
  const a = await startLLM([{ status: 503, body: "a down" }])
  const b = await startLLM([{ status: 502, body: "b down" }])
  t.after(() => Promise.all([a.close(), b.close()]))
  const c = createClient({ baseUrl: a.url, style: "openai", model: "m", apiKey: "k", ...quick, fallback: [{ baseUrl: b.url }] })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({ builtins: false }) }), /502/)
})

test("ask: a conversation keeps going across a fallback (the stored transcript stays in the primary's style)", async (t) => {
  const primary = await startLLM((_req, i) => (i === 0 ? { status: 429, body: "slow down" } : oaText("second answer")))
  const entry = await startLLM([anReply([text("first answer")])])
  t.after(() => Promise.all([primary.close(), entry.close()]))
  const c = createClient({ baseUrl: primary.url, style: "openai", model: "m", apiKey: "k", ...quick, fallback: [{ baseUrl: entry.url, style: "anthropic", model: "c" }] })
  const tk = await createToolkit({ builtins: false })
  const one = await c.ask("first?", { toolkit: tk, id: "conv-1" })
  assert.equal(one.text, "first answer")
  assert.equal(one.model, "c")
  const two = await c.ask("second?", { toolkit: tk, id: "conv-1" })
  assert.equal(two.text, "second answer")
  assert.deepStrictEqual(primary.requests[1].json.messages, [
    { role: "user", content: "first?" },
    { role: "assistant", content: "first answer" },
    { role: "user", content: "second?" },
  ])
})

test("stream: a primary that fails before any delta streams from the entry", async (t) => {
  const primary = await startLLM([{ status: 500, body: "boom" }])
  const entry = await startLLM([{ sse: [sse(oaDeltaText("str")), sse(oaDeltaText("eamed")), SSE_DONE] }])
  t.after(() => Promise.all([primary.close(), entry.close()]))
  const c = createClient({ baseUrl: primary.url, style: "openai", model: "m", apiKey: "k", ...quick, fallback: [{ baseUrl: entry.url, model: "spare" }] })
  let said = ""
  let done
  for await (const ev of c.stream("hi", { toolkit: await createToolkit({ builtins: false }) })) {
    if (ev.type === "text") said += ev.delta
    if (ev.type === "done") done = ev.result
  }
  assert.equal(said, "streamed")
  assert.equal(done.text, "streamed")
  assert.equal(done.model, "spare")
  assert.equal(entry.requests[0].json.stream, true)
})

test("a malformed fallback option is warned about and ignored, never thrown (the reference has no such option)", async (t) => {
  const llm = await startLLM([oaText("fine")])
  t.after(() => llm.close())
  const warned = []
  const original = console.warn
  console.warn = (...a) => warned.push(a.join(" "))
  let c, c2
  try {
    c = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", fallback: "nope" })
    c2 = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", fallback: [42, { model: "x" }] })
    await new Promise((ok) => setTimeout(ok, 50))
  } finally {
    console.warn = original
  }
  assert.deepStrictEqual(warned, [
    "[toolnexus] createClient: `fallback` must be an array of { model, baseUrl, apiKey, style, headers } — ignored",
    "[toolnexus] createClient: `fallback[0]` is not an object — ignored",
  ])
  assert.equal((await c.run("hi", { toolkit: await createToolkit({ builtins: false }) })).text, "fine")
  assert.equal((await c2.run("hi", { toolkit: await createToolkit({ builtins: false }) })).text, "fine")
})

test("runtime: llm.fallback carries an agent's turn to the entry", async (t) => {
  // A 404 (model not found) is not retried, so the turn goes straight on to the entry.
  const primary = await startLLM([{ status: 404, body: { error: { message: "no such model" } } }])
  const entry = await startLLM([anReply([text("runtime answer")])])
  t.after(() => Promise.all([primary.close(), entry.close()]))
  const registry = { helper: { name: "helper", does: "answers", model: "m", tools: [], team: [] } }
  const rt = new AgentRuntime({
    registry,
    llm: { baseUrl: primary.url, style: "openai", apiKey: "k", model: "m", fallback: [{ baseUrl: entry.url, style: "anthropic", model: "c" }] },
  })
  const h = rt.spawn(rt.root, "helper")
  assert.ok(!isVerbError(h), String(h?.error))
  rt.wake(h, "hello")
  const r = await rt.wait(h)
  assert.equal(r.text, "runtime answer")
  assert.equal(primary.requests.length, 1)
  assert.equal(entry.requests.length, 1)
  assert.equal(entry.requests[0].path, "/v1/messages")
  await rt.close(rt.root)
})
