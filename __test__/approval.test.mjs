// An approval applies only to what was approved (issue 53), tried as a user would: a tool
// `deploy({ env })` parks for approval, the `pending` and the history go through JSON (a browser,
// a queue, a row the app does not control), and a second process resumes. A resume goes on with
// what the library recorded at the park, on every store: an invented, edited, replayed or expired
// Request runs nothing, and the real approval still runs, once.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { agents, createClient, createToolkit, defineTool, pending } from "../index.js"
import { engines, unique } from "./support/engines.mjs"
import { startLLM, oaText, oaCalls, runChild } from "./support/llm.mjs"

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "tn-approval-"))

/** The model: `deploy` with the arguments the prompt names (JSON after `deploy:`), then the results. */
function model(req) {
  const messages = req.json?.messages ?? []
  const results = messages.filter((m) => m.role === "tool").map((m) => m.content)
  const prompt = messages.findLast((m) => m.role === "user")?.content ?? ""
  if (results.length === 0 && prompt.startsWith("deploy:")) return oaCalls([{ id: "call-1", name: "deploy", args: JSON.parse(prompt.slice(7)) }])
  return oaText(`final: ${results.join(" | ")}`)
}

/** Every process's program: `deploy` parks until approved (a Request `ttl` seconds long when asked), each deployment logged. */
const PROGRAM = (log, clientOptions) => `
  const fs = await import("node:fs")
  const { createClient, createToolkit, defineTool, pending } = await import(ENTRY)
  const deploy = defineTool({ name: "deploy", description: "Deploy the service", run: ({ env, ttl }, ctx) => {
    if (ctx?.answer?.ok) { fs.appendFileSync(${JSON.stringify(log)}, env + "\\n"); return "deployed to " + env }
    return pending({ kind: "approval", prompt: "Deploy to " + env + "?", ...(ttl ? { expiresAt: new Date(Date.now() + ttl * 1000).toISOString() } : {}) })
  } })
  const toolkit = await createToolkit({ builtins: false, extraTools: [deploy] })
  const client = createClient(${JSON.stringify(clientOptions)})
  const attempt = async (f) => { try { const r = await f(); return { ok: true, status: r.status, text: r.text } } catch (e) { return { ok: false, name: e.constructor.name, code: e.code, message: e.message } } }
`
const deployments = (log) => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter(Boolean) : [])

/** Run `body` after PROGRAM in a new process; it prints one JSON line. */
async function inProcess(log, clientOptions, body) {
  const r = await runChild(`${PROGRAM(log, clientOptions)}\n${body}\nprocess.exit(0)`, { timeoutMs: 30_000 })
  assert.equal(r.code, 0, r.stderr)
  return JSON.parse(r.stdout)
}

/** The stores of this run: each engine, and memory with a resume key shared by the processes. */
function stores() {
  const out = engines("tn-approval-").map(([name, url]) => [name, { store: url }])
  out.push(["memory + resumeKey", { resumeKey: "one key shared by the deployment's processes" }])
  return out
}

