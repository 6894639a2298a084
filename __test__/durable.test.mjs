// State that outlives the process (issue 26): an agent runtime parked in one process and
// resumed in another, the engine store classes, and two served replicas on one store behaving
// as one agent (a contextId conversation across them, a SIGKILLed replica's Task ending on its
// lease). Every engine the run has: SQLite always, PostgreSQL and Redis when .ci/run started them.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { SqliteStore, PostgresStore, RedisStore, createClient, createToolkit } from "../index.js"
import { engines, unique, rpc } from "./support/engines.mjs"
import { startLLM, oaText, oaCalls, runChild, cleanEnv, ENTRY_URL, REPO } from "./support/llm.mjs"

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "tn-durable-"))

/** The model of the approval agent: call `charge`, then answer with what it returned. */
function approvalModel(req) {
  const tool = (req.json?.messages ?? []).filter((m) => m.role === "tool").at(-1)
  return tool ? oaText(`final: ${tool.content}`) : oaCalls([{ id: "c1", name: "charge", args: { amount: 10 } }])
}

/** The program each process runs: the same agent, on `store` (null: in memory). */
const AGENT = (llm, store, runtimeId) => `
  const { agents, defineTool, pending } = await import(ENTRY)
  const charge = defineTool({ name: "charge", description: "Charge the card", run: (args, ctx) =>
    ctx?.answer ? (ctx.answer.ok ? "charged " + args.amount : "declined") : pending({ kind: "approval", prompt: "Charge 10?" }) })
  const approve = agents.agent("approve", { does: "Charges after approval", uses: { tools: [charge] } })
  const options = { llm: { baseUrl: ${JSON.stringify(llm.url)}, style: "openai", apiKey: "k", model: "m" }${store ? `, store: ${JSON.stringify(store)}, runtimeId: ${JSON.stringify(runtimeId)}` : ""} }
`

