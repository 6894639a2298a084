// Serving a toolkit (SPEC §7B): startA2AServer and toolkit.serve over real HTTP, the Agent Card,
// the Task stores, the guards this package adds, the official A2A SDK as a peer, and the life of
// the Node process around a server.

import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import {
  startA2AServer,
  buildAgentCard,
  resolveStore,
  InMemoryTaskStore,
  FileTaskStore,
  createToolkit,
  createClient,
} from "../index.js"
import { DefaultAgentCardResolver, JsonRpcTransportFactory, ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client"
import { spawn } from "node:child_process"
import { startLLM, oaText, within, cleanEnv, ENTRY_URL, REPO } from "./support/llm.mjs"

const echo = async (text, contextId) => {
  if (text.includes("boom")) throw new Error("runner exploded")
  if (text.includes("wait")) return { text: "", status: "pending", pending: { id: "p", kind: "approval", prompt: "Approve?" } }
  return { text: `echo: ${text}${contextId ? ` @${contextId}` : ""}`, status: "done" }
}

async function rpc(url, method, params, headers = {}) {
  const res = await fetch(url + "/", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
  })
  return res.json()
}

const message = (text, contextId) => ({ message: { role: "user", parts: [{ kind: "text", text }], ...(contextId ? { contextId } : {}) } })

async function settled(url, id) {
  for (let i = 0; i < 300; i++) {
    const env = await rpc(url, "GetTask", { id })
    const state = env.result?.status?.state
    if (state && state !== "submitted" && state !== "working") return env.result
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`task ${id} never settled`)
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "tn-serve-"))

// ---- buildAgentCard --------------------------------------------------------------------

test("buildAgentCard: pinned defaults, key order, provider only when set, skills filtered by name", () => {
  const skills = [
    { name: "a", description: "A", location: "-", content: "" },
    { name: "b", location: "-", content: "" },
  ]
  const card = buildAgentCard({}, skills, "http://x/")
  assert.deepEqual(Object.keys(card), [
    "name", "description", "version", "protocolVersion", "capabilities", "defaultInputModes", "defaultOutputModes", "skills", "url",
  ])
  assert.deepEqual(card.skills, [
    { id: "a", name: "a", description: "A" },
    { id: "b", name: "b", description: "" },
  ])
  assert.equal(card.name, "toolnexus-agent")
  const named = buildAgentCard({ name: "n", provider: { organization: "o", url: "u" }, skills: ["b"] }, skills, "http://x/")
  assert.deepEqual(named.skills.map((s) => s.id), ["b"])
  assert.deepEqual(named.provider, { organization: "o", url: "u" })
  assert.equal(Object.keys(named).at(-1), "provider")
})

// ---- stores ----------------------------------------------------------------------------

test("Task stores: real classes, async get/save, resolveStore's selectors and its exact error", async () => {
  const mem = new InMemoryTaskStore()
  assert.ok(mem.save({ id: "t", status: { state: "working" } }) instanceof Promise)
  assert.deepEqual(await mem.get("t"), { id: "t", status: { state: "working" } })
  assert.equal(await mem.get("nope"), undefined)
  const dir = path.join(tmp(), "deep", "er")
  const file = new FileTaskStore(dir)
  assert.ok(fs.statSync(dir).isDirectory(), "the directory is made by the constructor")
  assert.ok(file instanceof FileTaskStore && !(file instanceof InMemoryTaskStore))
  await file.save({ id: "a/b", status: { state: "completed" } })
  await file.save({ id: "a_b", status: { state: "failed" } })
  await file.save({ id: "abc-123", status: { state: "working" } })
  assert.equal((await file.get("a/b")).status.state, "completed", "ids that sanitize alike stay apart")
  assert.equal((await file.get("a_b")).status.state, "failed")
  assert.ok(fs.existsSync(path.join(dir, "abc-123.json")))
  assert.equal(fs.readdirSync(dir).length, 3)
  assert.ok(resolveStore() instanceof InMemoryTaskStore)
  assert.ok(resolveStore("memory") instanceof InMemoryTaskStore)
  assert.ok(resolveStore(`file:${dir}`) instanceof FileTaskStore)
  const own = { get() {}, save() {} }
  assert.equal(resolveStore(own), own)
  assert.throws(() => resolveStore("redis:x"), { message: 'Unknown A2A store: "redis:x" (expected "memory" or "file:<dir>")' })
})