for (const [name, extra] of stores()) {
  test(`${name}: in a second process, an edited, invented or expired copy runs nothing and the real approval runs once`, async (t) => {
    const llm = await startLLM(model)
    t.after(() => llm.close())
    const log = path.join(tmp(), "deployments.log")
    const options = { baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", ...extra }
    const parked = await inProcess(log, options, `const r = await client.run('deploy:{"env":"staging"}', { toolkit }); console.log(JSON.stringify({ messages: r.messages, pending: r.pending }))`)
    const expiring = await inProcess(log, options, `const r = await client.run('deploy:{"env":"staging","ttl":1}', { toolkit }); console.log(JSON.stringify({ messages: r.messages, pending: r.pending }))`)
    assert.equal(parked.pending.prompt, "Deploy to staging?")
    const { messages, pending: request } = parked
    const approve = (id) => ({ id, ok: true })
    const prod = structuredClone(messages)
    prod.findLast((m) => m.tool_calls).tool_calls[0].function.arguments = JSON.stringify({ env: "prod" })
    const undated = { ...expiring.pending }
    delete undated.expiresAt
    await new Promise((r) => setTimeout(r, 1_200))
    const tries = {
      "edited arguments": [prod, request, approve(request.id)],
      "invented id": [messages, { ...request, id: "pnd-made-up" }, approve("pnd-made-up")],
      "expiresAt deleted": [expiring.messages, undated, approve(undated.id)],
      "expired": [expiring.messages, expiring.pending, approve(expiring.pending.id)],
      "ok as a string": [messages, request, { id: request.id, ok: "false" }],
      "a string as the answer": [messages, request, "yes"],
      "real": [messages, request, approve(request.id)],
      "again": [messages, request, approve(request.id)],
      "edited, after": [prod, request, approve(request.id)],
      "invented, after": [messages, { ...request, id: "pnd-made-up-2" }, approve("pnd-made-up-2")],
    }
    const out = await inProcess(log, options, `
      const tries = ${JSON.stringify(tries)}
      const out = {}
      for (const [what, [history, pending, answer]] of Object.entries(tries)) out[what] = await attempt(() => client.runWithAnswer(toolkit, history, pending, answer))
      console.log(JSON.stringify(out))`)
    const codes = Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.ok ? `${v.status}: ${v.text}` : v.code ?? v.name]))
    assert.deepEqual(codes, {
      "edited arguments": "EREQUESTMISMATCH",
      "invented id": "EUNKNOWNREQUEST",
      "expiresAt deleted": "EREQUESTMISMATCH",
      "expired": "EREQUESTEXPIRED",
      "ok as a string": "TypeError",
      "a string as the answer": "TypeError",
      "real": "done: final: deployed to staging",
      "again": "ESTORECONFLICT",
      "edited, after": "ESTORECONFLICT",
      "invented, after": "EUNKNOWNREQUEST",
    })
    assert.match(out["edited arguments"].message, /its parked call's arguments are not the ones the call parked with/)
    assert.deepEqual(deployments(log), ["staging"], "staging, once; prod never")
  })
}

test("without a durable store or a resumeKey, another process refuses the resume and says how to allow it", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const log = path.join(tmp(), "deployments.log")
  const options = { baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" }
  const parked = await inProcess(log, options, `const r = await client.run('deploy:{"env":"staging"}', { toolkit }); console.log(JSON.stringify({ messages: r.messages, pending: r.pending }))`)
  assert.equal(parked.pending.seal, undefined, "no key, no seal")
  const out = await inProcess(log, options, `console.log(JSON.stringify(await attempt(() => client.runWithAnswer(toolkit, ${JSON.stringify(parked.messages)}, ${JSON.stringify(parked.pending)}, { id: ${JSON.stringify(parked.pending.id)}, ok: true }))))`)
  assert.equal(out.code, "EUNKNOWNREQUEST")
  assert.match(out.message, /through a durable store, or with a resumeKey shared by both/)
  assert.deepEqual(deployments(log), [])
})

