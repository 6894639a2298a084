// Suspension you can trust (issue 42): an Answer reaches only the call whose Request it echoes,
// once, in any process, on any store. `runWithAnswer` / `askWithAnswer` (SPEC §10 durable
// resume) and the agent runtime's `resume`, each driven as a user would: real processes, a
// scripted endpoint on loopback, the engines of this run (SQLite always; PostgreSQL and Redis
// when .ci/run started them).
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { agents, createClient, createToolkit, defineTool, pending, SqliteStore, PostgresStore, RedisStore } from "../index.js"
import { engines, unique } from "./support/engines.mjs"
import { startLLM, oaText, oaCalls, runChild } from "./support/llm.mjs"

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "tn-resume-"))

/**
 * The model: asks for the calls its user prompt names (`call:a,b`) until a tool result is in the
 * transcript, then answers with every tool result it was given.
 */
function model(req) {
  const messages = req.json?.messages ?? []
  const results = messages.filter((m) => m.role === "tool").map((m) => m.content)
  const prompt = messages.findLast((m) => m.role === "user")?.content ?? ""
  if (results.length === 0 && prompt.startsWith("call:")) {
    return oaCalls(prompt.slice(5).split(",").map((name, i) => ({ id: `c${i}`, name, args: {} })))
  }
  return oaText(`final: ${results.join(" | ")}`)
}

/** One result per call, in order, in every assistant turn of a transcript the model was sent. */
function assertBalanced(messages) {
  messages.forEach((m, i) => {
    if (!Array.isArray(m.tool_calls)) return
    const results = []
    for (const x of messages.slice(i + 1)) {
      if (x.role !== "tool") break
      results.push(x.tool_call_id)
    }
    assert.deepEqual(results, m.tool_calls.map((c) => c.id), "one tool result per tool call")
  })
}

/** The program every process runs: tools `a` and `b` that park until answered, each run logged to `log`. */
const TOOLS = (log) => `
  const fs = await import("node:fs")
  const { createClient, createToolkit, defineTool, pending, agents } = await import(ENTRY)
  const approval = (name) => defineTool({ name, description: "needs approval", run: (_args, ctx) => {
    fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ name, answer: ctx?.answer ?? null, pid: process.pid }) + "\\n")
    return ctx?.answer ? (ctx.answer.ok ? name + " done" : name + " declined") : pending({ kind: "approval", prompt: "approve " + name })
  } })
  const toolkit = await createToolkit({ builtins: false, extraTools: [approval("a"), approval("b")] })
`
const readLog = (log) => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [])