// ---- startA2AServer ----------------------------------------------------------------------

test("startA2AServer: no profile ⇒ every route 404s", async () => {
  const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], runTask: echo })
  assert.match(srv.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  for (const [method, p] of [["GET", "/.well-known/agent-card.json"], ["POST", "/"]]) {
    const res = await fetch(srv.url + p, { method })
    assert.equal(res.status, 404)
    assert.equal(await res.text(), "not found")
  }
  // The handle's shape is the reference's: `url`, and `stop` and `close` as two functions.
  assert.deepEqual(Object.keys(srv), ["url", "stop", "close"])
  assert.notEqual(srv.stop, srv.close)
  // The addition is there, out of the keys.
  assert.equal(typeof srv.notifyResourceUpdated, "function")
  assert.equal(srv.notifyResourceUpdated("x://y"), 0)
  await srv.stop()
  await srv.close()
})

test("startA2AServer: submitted at once, then completed / input-required / failed, with onTask for each", async () => {
  const events = []
  const srv = await startA2AServer({
    addr: ":0",
    skills: [{ name: "echo", description: "Echoes", location: "-", content: "" }],
    a2a: { name: "runner" },
    runTask: echo,
    onTask: async (ev) => {
      events.push(ev)
      throw new Error("an onTask failure is isolated")
    },
  })
  try {
    const card = await (await fetch(srv.url + "/.well-known/agent-card.json")).json()
    assert.equal(card.url, srv.url + "/")
    assert.deepEqual(card.skills, [{ id: "echo", name: "echo", description: "Echoes", tags: ["echo"] }])

    const sent = await rpc(srv.url, "SendMessage", message("hi", "c1"))
    assert.equal(sent.id, 7)
    assert.deepEqual(Object.keys(sent.result), ["id", "contextId", "status"])
    assert.equal(sent.result.status.state, "submitted")
    const done = await settled(srv.url, sent.result.id)
    assert.equal(done.status.state, "completed")
    assert.equal(done.contextId, "c1", "the context stays on every saved state")
    assert.equal(done.artifacts[0].parts[0].text, "echo: hi @c1")

    const waiting = await settled(srv.url, (await rpc(srv.url, "SendMessage", message("wait"))).result.id)
    assert.deepEqual(waiting.status, { state: "input-required", message: { role: "agent", parts: [{ kind: "text", text: "Approve?" }] } })
    const failed = await settled(srv.url, (await rpc(srv.url, "SendMessage", message("boom"))).result.id)
    assert.equal(failed.status.message.parts[0].text, "runner exploded")

    await within(2000, (async () => { while (events.length < 3) await new Promise((r) => setTimeout(r, 5)) })(), "onTask")
    assert.deepEqual(events.map((e) => e.state), ["completed", "input-required", "failed"])
    assert.deepEqual(Object.keys(events[0]), ["id", "task", "result", "state"])
    assert.equal(events[0].result.text, "echo: hi @c1")
    // A failed task's event has the reference's keys too, `result` undefined.
    assert.deepEqual(Object.keys(events[2]), ["id", "task", "result", "state"])
    assert.equal(events[2].result, undefined)

    assert.deepEqual((await rpc(srv.url, "GetTask", { id: "zz" })).error, { code: -32001, message: "Task not found: zz" })
    assert.deepEqual((await rpc(srv.url, "tasks/cancel", {})).error, { code: -32001, message: "Task not found: " }, "A2A's cancel is served (issue 27)")
    assert.deepEqual((await rpc(srv.url, "tasks/resubscribe", {})).error, { code: -32601, message: "Method not found: tasks/resubscribe" })
    assert.deepEqual((await rpc(srv.url, "tasks/get", { id: "nope" })).error, { code: -32001, message: "Task not found: nope" }, "A2A 0.3's name for GetTask is served (issue 27)")
    const bad = await (await fetch(srv.url + "/", { method: "POST", body: "{" })).json()
    assert.deepEqual(bad, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } })
  } finally {
    await srv.stop()
  }
})