test("with a resumeKey and no durable store, a real approval replayed in a third process runs again (what the README says a durable store is for)", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const log = path.join(tmp(), "deployments.log")
  const options = { baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", resumeKey: "one key shared by the deployment's processes" }
  const parked = await inProcess(log, options, `const r = await client.run('deploy:{"env":"staging"}', { toolkit }); console.log(JSON.stringify({ messages: r.messages, pending: r.pending }))`)
  const resume = `console.log(JSON.stringify(await attempt(() => client.runWithAnswer(toolkit, ${JSON.stringify(parked.messages)}, ${JSON.stringify(parked.pending)}, { id: ${JSON.stringify(parked.pending.id)}, ok: true }))))`
  assert.equal((await inProcess(log, options, resume)).status, "done")
  assert.equal((await inProcess(log, options, resume)).status, "done")
  assert.deepEqual(deployments(log), ["staging", "staging"])
  // A key that is not the one it was sealed with: not a Request of this client's.
  const other = await inProcess(log, { ...options, resumeKey: "another deployment's key, not ours" }, resume)
  assert.equal(other.code, "EUNKNOWNREQUEST")
  assert.match(other.message, /carries no seal of this client's resumeKey for it/)
  assert.deepEqual(deployments(log), ["staging", "staging"])
})

for (const [engine, url] of engines("tn-approval-ask-")) {
  test(`${engine}: askWithAnswer in another process: an invented id resumes nothing and the real answer still goes through`, async (t) => {
    const llm = await startLLM(model)
    t.after(() => llm.close())
    const log = path.join(tmp(), "deployments.log")
    const options = { baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: url }
    const [a, b] = [unique("ticket-a"), unique("ticket-b")]
    const asked = await inProcess(log, options, `
      const pa = (await client.ask('deploy:{"env":"staging"}', { toolkit, id: ${JSON.stringify(a)} })).pending
      const pb = (await client.ask('deploy:{"env":"staging"}', { toolkit, id: ${JSON.stringify(b)} })).pending
      console.log(JSON.stringify({ pa, pb }))`)
    assert.equal(asked.pa.prompt, asked.pb.prompt, "the same prompt in two conversations")
    const out = await inProcess(log, options, `
      const { pa, pb } = ${JSON.stringify(asked)}
      const ask = (conv, p, answer) => attempt(() => client.askWithAnswer(toolkit, conv, p, answer))
      const out = {}
      out.invented = await ask(${JSON.stringify(a)}, { ...pa, id: "pnd-made-up" }, { id: "pnd-made-up", ok: true })
      out.otherConversations = await ask(${JSON.stringify(a)}, pb, { id: pb.id, ok: true })
      out.okString = await ask(${JSON.stringify(a)}, pa, { id: pa.id, ok: "false" })
      out.real = await ask(${JSON.stringify(a)}, pa, { id: pa.id, ok: true })
      out.deleted = await client.deleteConversation(${JSON.stringify(b)})
      out.afterDelete = await ask(${JSON.stringify(b)}, pb, { id: pb.id, ok: true })
      console.log(JSON.stringify(out))`)
    assert.deepEqual(
      [out.invented.code, out.otherConversations.code, out.okString.name, out.real.status, out.deleted, out.afterDelete.code],
      ["EUNKNOWNREQUEST", "EUNKNOWNREQUEST", "TypeError", "done", true, "EUNKNOWNREQUEST"],
      JSON.stringify(out),
    )
    assert.deepEqual(deployments(log), ["staging"])
  })

  test(`${engine}: three duplicate askWithAnswers from three processes: one runs, the others get ESTORECONFLICT`, async (t) => {
    const llm = await startLLM(model)
    t.after(() => llm.close())
    const log = path.join(tmp(), "deployments.log")
    const options = { baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: url }
    const conv = unique("ticket")
    const { p } = await inProcess(log, options, `console.log(JSON.stringify({ p: (await client.ask('deploy:{"env":"staging"}', { toolkit, id: ${JSON.stringify(conv)} })).pending }))`)
    const resume = `console.log(JSON.stringify(await attempt(() => client.askWithAnswer(toolkit, ${JSON.stringify(conv)}, ${JSON.stringify(p)}, { id: ${JSON.stringify(p.id)}, ok: true }))))`
    const outs = await Promise.all([1, 2, 3].map(() => inProcess(log, options, resume)))
    assert.deepEqual(outs.map((o) => (o.ok ? o.status : o.code)).sort(), ["ESTORECONFLICT", "ESTORECONFLICT", "done"], JSON.stringify(outs))
    // And once more, after the winner finished: the same code and words.
    const late = await inProcess(log, options, resume)
    assert.equal(late.code, "ESTORECONFLICT")
    assert.equal(late.message, outs.find((o) => !o.ok).message)
    assert.deepEqual(deployments(log), ["staging"])
  })
}

test("answers of the wrong type use nothing up: runtime.resume and askWithAnswer refuse them with a TypeError", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const deployed = []
  const deploy = defineTool({ name: "deploy", description: "d", run: ({ env }, ctx) => (ctx?.answer?.ok ? (deployed.push(env), `deployed to ${env}`) : pending({ kind: "approval", prompt: `Deploy to ${env}?` })) })
  const worker = agents.agent("worker", { does: "deploys", uses: { tools: [deploy] } })
  const r = await worker.run('deploy:{"env":"staging"}', { llm: { baseUrl: llm.url, style: "openai", apiKey: "k", model: "m" } })
  assert.equal(r.status, "pending")
  for (const [answer, why] of [["yes", /got string/], [42, /got number/], [null, /got null/], [{ id: r.pending.id, ok: "false" }, /ok must be true or false, got "false" \(string\)/], [{ id: r.pending.id }, /it has none/]]) {
    await assert.rejects(r.runtime.resume(answer), (e) => e instanceof TypeError && why.test(e.message), JSON.stringify(answer))
  }
  assert.equal(r.runtime.root.children[0].state, "suspended", "nothing was used up")
  await r.runtime.resume({ id: r.pending.id, ok: true })
  assert.equal((await r.runtime.wait(r.runtime.root.children[0])).text, "final: deployed to staging")
  assert.deepEqual(deployed, ["staging"])
  await r.runtime.close(r.runtime.root)

  const toolkit = await createToolkit({ builtins: false, extraTools: [deploy] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const asked = await client.ask('deploy:{"env":"prod"}', { toolkit, id: "t" })
  await assert.rejects(client.askWithAnswer(toolkit, "t", asked.pending, { id: asked.pending.id, ok: "false" }), TypeError)
  const done = await client.askWithAnswer(toolkit, "t", asked.pending, { id: asked.pending.id, ok: true })
  assert.equal(done.text, "final: deployed to prod")
  await toolkit.close()
})

test("deleteConversation: a store object of your own is asked to delete; one without delete(id) is a TypeError", async (t) => {
  const llm = await startLLM(model)
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "deploy", description: "d", run: () => pending({ kind: "approval", prompt: "ok?" }) })] })
  const kept = new Map()
  const deleted = []
  const mine = { get: async (id) => kept.get(id), save: async (id, m) => void kept.set(id, m), delete: async (id) => (deleted.push(id), kept.delete(id)) }
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: mine })
  const asked = await client.ask('deploy:{"env":"x"}', { toolkit, id: "c1" })
  assert.equal(await client.deleteConversation("c1"), true)
  assert.equal(await client.deleteConversation("c1"), false)
  assert.deepEqual(deleted, ["c1", "c1"])
  await assert.rejects(client.askWithAnswer(toolkit, "c1", asked.pending, { id: asked.pending.id, ok: true }), (e) => e.code === "EUNKNOWNREQUEST")
  const bare = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: { get: async () => undefined, save: async () => {} } })
  await assert.rejects(bare.deleteConversation("c1"), (e) => e instanceof TypeError && /the store has no delete\(id\) method/.test(e.message))
  await toolkit.close()
})