test("runWithAnswer: a run parked in one process finishes in others, one answer per parked call, the turn balanced", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const log = path.join(tmp(), "runs.jsonl")
  // Every process shares the resume key: the Request handed out is sealed with it.
  const client = (extra = `, resumeKey: "the key every process of this deployment shares"`) => `const client = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k"${extra} })`
  const run = async (body, extra) => {
    const r = await runChild(`${TOOLS(log)}\n${client(extra)}\n${body}`, { timeoutMs: 30_000 })
    assert.equal(r.code, 0, r.stderr)
    return JSON.parse(r.stdout)
  }
  const first = await run(`const r = await client.run("call:a,b", { toolkit }); console.log(JSON.stringify(r))`)
  assert.equal(first.status, "pending")
  assert.equal(first.pending.prompt, "approve a")
  assert.match(first.pending.seal, /^tn1\.[0-9a-f]{64}\.[A-Za-z0-9_-]+\.[0-9a-f]{64}$/)
  assert.deepEqual(first.toolCalls.map((c) => c.name), ["a"], "b never entered the transcript")

  // A process without the key holds no record of the park and cannot check its seal: refused.
  const keyless = await run(`
    const e = await client.runWithAnswer(toolkit, ${JSON.stringify(first.messages)}, ${JSON.stringify(first.pending)}, { id: ${JSON.stringify(first.pending.id)}, ok: true }).catch((e) => e)
    console.log(JSON.stringify({ code: e.code, message: e.message }))`, "")
  assert.equal(keyless.code, "EUNKNOWNREQUEST")
  assert.match(keyless.message, /in this process \(a run parked in another process is resumed through a durable store, or with a resumeKey shared by both\)/)

  // Another process: an answer carrying b's id (b's Request was never surfaced) reaches nothing.
  const stray = await run(`
    const e = await client.runWithAnswer(toolkit, ${JSON.stringify(first.messages)}, ${JSON.stringify(first.pending)}, { id: "pnd-not-parked", ok: true }).catch((e) => e)
    console.log(JSON.stringify({ name: e.constructor.name, code: e.code, message: e.message }))`)
  assert.deepEqual([stray.name, stray.code], ["Error", "EUNKNOWNREQUEST"])
  assert.match(stray.message, /pnd-not-parked/)
  assert.equal(readLog(log).length, 2, "a refusal runs nothing")

  const second = await run(`
    const r = await client.runWithAnswer(toolkit, ${JSON.stringify(first.messages)}, ${JSON.stringify(first.pending)}, { id: ${JSON.stringify(first.pending.id)}, ok: true, data: { by: "ops" } })
    console.log(JSON.stringify(r))`)
  assert.equal(second.status, "pending", "b parks on a Request of its own")
  assert.equal(second.pending.prompt, "approve b")
  assert.notEqual(second.pending.id, first.pending.id)
  const afterSecond = readLog(log)
  assert.deepEqual(afterSecond.slice(2).map((r) => [r.name, r.answer?.id ?? null]), [["a", first.pending.id], ["b", null]], "a alone got the answer")

  const third = await run(`
    const r = await client.runWithAnswer(toolkit, ${JSON.stringify(second.messages)}, ${JSON.stringify(second.pending)}, { id: ${JSON.stringify(second.pending.id)}, ok: true })
    console.log(JSON.stringify(r))`)
  assert.equal(third.status, "done")
  assert.equal(third.text, "final: a done | b done")
  assert.equal(llm.requests.length, 2, "the model was asked once more, with the turn whole")
  const sent = llm.requests[1].json.messages
  assertBalanced(sent)
  assert.equal(sent.filter((m) => m.role === "user").length, 1, "no new user turn")
})