test("a user store (sync or async) sees every transition; one that rejects is a JSON-RPC error and the server goes on", async () => {
  const states = []
  const map = new Map()
  let failSave = 1
  let failGet = 1
  const store = {
    save(task) {
      if (failSave-- > 0) return Promise.reject(new Error("disk full"))
      states.push(task.status.state)
      map.set(task.id, task) // synchronous answer
    },
    async get(id) {
      if (failGet-- > 0) throw new Error("db down")
      return map.get(id)
    },
  }
  const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: { store }, runTask: echo })
  try {
    assert.deepEqual((await rpc(srv.url, "SendMessage", message("x"))).error, { code: -32603, message: "disk full" })
    assert.deepEqual((await rpc(srv.url, "GetTask", { id: "x" })).error, { code: -32603, message: "db down" })
    const ok = await rpc(srv.url, "SendMessage", message("y"))
    assert.equal((await settled(srv.url, ok.result.id)).status.state, "completed")
    assert.deepEqual(states, ["submitted", "working", "completed"])
  } finally {
    await srv.stop()
  }
})

test("a subclass of a shipped store keeps its overrides; the shipped classes run natively", async () => {
  class Spy extends InMemoryTaskStore {
    seen = []
    async save(task) {
      this.seen.push(task.status.state)
      return super.save(task)
    }
  }
  const spy = new Spy()
  const dir = tmp()
  for (const store of [spy, new FileTaskStore(dir)]) {
    const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: { store }, runTask: echo })
    const sent = await rpc(srv.url, "SendMessage", message("z"))
    assert.equal((await settled(srv.url, sent.result.id)).status.state, "completed")
    assert.equal((await store.get(sent.result.id)).status.state, "completed")
    await srv.stop()
  }
  assert.deepEqual(spy.seen, ["submitted", "working", "completed"])
  assert.equal(fs.readdirSync(dir).length, 1)
})

// ---- toolkit.serve ---------------------------------------------------------------------

test("toolkit.serve: client.ask keyed by the A2A contextId remembers a peer's turns; client.run without one", async () => {
  const llm = await startLLM([oaText("first"), oaText("second"), oaText("third")])
  const tk = await createToolkit({ builtins: false })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: { name: "mem" } })
  try {
    const a = await rpc(srv.url, "SendMessage", message("one", "ctx"))
    assert.equal((await settled(srv.url, a.result.id)).artifacts[0].parts[0].text, "first")
    const b = await rpc(srv.url, "SendMessage", message("two", "ctx"))
    assert.equal((await settled(srv.url, b.result.id)).artifacts[0].parts[0].text, "second")
    const c = await rpc(srv.url, "SendMessage", message("three"))
    await settled(srv.url, c.result.id)
    const users = (i) => llm.requests[i].json.messages.filter((m) => m.role === "user").map((m) => m.content)
    assert.deepEqual(users(1), ["one", "two"], "the second turn of a context carries the first")
    assert.deepEqual(users(2), ["three"], "no context: a fresh run")
  } finally {
    await srv.stop()
    await llm.close()
  }
})

test("toolkit.serve without a client fails the Task as the reference's TypeError does; the config's a2a block is the fallback", async () => {
  const tk = await createToolkit({ builtins: false, mcpConfig: { mcpServers: {}, a2a: { name: "from-config" } } })
  const srv = await tk.serve("127.0.0.1:0", {})
  try {
    const card = await (await fetch(srv.url + "/.well-known/agent-card.json")).json()
    assert.equal(card.name, "from-config")
    const t = await settled(srv.url, (await rpc(srv.url, "SendMessage", message("x"))).result.id)
    assert.equal(t.status.state, "failed")
    assert.match(t.status.message.parts[0].text, /Cannot read properties of undefined \(reading 'run'\)/)
  } finally {
    await srv.stop()
  }
  const plain = await (await createToolkit({ builtins: false })).serve("127.0.0.1:0", {})
  assert.equal((await fetch(plain.url + "/.well-known/agent-card.json")).status, 404, "no profile anywhere")
  await plain.stop()
})