test("createClient refuses a resumeKey or parkRetentionMs that cannot work, never saying the key", () => {
  assert.throws(() => createClient({ baseUrl: "x", model: "m", resumeKey: "short-secret" }), (e) => e instanceof TypeError && /at least 16 characters/.test(e.message) && /a string of 12 characters/.test(e.message) && !e.message.includes("short-secret"))
  assert.throws(() => createClient({ baseUrl: "x", model: "m", resumeKey: 12345678901234567 }), TypeError)
  assert.throws(() => createClient({ baseUrl: "x", model: "m", parkRetentionMs: 0 }), (e) => e instanceof TypeError && /parkRetentionMs/.test(e.message))
  assert.ok(createClient({ baseUrl: "x", model: "m", resumeKey: "sixteen chars ok", parkRetentionMs: 1000, store: undefined }))
})

/**
 * The lead delegates three subtasks in one turn (`task` ×3); each worker parks on an approval of
 * its own. Models: the lead asks for the three tasks, then answers with their results; a worker
 * calls `approve`, then answers with what it got.
 */
function fanOutModel(req) {
  const messages = req.json?.messages ?? []
  const results = messages.filter((m) => m.role === "tool").map((m) => m.content)
  const user = messages.find((m) => m.role === "user")?.content ?? ""
  if (req.json?.model === "m-lead") {
    if (results.length === 0) return oaCalls(["a", "b", "c"].map((p, i) => ({ id: `t${i}`, name: "task", args: { agent: "worker", prompt: p } })))
    return oaText(`final: ${results.join(" | ")}`)
  }
  if (results.length === 0) return oaCalls([{ id: "w0", name: "approve", args: {} }])
  return oaText(`${user}: ${results.join(" | ")}`)
}

