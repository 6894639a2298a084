// Where a program written for the TypeScript library must see no difference: what it accepts
// (nothing thrown where the reference accepted it), where its warnings go, what a user fetch
// is given, which objects it gets back, and values JSON cannot carry.

import test, { after } from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool, pending, pendingOf, toOpenAI, toAnthropic, toGemini } from "../index.js"
import { startLLM, oaText, oaCalls, runChild, deferred, within } from "./support/llm.mjs"

const tk = (extraTools = []) => createToolkit({ builtins: { disabled: true }, extraTools })

// ---- accepted where the reference accepts ---------------------------------------------------

test("defineTool without a run function is accepted and fails only when executed", async () => {
  const t = defineTool({ name: "later", description: "no run yet" })
  assert.equal(t.name, "later")
  const r = await t.execute({})
  assert.equal(r.isError, true)
  assert.match(r.output, /later/)
  assert.match(r.output, /run/)
  // The (opts, fn) form of the reference's own tests: accepted, fails only if executed.
  const two = defineTool({ name: "two", description: "d" }, () => "ignored")
  assert.equal((await two.execute({})).isError, true)
  // A run added afterwards is the one called, as the reference reads it at each call.
  const opts = { name: "late", description: "d" }
  const late = defineTool(opts)
  opts.run = () => "now it runs"
  assert.deepEqual(await late.execute({}), { output: "now it runs", isError: false })
})

test("defineTool(null) throws a TypeError at once, as reading a field of null does", () => {
  assert.throws(() => defineTool(null), TypeError)
  assert.throws(() => defineTool(undefined), TypeError)
})

test("pending without a prompt or kind is accepted: the output reads as JavaScript would write it", () => {
  const r = pending({ kind: "approval" })
  assert.equal(r.output, "undefined")
  assert.equal(r.isError, true)
  assert.equal(typeof pendingOf(r).id, "string")
  const n = pending({ prompt: 42 })
  assert.equal(n.output, "42")
  assert.equal(pendingOf(n).kind, undefined)
  assert.throws(() => pending(null), TypeError)
})

test("createClient accepts an unknown or missing style and speaks the OpenAI wire", async () => {
  const llm = await startLLM([oaText("openai it is")])
  try {
    for (const style of ["gemini", undefined, 7]) {
      const c = createClient({ baseUrl: `${llm.url}/v1`, apiKey: "k", model: "m", style })
      assert.equal((await c.run("hi", { toolkit: await tk() })).text, "openai it is")
    }
    assert.ok(llm.requests.every((r) => r.path === "/v1/chat/completions"))
  } finally {
    await llm.close()
  }
})

test("createClient without a model builds; the request carries no model key and the run completes", async () => {
  const llm = await startLLM([oaText("fine")])
  try {
    const c = createClient({ baseUrl: `${llm.url}/v1`, apiKey: "k", style: "openai" })
    assert.equal((await c.run("hi", { toolkit: await tk() })).text, "fine")
    assert.equal("model" in llm.requests[0].json, false)
  } finally {
    await llm.close()
  }
})

test("createClient without a baseUrl builds and fails at the run", async () => {
  const c = createClient({ apiKey: "k", model: "m", style: "openai", retries: 0 })
  await assert.rejects(c.run("hi", { toolkit: await tk() }))
})

test("a callback option that is not a function fails when it is called, with a TypeError naming it", async () => {
  const llm = await startLLM([oaText("x")])
  try {
    const c = createClient({ baseUrl: `${llm.url}/v1`, apiKey: "k", model: "m", style: "openai", hooks: { beforeLLM: "nope" } })
    await assert.rejects(c.run("hi", { toolkit: await tk() }), (e) => e instanceof TypeError && /hooks\.beforeLLM/.test(e.message))
    // Non-object hooks and non-string header values are read as the reference reads them.
    const d = createClient({ baseUrl: `${llm.url}/v1`, apiKey: "k", model: "m", style: "openai", hooks: 5, headers: { "x-n": 5 }, maxTurns: "3" })
    assert.equal((await d.run("hi", { toolkit: await tk() })).text, "x")
    assert.equal(llm.requests.at(-1).headers["x-n"], "5")
  } finally {
    await llm.close()
  }
})

// ---- warnings go through console.warn --------------------------------------------------------

test("the core's warnings reach console.warn with the reference's texts, and nothing else reaches stderr", async () => {
  const llm = await startLLM([oaText("ok")])
  try {
    const r = await runChild(`
      const seen = []
      console.warn = (...args) => seen.push(args.join(" "))
      const t = await import(ENTRY)
      const one = t.defineTool({ name: "dup", description: "a", run: () => "1" })
      const two = t.defineTool({ name: "dup", description: "b", run: () => "2" })
      const toolkit = await t.createToolkit({ builtins: { disabled: true }, extraTools: [one, two], skillsDir: "/no/such/skills/dir" })
      seen.push("-- created")
      const c = t.createClient({ baseUrl: ${JSON.stringify(llm.url + "/v1")}, apiKey: "k", model: "m", style: "openai", requestParams: { stream: true, temperature: 0 } })
      await c.run("hi", { toolkit })
      seen.push("-- ran")
      process.stdout.write(JSON.stringify(seen))
    `)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stderr, "")
    assert.deepEqual(JSON.parse(r.stdout), [
      "[toolnexus] skills dir not found: /no/such/skills/dir",
      '[toolnexus] duplicate tool name "dup" — keeping first',
      "-- created",
      '[toolnexus] requestParams key "stream" is not allowed — ignored (use bodyTransform)',
      "-- ran",
    ])
  } finally {
    await llm.close()
  }
})