test("runWithAnswer: refusals name the request, keep their error class and code, and change nothing", async (t) => {
  // (An expiresAt the caller adds is not the Request that parked: EREQUESTMISMATCH; approval.test.mjs has the rest.)
  const llm = await startLLM(model)
  t.after(() => llm.close())
  let runs = 0
  const a = defineTool({ name: "a", description: "d", run: (_x, ctx) => (runs++, ctx?.answer ? "a done" : pending({ kind: "approval", prompt: "approve a" })) })
  const toolkit = await createToolkit({ builtins: false, extraTools: [a] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const r = await client.run("call:a", { toolkit })
  const go = (pending, answer, tk = toolkit) => client.runWithAnswer(tk, r.messages, pending, answer)

  await assert.rejects(go(r.pending, { ok: true }), (e) => e.code === "EUNKNOWNREQUEST" && e.message.includes(r.pending.id))
  await assert.rejects(go({ ...r.pending, expiresAt: "2020-01-01T00:00:00Z" }, { id: r.pending.id, ok: true }), (e) => e.code === "EREQUESTMISMATCH" && /its expiresAt differs from the one recorded/.test(e.message))
  await assert.rejects(go("nope", { id: r.pending.id, ok: true }), TypeError)
  await assert.rejects(client.runWithAnswer({}, r.messages, r.pending, { id: r.pending.id, ok: true }), (e) => e instanceof TypeError && /runWithAnswer: `toolkit` must be a Toolkit/.test(e.message))
  const bare = await createToolkit({ builtins: false, extraTools: [] })
  await assert.rejects(go(r.pending, { id: r.pending.id, ok: true }, bare), (e) => e.code === "ETOOLMISSING" && /"a"/.test(e.message))
  assert.equal(runs, 1, "nothing ran")

  const done = await go(r.pending, { id: r.pending.id, ok: true })
  assert.equal(done.text, "final: a done")
  await assert.rejects(go(r.pending, { id: r.pending.id, ok: true }), (e) => e.code === "ESTORECONFLICT" && /already resumed/.test(e.message))
  assert.equal(runs, 2, "once")
  await Promise.all([toolkit.close(), bare.close()])
})

test("waitFor: an answer for another Request reaches no tool, and says so", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const seen = []
  const approval = (name) => defineTool({ name, description: "d", run: (_x, ctx) => (seen.push([name, ctx?.answer?.id ?? null]), ctx?.answer ? `${name} done` : pending({ kind: "approval", prompt: `approve ${name}` })) })
  const toolkit = await createToolkit({ builtins: false, extraTools: [approval("a"), approval("b")] })
  let firstId
  const warned = []
  const warn = t.mock.method(console, "warn", (m) => warned.push(String(m)))
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", waitFor: async (req) => ({ id: (firstId ??= req.id), ok: true }) })
  const r = await client.run("call:a,b", { toolkit })
  warn.mock.restore()
  assert.equal(r.status, "done")
  const outputs = r.toolCalls.map((c) => c.output)
  assert.equal(outputs.filter((o) => o.endsWith(" done")).length, 1, "one answer approved one call")
  assert.equal(outputs.filter((o) => o.startsWith("declined/expired: approve ")).length, 1)
  assert.equal(seen.filter(([, id]) => id !== null).length, 1)
  assert.equal(warned.length, 1)
  assert.match(warned[0], /an answer reaches only the request whose id it echoes/)
  await toolkit.close()
})

test("conversationStore() is the store a store URL names", async () => {
  const dir = tmp()
  const cases = [[`sqlite:${path.join(dir, "c.db")}`, SqliteStore]]
  if (process.env.TOOLNEXUS_TEST_POSTGRES) cases.push([process.env.TOOLNEXUS_TEST_POSTGRES, PostgresStore])
  if (process.env.TOOLNEXUS_TEST_REDIS) cases.push([process.env.TOOLNEXUS_TEST_REDIS, RedisStore])
  for (const [url, Class] of cases) {
    const client = createClient({ baseUrl: "http://127.0.0.1:9", model: "m", apiKey: "k", store: url })
    const store = client.conversationStore()
    assert.ok(store instanceof Class, url)
    assert.equal(client.conversationStore(), store, "the same object each time")
    const id = unique("conv")
    await store.save(id, [{ role: "user", content: "hi" }])
    assert.deepEqual(await store.get(id), [{ role: "user", content: "hi" }])
  }
  // Anything else is answered as given, as the reference does.
  assert.equal(createClient({ baseUrl: "x", model: "m", store: "memory" }).conversationStore(), "memory")
})

/**
 * Run `resumer` in four processes at once; each prints `{ ok, text }` or `{ ok: false, code }`.
 * Asserts one of them ran the parked call, the others were refused with one of `codes`, and the
 * parked call's side effect happened once.
 */
async function fourAtOnce(resumer, log, codes) {
  const outcomes = await Promise.all([1, 2, 3, 4].map(() => runChild(resumer, { timeoutMs: 30_000 })))
  const results = outcomes.map((o) => (assert.equal(o.code, 0, o.stderr), JSON.parse(o.stdout)))
  assert.equal(results.filter((r) => r.ok).length, 1, JSON.stringify(results))
  for (const r of results.filter((r) => !r.ok)) assert.ok(codes.includes(r.code), JSON.stringify(r))
  assert.equal(results.find((r) => r.ok).text, "final: a done")
  assert.equal(readLog(log).filter((r) => r.answer).length, 1, "the side effect happened once")
}

/** The end of a resuming process: what it got, as one line of JSON. */
const REPORT = (resume) => `
  try {
    const r = await (async () => { ${resume} })()
    console.log(JSON.stringify({ ok: true, text: r.text }))
  } catch (e) {
    console.log(JSON.stringify({ ok: false, code: e.code, message: e.message }))
  }
  process.exit(0)`

for (const [engine, url] of engines("tn-resume-")) {
  test(`${engine}: askWithAnswer from four processes at once runs the parked call once`, async (t) => {
    const llm = await startLLM(model)
    t.after(() => llm.close())
    const log = path.join(tmp(), "runs.jsonl")
    const conv = unique("conv")
    const client = `const client = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k", store: ${JSON.stringify(url)} })`
    const parked = await runChild(`${TOOLS(log)}\n${client}\nconst r = await client.ask("call:a", { toolkit, id: ${JSON.stringify(conv)} }); console.log(JSON.stringify(r.pending)); process.exit(0)`, { timeoutMs: 30_000 })
    assert.equal(parked.code, 0, parked.stderr)
    const request = JSON.parse(parked.stdout)
    const resume = `return client.askWithAnswer(toolkit, ${JSON.stringify(conv)}, ${JSON.stringify(request)}, { id: ${JSON.stringify(request.id)}, ok: true })`
    // Refused as taken, whenever each read the store: one outcome, one code.
    await fourAtOnce(`${TOOLS(log)}\n${client}\n${REPORT(resume)}`, log, ["ESTORECONFLICT"])
  })

  test(`${engine}: an agent runtime resumed from four processes at once runs the parked call once`, async (t) => {
    const llm = await startLLM(model)
    t.after(() => llm.close())
    const log = path.join(tmp(), "runs.jsonl")
    const id = unique("rt")
    const agent = `const worker = agents.agent("worker", { does: "needs approvals", uses: { tools: [approval("a"), approval("b")] } })
      const options = { llm: { baseUrl: ${JSON.stringify(llm.url)}, style: "openai", apiKey: "k", model: "m" }, store: ${JSON.stringify(url)}, runtimeId: ${JSON.stringify(id)} }`
    const parked = await runChild(`${TOOLS(log)}\n${agent}\nconst r = await worker.run("call:a", options); console.log(JSON.stringify(r.pending)); process.exit(0)`, { timeoutMs: 30_000 })
    assert.equal(parked.code, 0, parked.stderr)
    const request = JSON.parse(parked.stdout)
    assert.equal(request.prompt, "approve a")
    const resume = `const rt = worker.createRuntime(options)
      await rt.resume({ id: ${JSON.stringify(request.id)}, ok: true })
      return rt.wait(rt.root.children[0])`
    await fourAtOnce(`${TOOLS(log)}\n${agent}\n${REPORT(resume)}`, log, ["ESTORECONFLICT"])
  })
}

test("agent runtime: each parked call of a turn needs its own answer, and a stale one approves nothing", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const seen = []
  const approval = (name) => defineTool({ name, description: "d", run: (_x, ctx) => (seen.push([name, ctx?.answer?.id ?? null]), ctx?.answer ? `${name} done` : pending({ kind: "approval", prompt: `approve ${name}` })) })
  const worker = agents.agent("worker", { does: "d", uses: { tools: [approval("a"), approval("b")] } })
  const r1 = await worker.run("call:a,b", { llm: { baseUrl: llm.url, style: "openai", apiKey: "k", model: "m" } })
  assert.equal(r1.status, "pending")
  const rt = r1.runtime
  const h = rt.root.children[0]
  await assert.rejects(rt.resume({ id: "pnd-b-never-surfaced", ok: true }), (e) => e.code === "EUNKNOWNREQUEST")
  assert.equal(h.state, "suspended")
  await rt.resume({ id: r1.pending.id, ok: true })
  const r2 = await rt.wait(h)
  assert.equal(r2.status, "pending")
  assert.equal(r2.pending.prompt, "approve b")
  await assert.rejects(rt.resume({ id: r1.pending.id, ok: true }), (e) => e.code === "ESTORECONFLICT")
  await rt.resume({ id: r2.pending.id, ok: true })
  const r3 = await rt.wait(h)
  assert.equal(r3.text, "final: a done | b done")
  assert.deepEqual(seen.filter(([, id]) => id).map(([n, id]) => [n, id]), [["a", r1.pending.id], ["b", r2.pending.id]])
  await rt.close(rt.root)
})