test("a store object in the config's a2a block is the one toolkit.serve uses", async () => {
  const saved = []
  const tasks = new Map()
  const store = { save: async (t) => { saved.push(t.status.state); tasks.set(t.id, t) }, get: async (id) => tasks.get(id) }
  const tk = await createToolkit({ builtins: false, mcpConfig: { mcpServers: {}, a2a: { name: "cfg", store } } })
  const srv = await tk.serve("127.0.0.1:0", { client: { run: async (text) => ({ text: text.toUpperCase(), status: "done" }) } })
  try {
    const t = await settled(srv.url, (await rpc(srv.url, "SendMessage", message("quiet"))).result.id)
    assert.equal(t.artifacts[0].parts[0].text, "QUIET", "any object with run/ask serves as the client")
    assert.deepEqual(saved, ["submitted", "working", "completed"])
  } finally {
    await srv.stop()
  }
})

test("serve guards: bearer auth (card stays public), a body cap with 413, a warning for open addresses with risky tools", async () => {
  const tk = await createToolkit({ builtins: true })
  const srv = await tk.serve("127.0.0.1:0", { a2a: {}, auth: "tok", maxBodyBytes: 1024 })
  try {
    assert.equal((await fetch(srv.url + "/", { method: "POST", body: "{}" })).status, 401)
    assert.equal((await fetch(srv.url + "/", { method: "POST", body: "{}", headers: { authorization: "Bearer nope" } })).status, 401)
    const ok = await rpc(srv.url, "GetTask", { id: "q" }, { authorization: "Bearer tok" })
    assert.equal(ok.error.code, -32001)
    assert.equal((await fetch(srv.url + "/.well-known/agent-card.json")).status, 200)
    const big = await fetch(srv.url + "/", { method: "POST", body: "x".repeat(5000), headers: { authorization: "Bearer tok" } })
    assert.equal(big.status, 413)
  } finally {
    await srv.stop()
  }
  const warned = []
  const orig = console.warn
  console.warn = (t) => warned.push(String(t))
  try {
    const open = await tk.serve("0.0.0.0:0", { a2a: {} })
    assert.equal(open.url.startsWith("http://127.0.0.1:"), true, "0.0.0.0 is reported as 127.0.0.1")
    await open.stop()
    const guarded = await tk.serve("0.0.0.0:0", { a2a: {}, auth: { token: "t" } })
    await guarded.stop()
  } finally {
    console.warn = orig
  }
  assert.equal(warned.length, 1)
  assert.match(warned[0], /^\[toolnexus\] serve: 0\.0\.0\.0:0 .*bash, write, edit, apply_patch/)
})

// ---- the official A2A SDK as the peer ------------------------------------------------------

test("@a2a-js/sdk 1.3.0 as the client, in process: our card's interfaces, both of its transports, SPEC's wire beside them", async () => {
  const llm = await startLLM((req) => oaText(`SDK DONE: ${req.json.messages.at(-1).content}`))
  const tk = await createToolkit({ builtins: false, skills: [{ name: "s1", description: "d", content: "c" }] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const events = []
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: { name: "sdk-peer" }, onTask: (e) => events.push(e) })
  try {
    // The card lists one endpoint for both generations, and each skill has the tags the SDK wants.
    const card = await new DefaultAgentCardResolver().resolve(srv.url)
    assert.equal(card.name, "sdk-peer")
    assert.deepEqual(card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]), [
      [srv.url + "/", "JSONRPC", "1.0"],
      [srv.url + "/", "JSONRPC", "0.3"],
    ])
    assert.deepEqual(card.skills.map((s) => s.tags), [["s1"]])

    // v1.0: the send waits for the Task (the SDK's default) and answers `{ task }` in 1.0's spelling.
    const sdk = await new ClientFactory().createFromUrl(srv.url)
    const sent = await sdk.sendMessage({ message: { messageId: "m1", contextId: "sdk-ctx", role: 1, parts: [{ content: { $case: "text", value: "from the sdk" } }] } })
    assert.equal(sent.status.state, 3, "TASK_STATE_COMPLETED")
    assert.equal(sent.contextId, "sdk-ctx")
    assert.equal(sent.artifacts[0].parts[0].content.value, "SDK DONE: from the sdk")
    const got = await sdk.getTask({ id: sent.id })
    assert.equal(got.status.state, 3)

    // v0.3 through the SDK's compatibility transport: the older method names, answered in 0.3's shapes.
    const legacy = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
        transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
        preferredTransports: ["JSONRPC"],
      }),
    ).createFromUrl(srv.url)
    const old = await legacy.sendMessage({ message: { messageId: "m2", role: 1, parts: [{ content: { $case: "text", value: "x" } }] } })
    assert.equal(old.status.state, 3)
    assert.ok(old.contextId, "a Task always carries a contextId for the SDKs")

    // SPEC's wire is untouched for toolnexus peers: the bare Task, answered at once.
    const transport = await new JsonRpcTransportFactory().create(card.supportedInterfaces[0].url, card)
    const raw = await transport.callExtensionMethod("SendMessage", message("raw call"))
    assert.equal(raw.result.status.state, "submitted")
    assert.equal(raw.result.kind, undefined)
    await within(5000, (async () => { while (events.length < 3) await new Promise((r) => setTimeout(r, 10)) })(), "the Tasks")
  } finally {
    await srv.stop()
    await llm.close()
  }
})