test("warnings raised in a worker go to that worker's console.warn", async () => {
  const r = await runChild(`
    import { Worker } from "node:worker_threads"
    const w = new Worker(\`
      const { parentPort } = require("node:worker_threads")
      const seen = []
      console.warn = (text) => seen.push(text)
      const t = require(\${JSON.stringify(new URL(ENTRY).pathname)})
      const a = t.defineTool({ name: "same", description: "a", run: () => "1" })
      t.createToolkit({ builtins: { disabled: true }, extraTools: [a, a] }).then(() => parentPort.postMessage(seen))
    \`, { eval: true, execArgv: [] })
    w.once("message", (m) => { console.log(JSON.stringify(m)); w.terminate() })
  `)
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), ['[toolnexus] duplicate tool name "same" — keeping first'])
})

// ---- a user fetch gets a signal ---------------------------------------------------------------

test("a user fetch receives a signal that aborts when the run is aborted, and may forward it", async () => {
  const llm = await startLLM([{ hang: true }])
  try {
    const seen = deferred()
    const fetchFn = (url, init) => {
      seen.resolve(init.signal)
      return fetch(url, init) // a wrapper forwarding everything, signal included
    }
    const c = createClient({ baseUrl: `${llm.url}/v1`, apiKey: "k", model: "m", style: "openai", fetch: fetchFn, retries: 0 })
    const ctrl = new AbortController()
    const run = c.run("hi", { toolkit: await tk(), signal: ctrl.signal })
    const signal = await within(5000, seen.promise, "the fetch call")
    while (llm.requests.length === 0) await new Promise((r) => setTimeout(r, 5))
    assert.ok(signal instanceof AbortSignal)
    assert.equal(signal.aborted, false)
    ctrl.abort(new Error("user stop"))
    await assert.rejects(run, /user stop/)
    await within(5000, new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", resolve))), "the fetch signal")
    // The forwarded request itself was cancelled: the endpoint saw its client go away.
    await within(5000, llm.requests[0].closed, "the upstream request to close")
  } finally {
    await llm.close()
  }
})

test("a user fetch's signal also aborts when the run times out", async () => {
  // The run's deadline is an unreferenced timer (as in the reference): keep this process up.
  const keep = setInterval(() => {}, 1000)
  after(() => clearInterval(keep))
  const seen = deferred()
  const c = createClient({
    baseUrl: "http://127.0.0.1:9/v1",
    apiKey: "k",
    model: "m",
    style: "openai",
    timeoutMs: 100,
    fetch: (url, init) => {
      seen.resolve(init.signal)
      return new Promise(() => {})
    },
  })
  await assert.rejects(c.run("hi", { toolkit: await tk() }), /timeout/)
  const signal = await seen.promise
  await within(5000, new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", resolve))), "the fetch signal")
})

// ---- objects handed out -----------------------------------------------------------------------

test("tools without a schema share one default schema object, as in the reference", () => {
  const a = defineTool({ name: "a", description: "a", run: () => "" })
  const b = defineTool({ name: "b", description: "b", run: () => "" })
  assert.equal(a.inputSchema, b.inputSchema)
})

test("the adapters hand out each tool's own inputSchema object", async () => {
  const schema = { type: "object", properties: { q: { type: "string" } } }
  const t = defineTool({ name: "q", description: "q", inputSchema: schema, run: () => "" })
  assert.equal(toOpenAI([t])[0].function.parameters, schema)
  assert.equal(toAnthropic([t])[0].input_schema, schema)
  assert.equal(toGemini([t])[0].functionDeclarations[0].parameters, schema)
  const toolkit = await createToolkit({ extraTools: [t] })
  const at = toolkit.tools().findIndex((x) => x.name === "q")
  assert.equal(toolkit.toOpenAI()[at].function.parameters, schema)
  assert.equal(toolkit.toAnthropic()[at].input_schema, schema)
  assert.equal(toolkit.toGemini()[0].functionDeclarations[at].parameters, schema)
  // A built-in's schema is the same object from one call to the next.
  const bash = toolkit.tools().findIndex((x) => x.name === "bash")
  assert.equal(toolkit.toOpenAI()[bash].function.parameters, toolkit.toOpenAI()[bash].function.parameters)
})

// ---- values JSON cannot carry ------------------------------------------------------------------

test("a plain-object tool returning circular metadata does not fail the run", async () => {
  const llm = await startLLM((req) => (req.json.messages.some((m) => m.role === "tool") ? oaText("done") : oaCalls([{ id: "c1", name: "loop", args: {} }])))
  try {
    const meta = { name: "self", big: 10n }
    meta.self = meta
    meta.list = [meta, { ok: true }]
    const tool = { name: "loop", description: "circular", inputSchema: { type: "object" }, source: "native", execute: async () => ({ output: "fine", isError: false, metadata: meta }) }
    const toolkit = await createToolkit({ builtins: { disabled: true }, extraTools: [tool] })
    const c = createClient({ baseUrl: `${llm.url}/v1`, apiKey: "k", model: "m", style: "openai" })
    const out = await c.run("go", { toolkit })
    assert.equal(out.text, "done")
    assert.equal(out.status, "done")
    const sent = llm.requests[1].json.messages.find((m) => m.role === "tool")
    assert.equal(sent.content, "fine")
    const record = out.toolCalls[0]
    assert.equal(record.metadata.name, "self")
    assert.equal(record.metadata.big, "10")
    assert.deepEqual(record.metadata.list, [null, { ok: true }])
  } finally {
    await llm.close()
  }
})