test("agent runtime: a suspension that cannot be saved is an error, never a pending nobody can resume", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const dir = path.join(tmp(), "state")
  fs.mkdirSync(dir)
  const r = await runChild(`
    const fs = await import("node:fs")
    const { agents, defineTool, pending } = await import(ENTRY)
    const a = defineTool({ name: "a", description: "d", run: () => { fs.rmSync(${JSON.stringify(dir)}, { recursive: true, force: true }); return pending({ kind: "approval", prompt: "ok?" }) } })
    const worker = agents.agent("worker", { does: "d", uses: { tools: [a] } })
    const r = await worker.run("call:a", { llm: { baseUrl: ${JSON.stringify(llm.url)}, style: "openai", apiKey: "k", model: "m" }, store: ${JSON.stringify(`sqlite:${path.join(dir, "s.db")}`)} })
    console.log(JSON.stringify({ status: r.status, text: r.text, pending: r.pending ?? null }))
    process.exit(0)`, { timeoutMs: 30_000 })
  assert.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.equal(out.status, "error", JSON.stringify(out))
  assert.match(out.text, /removed or replaced|ESTOREUNAVAILABLE|could not be saved/)
  assert.equal(out.pending, null)
})

test("toolkit.serve: a served Task parked for input is continued by the message carrying its answer, once", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const runs = []
  const a = defineTool({ name: "a", description: "d", run: (_x, ctx) => (runs.push(ctx?.answer ?? null), ctx?.answer ? "a done" : pending({ kind: "approval", prompt: "approve a" })) })
  const toolkit = await createToolkit({ builtins: false, extraTools: [a] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: `sqlite:${path.join(tmp(), "c.db")}` })
  const srv = await toolkit.serve("127.0.0.1:0", { client, a2a: { name: "desk" } })
  t.after(() => srv.stop())
  const call = async (method, params) => (await fetch(srv.url + "/", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json()
  const settled = async (id) => {
    for (;;) {
      const task = (await call("GetTask", { id })).result
      if (!["submitted", "working"].includes(task.status.state)) return task
      await new Promise((r) => setTimeout(r, 10))
    }
  }
  const sent = await call("SendMessage", { message: { role: "user", contextId: "ticket-9", parts: [{ kind: "text", text: "call:a" }] } })
  const parked = await settled(sent.result.id)
  assert.equal(parked.status.state, "input-required")
  assert.deepEqual(parked.status.message.parts, [{ kind: "text", text: "approve a" }])
  const request = parked.metadata.pending
  assert.equal(request.prompt, "approve a")

  const wrong = await call("SendMessage", { message: { role: "user", taskId: parked.id, parts: [{ kind: "data", data: { id: "pnd-other", ok: true } }] } })
  assert.equal(wrong.error.data.code, "EUNKNOWNREQUEST")
  const answer = { message: { role: "user", taskId: parked.id, parts: [{ kind: "data", data: { id: request.id, ok: true } }] } }
  const replies = await Promise.all([1, 2, 3].map(() => call("SendMessage", answer)))
  assert.equal(replies.filter((r) => r.result).length, 1, JSON.stringify(replies))
  const done = await settled(parked.id)
  assert.equal(done.status.state, "completed")
  assert.equal(done.artifacts[0].parts[0].text, "final: a done")
  assert.deepEqual(runs.map((r) => r?.id ?? null), [null, request.id], "the parked call ran once more, with its answer")
  await toolkit.close()
})

test("a run parked on one of two calls, then asked something new, sends one result per call", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const approval = (name) => defineTool({ name, description: "d", run: (_x, ctx) => (ctx?.answer ? `${name} done` : pending({ kind: "approval", prompt: `approve ${name}` })) })
  const toolkit = await createToolkit({ builtins: false, extraTools: [approval("a"), approval("b")] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const parked = await client.ask("call:a,b", { toolkit, id: "t" })
  assert.equal(parked.status, "pending")
  const next = await client.ask("never mind", { toolkit, id: "t" })
  assert.equal(next.status, "done")
  assertBalanced(llm.requests[1].json.messages)
  assert.match(llm.requests[1].json.messages.find((m) => m.tool_call_id === "c1").content, /^not run: /)
  await toolkit.close()
})