// ---- the life of the process ---------------------------------------------------------------

/** Start a Node child running `source` (ENTRY: the package); resolves its first stdout line. */
function spawnServing(source, env = {}) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", source.replaceAll("ENTRY", JSON.stringify(ENTRY_URL))], {
    cwd: REPO,
    env: { ...cleanEnv(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let out = ""
  let err = ""
  child.stderr.on("data", (d) => (err += d))
  const exited = new Promise((resolve) => child.on("close", (code) => resolve({ code, out, err })))
  const firstLine = new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d
      if (out.includes("\n")) resolve(out.split("\n")[0])
    })
    child.on("close", () => reject(new Error(`child ended early: ${err}`)))
  })
  const kill = setTimeout(() => child.kill("SIGKILL"), 30_000)
  exited.finally(() => clearTimeout(kill))
  return { child, firstLine, exited }
}

const stillRunning = (exited, ms) => Promise.race([exited.then(() => false), new Promise((r) => setTimeout(() => r(true), ms))])

test("a running server keeps Node alive like an http server; once stopped the process exits by itself", async () => {
  // The child serves and has nothing else to do. A Task's runner stops the server: the child
  // must be there to take it, then end with nothing left.
  const { firstLine, exited } = spawnServing(`
    import { startA2AServer } from ENTRY
    const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: {},
      runTask: async (text) => { setImmediate(() => srv.stop().then(() => console.log("stopped"))); return { text, status: "done" } } })
    console.log(srv.url)`)
  const url = await within(10_000, firstLine, "the child's URL")
  assert.equal(await stillRunning(exited, 700), true, "nothing but the server holds the process up")
  assert.equal((await fetch(url + "/.well-known/agent-card.json")).status, 200)
  const sent = await rpc(url, "SendMessage", message("bye"))
  assert.equal(sent.result.status.state, "submitted")
  const { code, out, err } = await within(10_000, exited, "the child's exit")
  assert.equal(code, 0, err)
  assert.match(out, /stopped/)
})

test("toolkit.serve's server is stopped twice without harm and the process then ends; a stopped port is free again", async () => {
  const { firstLine, exited } = spawnServing(`
    import { createToolkit } from ENTRY
    import net from "node:net"
    const tk = await createToolkit({ builtins: false })
    const srv = await tk.serve("127.0.0.1:0", { a2a: {} })
    const port = Number(new URL(srv.url).port)
    await Promise.all([srv.stop(), srv.close()])
    await srv.stop()
    const again = net.createServer()
    await new Promise((ok, no) => { again.once("error", no); again.listen(port, "127.0.0.1", ok) })
    again.close()
    console.log("done " + port)`)
  assert.match(await within(10_000, firstLine, "the child's report"), /^done \d+$/)
  const { code, err } = await within(10_000, exited, "the child's exit")
  assert.equal(code, 0, err)
})

