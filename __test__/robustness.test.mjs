// Failure paths: the process must neither crash nor hang, and errors must say what went wrong.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool, pending } from "../index.js"
import { startLLM, oaText, oaCalls, sawToolResult, runChild, envWithoutKeys } from "./support/llm.mjs"

const client = (url, extra = {}) => createClient({ baseUrl: url, style: "openai", model: "m", apiKey: "k", ...extra })
const callThen = (calls, final = "recovered") => (req) => (sawToolResult(req) ? oaText(final) : oaCalls(calls))

/** Resolve `promise` or fail after `ms` — an upper bound only, never a lower one. */
function within(ms, promise, what) {
  let timer
  const limit = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms}ms`)), ms) })
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

test("a defineTool run throwing non-Errors: error results, the run goes on", async (t) => {
  const llm = await startLLM(callThen([{ id: "a", name: "str", args: {} }, { id: "b", name: "num", args: {} }, { id: "c", name: "obj", args: {} }]))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [
    defineTool({ name: "str", description: "", run: () => { throw "plain string" } }),
    defineTool({ name: "num", description: "", run: () => { throw 503 } }),
    defineTool({ name: "obj", description: "", run: async () => { throw { reason: "x" } } }),
  ] })
  const res = await client(llm.url).run("go", { toolkit: tk })
  assert.equal(res.status, "done")
  assert.deepStrictEqual(res.toolCalls.map((c) => [c.output, c.isError]), [["plain string", true], ["503", true], ["[object Object]", true]])
})

test("a defineTool run returning an unserialisable value gives an error result, not a rejection", async () => {
  // Like the reference, a JSON encoding failure is caught inside execute() like any other throw.
  const circular = { name: "loop" }
  circular.self = circular
  const refuses = { toJSON() { throw new Error("not encodable") } }
  for (const value of [circular, 10n, refuses]) {
    let expected
    try { JSON.stringify(value) } catch (e) { expected = e.message }
    const t = defineTool({ name: "bad_value", description: "", run: () => value })
    assert.deepStrictEqual(await t.execute({}), { output: expected, isError: true })
  }
})

test("a hand-written Tool whose execute throws (sync or async) rejects the run with that error", async (t) => {
  const llm = await startLLM(callThen([{ id: "z", name: "fragile", args: {} }]))
  t.after(() => llm.close())
  class ToolCrash extends Error {}
  for (const flavour of ["sync", "async"]) {
    const err = new ToolCrash(`${flavour} crash`)
    const fragile = { name: "fragile", description: "", inputSchema: { type: "object" }, source: "custom", execute: flavour === "sync" ? () => { throw err } : async () => { throw err } }
    const tk = await createToolkit({ extraTools: [fragile] })
    await assert.rejects(client(llm.url).run("go", { toolkit: tk }), (e) => e === err && e instanceof ToolCrash)
  }
})

test("a waitFor that rejects rejects the run with that error", async (t) => {
  const llm = await startLLM(callThen([{ id: "w", name: "needs", args: {} }]))
  t.after(() => llm.close())
  const err = new RangeError("approval service unreachable")
  const tk = await createToolkit({ extraTools: [defineTool({ name: "needs", description: "", run: () => pending({ kind: "approval", prompt: "?" }) })] })
  await assert.rejects(client(llm.url, { waitFor: async () => { throw err } }).run("go", { toolkit: tk }), (e) => e === err)
  await assert.rejects(client(llm.url, { waitFor: () => { throw err } }).run("go", { toolkit: tk }), (e) => e === err)
})

test("endpoint 500 with retries: 0 rejects with LLM 500: <body>", async (t) => {
  const llm = await startLLM([{ status: 500, body: "internal meltdown" }])
  t.after(() => llm.close())
  await assert.rejects(client(llm.url, { retries: 0 }).run("hi", { toolkit: await createToolkit({}) }), (e) => e instanceof Error && e.message === "LLM 500: internal meltdown")
  assert.equal(llm.requests.length, 1)
})

test("a 2xx body that is not JSON rejects with an Error", async (t) => {
  const llm = await startLLM([{ status: 200, body: "<html>gateway</html>" }])
  t.after(() => llm.close())
  await assert.rejects(client(llm.url).run("hi", { toolkit: await createToolkit({}) }), (e) => e instanceof Error && /JSON/.test(e.message))
})

test("a JSON reply without choices rejects with an Error", async (t) => {
  const llm = await startLLM([{ status: 200, body: { error: { message: "quota" } } }])
  t.after(() => llm.close())
  await assert.rejects(client(llm.url).run("hi", { toolkit: await createToolkit({}) }), Error)
})

test("nothing listening: the run rejects (no crash, no hang)", { timeout: 5000 }, async () => {
  const llm = await startLLM([oaText("x")])
  const url = llm.url
  await llm.close()
  await assert.rejects(client(url, { retries: 1, retryBaseMs: 1 }).run("hi", { toolkit: await createToolkit({}) }), Error)
})

test("an unknown tool name is an error result and the run continues", async (t) => {
  const llm = await startLLM(callThen([{ id: "u1", name: "made_up_tool", args: { a: 1 } }], "sorry"))
  t.after(() => llm.close())
  const res = await client(llm.url).run("go", { toolkit: await createToolkit({ extraTools: [defineTool({ name: "real", description: "", run: () => "" })] }) })
  assert.equal(res.status, "done")
  assert.equal(res.text, "sorry")
  assert.deepStrictEqual(res.toolCalls, [{ name: "made_up_tool", args: { a: 1 }, output: "Unknown tool: made_up_tool", isError: true, metadata: undefined }])
  assert.deepStrictEqual(llm.requests[1].json.messages.at(-1), { role: "tool", tool_call_id: "u1", content: "Unknown tool: made_up_tool" })
})

test("broken or empty argument JSON becomes {}", async (t) => {
  const llm = await startLLM(callThen([{ id: "b1", name: "echo", args: '{"city": "Par' }, { id: "b2", name: "echo", args: "" }]))
  t.after(() => llm.close())
  const got = []
  const tk = await createToolkit({ extraTools: [defineTool({ name: "echo", description: "", run: (a) => { got.push(a); return JSON.stringify(a) } })] })
  const res = await client(llm.url).run("go", { toolkit: tk })
  assert.deepStrictEqual(got, [{}, {}])
  assert.deepStrictEqual(res.toolCalls.map((c) => c.args), [{}, {}])
})

test("an already-aborted signal rejects with its reason before any request", async (t) => {
  const llm = await startLLM([oaText("never")])
  t.after(() => llm.close())
  const reason = new Error("user pressed stop")
  const ac = new AbortController()
  ac.abort(reason)
  await assert.rejects(client(llm.url).run("hi", { toolkit: await createToolkit({}), signal: ac.signal }), (e) => e === reason)
  const plain = AbortSignal.abort()
  await assert.rejects(client(llm.url).run("hi", { toolkit: await createToolkit({}), signal: plain }), (e) => e === plain.reason && e.name === "AbortError")
  assert.equal(llm.requests.length, 0)
})

test("aborting mid-request against a silent endpoint rejects promptly with the reason", { timeout: 10_000 }, async (t) => {
  const llm = await startLLM(() => ({ hang: true }))
  t.after(() => llm.close())
  const ac = new AbortController()
  const reason = new Error("cancelled by caller")
  const run = client(llm.url).run("hi", { toolkit: await createToolkit({}), signal: ac.signal })
  // Abort once the request has reached the server.
  while (llm.requests.length === 0) await new Promise((r) => setTimeout(r, 5))
  ac.abort(reason)
  await within(5000, assert.rejects(run, (e) => e === reason), "the aborted run")
  await within(5000, llm.requests[0].closed, "closing the aborted request")
})

test("aborting while a tool is still running rejects promptly with the reason", { timeout: 10_000 }, async (t) => {
  const llm = await startLLM(callThen([{ id: "s", name: "slow", args: {} }]))
  t.after(() => llm.close())
  const ac = new AbortController()
  const reason = new Error("stop the slow tool")
  const slow = defineTool({ name: "slow", description: "", run: () => { ac.abort(reason); return new Promise(() => {}) } })
  const run = client(llm.url).run("go", { toolkit: await createToolkit({ extraTools: [slow] }), signal: ac.signal })
  await within(5000, assert.rejects(run, (e) => e === reason), "the aborted run")
})

test("timeoutMs in-process: rejects and drops the in-flight request", { timeout: 10_000 }, async (t) => {
  const llm = await startLLM(() => ({ hang: true }))
  t.after(() => llm.close())
  const c = client(llm.url, { timeoutMs: 100, retries: 5 })
  await within(5000, assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e instanceof Error && e.message === "run timeout after 100ms"), "the timed-out run")
  await within(5000, llm.requests[0].closed, "closing the timed-out request")
  assert.equal(llm.requests.length, 1, "a timeout is not retried")
})

test("timeoutMs against a silent endpoint rejects, and the process still exits by itself", async (t) => {
  const llm = await startLLM(() => ({ hang: true }))
  t.after(() => llm.close())
  const r = await runChild(`
    const { createClient, createToolkit } = await import(ENTRY)
    const c = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k", timeoutMs: 100 })
    try {
      await c.run("hi", { toolkit: await createToolkit({}) })
      console.log("resolved")
    } catch (e) {
      console.log("rejected: " + (e instanceof Error) + " " + e.message)
    }
  `, { timeoutMs: 5000 })
  assert.equal(r.timedOut, false, `the child did not exit on its own (stdout: ${r.stdout}, stderr: ${r.stderr})`)
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), "rejected: true run timeout after 100ms")
  assert.equal(llm.requests.length, 1)
})

test("a run in flight keeps the process alive until it settles", async (t) => {
  const llm = await startLLM(async () => { await new Promise((r) => setTimeout(r, 300)); return oaText("worth the wait") })
  t.after(() => llm.close())
  const r = await runChild(`
    const { createClient, createToolkit } = await import(ENTRY)
    const c = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k" })
    const res = await c.run("hi", { toolkit: await createToolkit({}) })
    console.log(res.text)
  `, { timeoutMs: 5000 })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "worth the wait\n")
})

test("tools still pending when the run fails settle later without crashing the process", async (t) => {
  const llm = await startLLM(callThen([{ id: "a", name: "fast_fail", args: {} }, { id: "b", name: "late_fail", args: {} }, { id: "c", name: "late_ok", args: {} }]))
  t.after(() => llm.close())
  const r = await runChild(`
    const { createClient, createToolkit } = await import(ENTRY)
    const mk = (name, execute) => ({ name, description: "", inputSchema: { type: "object" }, source: "custom", execute })
    const tk = await createToolkit({ extraTools: [
      mk("fast_fail", async () => { throw new Error("fast failure") }),
      mk("late_fail", () => new Promise((_, reject) => setTimeout(() => reject(new Error("late failure")), 100))),
      mk("late_ok", () => new Promise((resolve) => setTimeout(() => resolve({ output: "late", isError: false }), 100))),
    ] })
    const c = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k" })
    try { await c.run("go", { toolkit: tk }) } catch (e) { console.log("rejected: " + e.message) }
    await new Promise((r) => setTimeout(r, 300))
    console.log("alive")
  `, { timeoutMs: 5000 })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "rejected: fast failure\nalive\n")
})

test("a client that is never used does not keep the process alive", async () => {
  const r = await runChild(`
    const { createClient, createToolkit, defineTool } = await import(ENTRY)
    createClient({ baseUrl: "http://127.0.0.1:9", style: "anthropic", model: "m", apiKey: "k", waitFor: async () => ({ id: "x", ok: true }), hooks: { beforeLLM() {} } })
    await createToolkit({ extraTools: [defineTool({ name: "t", description: "", run: () => "" })] })
    console.log("done")
  `, { timeoutMs: 5000 })
  assert.equal(r.timedOut, false)
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "done\n")
})

test("createClient accepts the options the reference accepts; only a null options object throws", () => {
  const base = { baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k" }
  const cases = [
    [{ ...base, baseUrl: undefined }, "baseUrl"],
    [{ ...base, baseUrl: "" }, "baseUrl"],
    [{ ...base, baseUrl: 42 }, "baseUrl"],
    [{ ...base, style: "gemini" }, "style"],
    [{ ...base, style: undefined }, "style"],
    [{ ...base, model: undefined }, "model"],
    [{ ...base, waitFor: "later" }, "waitFor"],
    [{ ...base, waitFor: {} }, "waitFor"],
    [{ ...base, headers: "X-A: 1" }, "headers"],
    [{ ...base, headers: 5 }, "headers"],
    [{ ...base, fetch: "https://proxy" }, "fetch"],
    [{ ...base, maxTurns: -1 }, "maxTurns"],
    [{ ...base, retries: "3" }, "retries"],
  ]
  for (const [opts, name] of cases) {
    assert.doesNotThrow(() => createClient(opts), `${name}: ${JSON.stringify(opts)}`)
  }
  assert.throws(() => createClient(null), TypeError)
  assert.doesNotThrow(() => createClient({ ...base, headers: { "X-Num": 1 } }))
})

test("run without a Toolkit is a TypeError", async () => {
  const c = client("http://x.invalid")
  await assert.rejects(c.run("hi", {}), TypeError)
  await assert.rejects(c.run("hi", { toolkit: { tools: () => [] } }), TypeError)
})

test("no API key anywhere rejects the run with the documented message", async (t) => {
  const llm = await startLLM([oaText("never")])
  t.after(() => llm.close())
  const r = await runChild(`
    const { createClient, createToolkit } = await import(ENTRY)
    for (const style of ["openai", "anthropic"]) {
      const c = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style, model: "m" })
      try {
        await c.run("hi", { toolkit: await createToolkit({}) })
        console.log(style + ": resolved")
      } catch (e) {
        console.log(style + ": " + e.message)
      }
    }
  `, { env: envWithoutKeys(), timeoutMs: 5000 })
  assert.equal(r.code, 0, r.stderr)
  const msg = "No API key: set apiKey or OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY"
  assert.equal(r.stdout, `openai: ${msg}\nanthropic: ${msg}\n`)
  assert.equal(llm.requests.length, 0)
})

test("an empty apiKey falls back to the environment", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const r = await runChild(`
    const { createClient, createToolkit } = await import(ENTRY)
    const c = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "anthropic", model: "m", apiKey: "" })
    console.log((await c.run("hi", { toolkit: await createToolkit({}) })).text)
  `, { env: { ...envWithoutKeys(), ANTHROPIC_API_KEY: "ant-env" }, timeoutMs: 5000 })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(llm.requests[0].headers["x-api-key"], "ant-env")
})