for (const [engine, url] of engines("tn-durable-")) {
  test(`${engine}: an approval parked by one process is resumed by another, with one process's trace`, async (t) => {
    const llm = await startLLM(approvalModel)
    t.after(() => llm.close())
    // The whole story in one process, in memory: what the two processes must add up to.
    const whole = await runChild(
      `${AGENT(llm, null)}
      const r1 = await approve.run("Charge the card.", options)
      await r1.runtime.resume({ id: r1.pending.id, ok: true })
      const r2 = await r1.runtime.wait(r1.runtime.root.children[0])
      console.log(JSON.stringify({ r2, trace: r1.runtime.trace }))`,
      { timeoutMs: 30_000 },
    )
    assert.equal(whole.code, 0, whole.stderr)
    const one = JSON.parse(whole.stdout)
    assert.equal(one.r2.text, "final: charged 10")

    const id = unique("rt")
    const first = await runChild(
      `${AGENT(llm, url, id)}
      const r1 = await approve.run("Charge the card.", options)
      console.log(JSON.stringify({ status: r1.status, pending: r1.pending }))
      process.exit(0) // Gone, with nothing left running: the state is in the store.`,
      { timeoutMs: 30_000 },
    )
    assert.equal(first.code, 0, first.stderr)
    const parked = JSON.parse(first.stdout)
    assert.equal(parked.status, "pending")
    assert.equal(parked.pending.kind, "approval")

    const second = await runChild(
      `${AGENT(llm, url, id)}
      const rt = approve.createRuntime(options)
      const before = rt.list().map((v) => [v.id, v.state])
      await rt.resume({ id: ${JSON.stringify(parked.pending.id)}, ok: true })
      const h = rt.root.children[0]
      const r2 = await rt.wait(h)
      console.log(JSON.stringify({ before, r2, trace: rt.trace, ids: rt.list().map((v) => v.id) }))`,
      { timeoutMs: 30_000 },
    )
    assert.equal(second.code, 0, second.stderr)
    const two = JSON.parse(second.stdout)
    assert.deepEqual(two.before, [["root/approve.1", "suspended"]], "the tree is found")
    assert.deepEqual(two.r2, one.r2, "the same result")
    assert.deepEqual(two.trace, one.trace, "the trace of one process")
    assert.deepEqual(two.ids, ["root/approve.1"], "nothing spawned twice")
  })

  test(`${engine}: a runtime whose turn was running when its process was killed comes back interrupted`, async (t) => {
    const llm = await startLLM(() => ({ hang: true }))
    t.after(() => llm.close())
    const id = unique("crash")
    const child = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `${AGENT(llm, url, id).replaceAll("ENTRY", JSON.stringify(ENTRY_URL))}
        const rt = approve.createRuntime(options)
        const h = rt.spawn(rt.root, "approve")
        rt.post(h, { from: "root", channel: "note", text: "remember me" })
        rt.wake(h, "Charge the card.")
        await rt.wait(h, { timeoutMs: 1 }) // settles once the running state is saved
        console.log("running")`,
      ],
      { cwd: REPO, env: cleanEnv(), stdio: ["ignore", "pipe", "inherit"] },
    )
    await new Promise((resolve) => child.stdout.once("data", resolve))
    child.kill("SIGKILL")
    await new Promise((resolve) => child.once("close", resolve))
    const after = await runChild(
      `${AGENT(llm, url, id)}
      const rt = approve.createRuntime(options)
      const h = rt.root.children[0]
      const r = await rt.wait(h)
      console.log(JSON.stringify({ state: rt.inspect(h).state, r, inbox: h.inbox.map((i) => i.text), last: rt.trace.at(-1) }))`,
      { timeoutMs: 30_000 },
    )
    assert.equal(after.code, 0, after.stderr)
    const seen = JSON.parse(after.stdout)
    assert.equal(seen.state, "idle")
    assert.equal(seen.r.status, "interrupted")
    assert.deepEqual(seen.inbox, ["remember me"], "the items its turn took are back")
    assert.equal(seen.last, "root/approve.1: running→idle (interrupted: its turn was running when its process ended)")
  })

  test(`${engine}: two replicas on one store behind one address: contextId conversations carry over, GetTask sees both`, async (t) => {
    const llm = await startLLM((req) => oaText(`seen ${req.json.messages.length}`))
    t.after(() => llm.close())
    const a = await replica(url, llm.url)
    t.after(() => a.kill())
    const b = await replica(url, llm.url)
    t.after(() => b.kill())
    const front = await roundRobin([a.url, b.url])
    t.after(() => front.close())
    const contextId = unique("ctx")
    const send = (text) => rpc(front.url, "SendMessage", { message: { role: "user", contextId, parts: [{ kind: "text", text }] } })
    const first = (await send("hello")).result
    const done1 = await until(front.url, first.id, "completed")
    const second = (await send("again")).result
    const done2 = await until(front.url, second.id, "completed")
    assert.equal(done1.artifacts[0].parts[0].text, "seen 1")
    assert.equal(done2.artifacts[0].parts[0].text, "seen 3", "the second replica continued the first one's conversation")
    assert.ok(front.hits[0] > 0 && front.hits[1] > 0, JSON.stringify(front.hits))
  })

  test(`${engine}: a replica killed mid-Task leaves it failed once its lease runs out, never working forever`, async (t) => {
    const a = await replica(url, null, { TOOLNEXUS_TASK_LEASE_MS: "300" })
    t.after(() => a.kill())
    const b = await replica(url, null, { TOOLNEXUS_TASK_LEASE_MS: "300" })
    t.after(() => b.kill())
    const sent = (await rpc(a.url, "SendMessage", { message: { role: "user", parts: [{ kind: "text", text: "hang" }] } })).result
    await until(b.url, sent.id, "working")
    // Alive, the replica renews its lease: the Task stays working past several lease lengths.
    await new Promise((r) => setTimeout(r, 900))
    assert.equal((await rpc(b.url, "GetTask", { id: sent.id })).result.status.state, "working")
    a.kill()
    const failed = await until(b.url, sent.id, "failed")
    assert.equal(failed.status.message.parts[0].text, "the server running this task stopped before it finished (its lease expired)")
    assert.equal(failed.__toolnexusLease, undefined)
  })
}