test("a server started in a worker ends with the worker (terminated or exited): its port is free and refused, its connections end, the process exits", async () => {
  // issue 27 item 4: before, the server outlived its worker, still bound and answering.
  const { firstLine, exited } = spawnServing(`
    import { Worker } from "node:worker_threads"
    import { once } from "node:events"
    import net from "node:net"
    import path from "node:path"
    import { fileURLToPath } from "node:url"
    import { createToolkit } from ENTRY
    const entry = path.join(path.dirname(fileURLToPath(ENTRY)), "index.js")
    const card = (port) => fetch("http://127.0.0.1:" + port + "/.well-known/agent-card.json").then((r) => r.json())
    const refused = async (port) => {
      // The listener closes on the runtime once the environment's cleanup has run: give it 2 s.
      for (let i = 0; i < 100; i++) {
        const s = net.connect(port, "127.0.0.1")
        const outcome = await new Promise((ok) => { s.once("connect", () => ok("accepted")); s.once("error", (e) => ok(e.code)) })
        s.destroy()
        if (outcome === "ECONNREFUSED") return true
        await new Promise((r) => setTimeout(r, 20))
      }
      return false
    }
    const serveIn = async (port, name, end) => {
      const w = new Worker(\`
        const { parentPort, workerData } = require("node:worker_threads")
        const t = require(workerData.entry)
        ;(async () => {
          const tk = await t.createToolkit({ builtins: false })
          const srv = await tk.serve("127.0.0.1:" + workerData.port, { a2a: { name: workerData.name } })
          parentPort.postMessage(srv.url)
          parentPort.once("message", () => process.exit(0))
        })().catch((e) => { console.error(e); process.exit(3) })\`, { eval: true, execArgv: [], workerData: { entry, port, name } })
      const [url] = await once(w, "message")
      return { w, url }
    }
    const probe = net.createServer()
    await new Promise((ok) => probe.listen(0, "127.0.0.1", ok))
    const port = probe.address().port
    await new Promise((ok) => probe.close(ok))
    const report = []
    // 1. worker.terminate(), with a connection open to its server.
    {
      const { w, url } = await serveIn(port, "first")
      report.push(url === "http://127.0.0.1:" + port, (await card(port)).name)
      const open = net.connect(port, "127.0.0.1")
      // The worker's end may close this connection with a FIN or a reset: either ends it.
      open.on("error", () => {})
      await once(open, "connect")
      const ended = new Promise((ok) => open.once("close", () => ok("closed")))
      await w.terminate()
      report.push(await Promise.race([ended, new Promise((ok) => setTimeout(() => ok("still open"), 2000))]))
      report.push(await refused(port))
    }
    // 2. the worker ends itself (process.exit inside it); a second worker takes the port.
    {
      const { w } = await serveIn(port, "second")
      report.push((await card(port)).name)
      w.postMessage("exit")
      const [code] = await once(w, "exit")
      report.push(code, await refused(port))
      const third = await serveIn(port, "third")
      report.push((await card(port)).name)
      await third.w.terminate()
      report.push(await refused(port))
    }
    // 3. the main thread serves the same port.
    const tk = await createToolkit({ builtins: false })
    const srv = await tk.serve("127.0.0.1:" + port, { a2a: { name: "main" } })
    report.push((await card(port)).name)
    await srv.stop()
    console.log(JSON.stringify(report))`)
  const line = await within(30_000, firstLine, "the child's report")
  assert.deepEqual(JSON.parse(line), [true, "first", "closed", true, "second", 0, true, "third", true, "main"])
  const { code, err } = await within(10_000, exited, "the child's exit")
  assert.equal(code, 0, err)
})

// ---- bodies: over the cap, trickling in (issue 27 item 4) -------------------------------

/** A raw exchange on a net.Socket: write `head` and `body` whole, then read until the server
 * closes. Rejects with the socket's error (a reset, EPIPE) as a client still sending sees it. */
async function rawExchange(url, head, body) {
  const { hostname, port } = new URL(url)
  const net = await import("node:net")
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname)
    const got = []
    sock.on("data", (d) => got.push(d))
    sock.on("error", reject)
    sock.on("close", () => resolve(Buffer.concat(got).toString("latin1")))
    sock.write(head)
    sock.write(body)
  })
}