const FAN_OUT = (llm, store, runtimeId, log) => `
  const fs = await import("node:fs")
  const { agents, defineTool, pending } = await import(ENTRY)
  const approve = defineTool({ name: "approve", description: "needs approval", run: (_a, ctx) => {
    if (!ctx?.answer?.ok) return pending({ kind: "approval", prompt: "approve?" })
    fs.appendFileSync(${JSON.stringify(log)}, ctx.answer.id + "\\n")
    return "approved"
  } })
  const worker = agents.agent("worker", { does: "works", model: "m-worker", uses: { tools: [approve] } })
  const lead = agents.agent("lead", { does: "leads", model: "m-lead", team: [worker] })
  const options = { llm: { baseUrl: ${JSON.stringify(llm.url)}, style: "openai", apiKey: "k", model: "m" }, store: ${JSON.stringify(store)}, runtimeId: ${JSON.stringify(runtimeId)} }
`

for (const [engine, url] of engines("tn-approval-fan-")) {
  test(`${engine}: one turn parks three calls; three processes each answer their own Request at once, five times out of five`, async (t) => {
    const llm = await startLLM(fanOutModel)
    t.after(() => llm.close())
    for (let round = 0; round < 5; round++) {
      const id = unique("fan")
      const log = path.join(tmp(), "approved.log")
      const parked = await runChild(
        `${FAN_OUT(llm, url, id, log)}
        const r = await lead.run("go", options)
        const rt = r.runtime
        const workers = rt.root.children[0].children.map((h) => ({ id: h.id, state: rt.inspect(h).state, request: rt.inspect(h).pending }))
        console.log(JSON.stringify({ status: r.status, workers }))
        process.exit(0)`,
        { timeoutMs: 30_000 },
      )
      assert.equal(parked.code, 0, parked.stderr)
      const { status, workers } = JSON.parse(parked.stdout)
      assert.equal(status, "pending")
      assert.deepEqual(workers.map((w) => w.state), ["suspended", "suspended", "suspended"])
      const resumed = await Promise.all(
        workers.map((w) =>
          runChild(
            `${FAN_OUT(llm, url, id, log)}
            const rt = lead.createRuntime(options)
            try {
              await rt.resume({ id: ${JSON.stringify(w.request.id)}, ok: true })
              console.log(JSON.stringify({ ok: true }))
            } catch (e) {
              console.log(JSON.stringify({ ok: false, code: e.code, message: e.message }))
            }
            process.exit(0)`,
            { timeoutMs: 60_000 },
          ),
        ),
      )
      const outs = resumed.map((r) => (assert.equal(r.code, 0, r.stderr), JSON.parse(r.stdout)))
      assert.deepEqual(outs, [{ ok: true }, { ok: true }, { ok: true }], `round ${round}`)
      // Each approval ran its call once.
      const approved = fs.readFileSync(log, "utf8").split("\n").filter(Boolean).sort()
      assert.deepEqual(approved, workers.map((w) => w.request.id).sort(), `round ${round}`)
      // The lead, reattached to its three children, finished: read by a process of its own.
      const after = await runChild(
        `${FAN_OUT(llm, url, id, log)}
        const rt = lead.createRuntime(options)
        const lead1 = rt.root.children[0]
        const r = await rt.wait(lead1, { timeoutMs: 20000 })
        console.log(JSON.stringify({ state: rt.inspect(lead1).state, status: r.status, text: r.text }))
        if (r.status !== "done") console.error(rt.trace.join("\\n"))
        process.exit(0)`,
        { timeoutMs: 30_000 },
      )
      assert.equal(after.code, 0, after.stderr)
      assert.deepEqual(JSON.parse(after.stdout), { state: "idle", status: "done", text: "final: a: approved | b: approved | c: approved" }, `round ${round}\n${after.stderr}`)
    }
  })
}