test("the store classes: one per engine, each a ConversationStore and a TaskStore, passwords hidden", async (t) => {
  const file = path.join(tmp(), "classes.db")
  const store = new SqliteStore(file)
  assert.equal(store.url, `sqlite:${file}`)
  await store.save("conv-1", [{ role: "user", content: "hi" }])
  await store.save({ id: "task-1", status: { state: "completed" } })
  assert.deepEqual(await store.get("conv-1"), [{ role: "user", content: "hi" }])
  assert.deepEqual(await store.get("task-1"), { id: "task-1", status: { state: "completed" } })
  assert.equal(await store.get("neither"), undefined)

  // As createClient's store: another process reads what ask saved, through the plain URL.
  const llm = await startLLM((req) => oaText(`seen ${req.json.messages.length}`))
  t.after(() => llm.close())
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store })
  await client.ask("hello", { toolkit: await createToolkit({}), id: "conv-2" })
  const r = await runChild(
    `const { resolveStore, createClient, createToolkit, SqliteStore } = await import(ENTRY)
    const s = new SqliteStore(${JSON.stringify(`sqlite:${file}`)})
    console.log(JSON.stringify((await s.get("conv-2")).map((m) => m.role)))`,
    { timeoutMs: 30_000 },
  )
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), ["user", "assistant"])

  // As serve's a2a.store.
  const tk = await createToolkit({})
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: { name: "classes", store } })
  t.after(() => srv.stop())
  const sent = (await rpc(srv.url, "SendMessage", { message: { role: "user", parts: [{ kind: "text", text: "x" }] } })).result
  await until(srv.url, sent.id, "completed")
  assert.equal((await store.get(sent.id)).status.state, "completed")

  assert.throws(() => new PostgresStore("redis://h"), TypeError)
  assert.throws(() => new RedisStore("postgres://u:pw-s3cr3t@h/db"), (e) => e instanceof TypeError && !e.message.includes("pw-s3cr3t"))
  assert.equal(new PostgresStore("postgres://u:pw-s3cr3t@127.0.0.1:1/db").url, "postgres://u:***@127.0.0.1:1/db")
  assert.equal(new RedisStore("redis://:pw-s3cr3t@127.0.0.1:1/0").url, "redis://:***@127.0.0.1:1/0")
})

// ---- helpers ----

/** GetTask until the Task is in `state` (10 s at most). */
async function until(url, id, state) {
  let seen
  for (let i = 0; i < 500; i++) {
    seen = (await rpc(url, "GetTask", { id })).result
    if (seen?.status?.state === state) return seen
    await new Promise((r) => setTimeout(r, 20))
  }
  assert.fail(`task ${id} never became ${state}: ${JSON.stringify(seen)}`)
}

/**
 * A served replica in its own process on `store`: with an LLM, a toolkit served with a client
 * keeping conversations on the store; without, an A2A server whose Tasks never finish.
 */
async function replica(store, llmUrl, env = {}) {
  const program = llmUrl
    ? `const { createClient, createToolkit } = await import(${JSON.stringify(ENTRY_URL)})
      const client = createClient({ baseUrl: ${JSON.stringify(llmUrl)}, style: "openai", model: "m", apiKey: "k", store: ${JSON.stringify(store)} })
      const tk = await createToolkit({})
      const srv = await tk.serve("127.0.0.1:0", { client, a2a: { name: "replica", store: ${JSON.stringify(store)} } })
      console.log(srv.url)`
    : `const { startA2AServer } = await import(${JSON.stringify(ENTRY_URL)})
      const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: { name: "replica", store: ${JSON.stringify(store)} },
        runTask: () => new Promise(() => setInterval(() => {}, 1000)) })
      console.log(srv.url)`
  const child = spawn(process.execPath, ["--input-type=module", "-e", program], {
    cwd: REPO,
    env: { ...cleanEnv(), ...env },
    stdio: ["ignore", "pipe", "inherit"],
  })
  const url = await new Promise((resolve, reject) => {
    child.stdout.once("data", (d) => resolve(String(d).trim()))
    child.once("exit", (code) => reject(new Error(`the replica exited (${code})`)))
  })
  return { url, kill: () => child.kill("SIGKILL") }
}

/** A small front: each request goes to the next backend in turn. */
async function roundRobin(backends) {
  const hits = backends.map(() => 0)
  let next = 0
  const server = http.createServer((req, res) => {
    const i = next++ % backends.length
    hits[i]++
    const target = new URL(req.url, backends[i])
    const out = http.request(target, { method: req.method, headers: req.headers }, (back) => {
      res.writeHead(back.statusCode ?? 502, back.headers)
      back.pipe(res)
    })
    out.on("error", () => {
      res.writeHead(502)
      res.end()
    })
    req.pipe(out)
  })
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