function chunkedBody(size, chunk = 64 * 1024) {
  const parts = []
  for (let sent = 0; sent < size; sent += chunk) parts.push(Buffer.from(chunk.toString(16) + "\r\n"), Buffer.alloc(chunk, 120), Buffer.from("\r\n"))
  parts.push(Buffer.from("0\r\n\r\n"))
  return Buffer.concat(parts)
}

test("an over-cap body gets its 413 to the client, declared or chunked, through fetch and a raw socket, while the client is still sending", async () => {
  // Before, the server closed with the body unread: a client still sending saw EPIPE or a reset.
  const tk = await createToolkit({ builtins: false })
  const srv = await tk.serve("127.0.0.1:0", { a2a: {}, maxBodyBytes: 1024 })
  const size = 8 * 1024 * 1024
  const outcome = (p) => p.then((r) => r.status, (e) => `${e.message} (${e.cause?.code ?? e.cause?.message ?? ""})`)
  try {
    async function* chunks(n) {
      for (let i = 0; i < n; i++) yield new Uint8Array(64 * 1024)
    }
    const { host } = new URL(srv.url)
    for (let round = 0; round < 3; round++) {
      assert.equal(await outcome(fetch(srv.url + "/", { method: "POST", body: "x".repeat(size) })), 413, `fetch, declared, round ${round}`)
      const streamed = fetch(srv.url + "/", { method: "POST", body: ReadableStream.from(chunks(size / (64 * 1024))), duplex: "half" })
      assert.equal(await outcome(streamed), 413, `fetch, chunked, round ${round}`)
      const declared = await rawExchange(srv.url, `POST / HTTP/1.1\r\nhost: ${host}\r\ncontent-length: ${size}\r\n\r\n`, Buffer.alloc(size, 120))
      assert.match(declared, /^HTTP\/1\.1 413 /, `raw, declared, round ${round}`)
      const chunked = await rawExchange(srv.url, `POST / HTTP/1.1\r\nhost: ${host}\r\ntransfer-encoding: chunked\r\n\r\n`, chunkedBody(size))
      assert.match(chunked, /^HTTP\/1\.1 413 /, `raw, chunked, round ${round}`)
    }
    // The server goes on.
    assert.equal((await fetch(srv.url + "/.well-known/agent-card.json")).status, 200)
  } finally {
    await srv.stop()
  }
})

test("a body trickling in after its headers is answered 408 at the body timeout and its connection freed", async () => {
  // The timeout is 30 s; TOOLNEXUS_BODY_TIMEOUT_MS (read by the core when a server starts) makes it 300 ms here.
  const { child, firstLine, exited } = spawnServing(`
    import { createToolkit } from ENTRY
    const tk = await createToolkit({ builtins: false })
    const srv = await tk.serve("127.0.0.1:0", { a2a: {} })
    console.log(srv.url)`, { TOOLNEXUS_BODY_TIMEOUT_MS: "300" })
  try {
    const url = await within(10_000, firstLine, "the child's URL")
    const { hostname, port, host } = new URL(url)
    const net = await import("node:net")
    const sock = net.connect(Number(port), hostname)
    await new Promise((ok, no) => { sock.once("connect", ok); sock.once("error", no) })
    sock.on("error", () => {})
    const started = Date.now()
    sock.write(`POST / HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n`)
    // One byte every 100 ms: the connection is never idle long, the body never complete.
    let sent = 0
    const trickle = setInterval(() => {
      if (!sock.destroyed && sock.writable) {
        sock.write("x")
        sent++
      }
    }, 100)
    const got = []
    sock.on("data", (d) => got.push(d))
    const closed = new Promise((ok) => sock.once("close", ok))
    try {
      await within(2_000 + 2_000 + 1_000, closed, "the server closing the connection")
    } finally {
      clearInterval(trickle)
    }
    const took = Date.now() - started
    assert.match(Buffer.concat(got).toString("latin1"), /^HTTP\/1\.1 408 /)
    assert.ok(took >= 250, `answered at the timeout, not before: ${took} ms`)
    assert.ok(sent < 60, `the trickle was cut off: ${sent} bytes`)
    // The server goes on.
    assert.equal((await fetch(url + "/.well-known/agent-card.json")).status, 200)
  } finally {
    child.kill()
    await exited
  }
})
