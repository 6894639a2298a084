// Durable stores named by URL (issue 26): `sqlite:<path>` always, PostgreSQL and Redis when
// `.ci/run` (scripts/engines.sh) started them and named them in TOOLNEXUS_TEST_POSTGRES /
// TOOLNEXUS_TEST_REDIS. Every case crosses real processes: what one process saved, another reads.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { createClient, createToolkit, resolveStore } from "../index.js"
import { engines, unique, rpc } from "./support/engines.mjs"
import { startLLM, oaText, runChild, closedPort, cleanEnv, ENTRY_URL, REPO } from "./support/llm.mjs"

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "tn-stores-"))

for (const [engine, url] of engines("tn-stores-")) {
  test(`${engine}: ask() in one process continues the conversation another process saved`, async (t) => {
    const llm = await startLLM((req) => oaText(`seen ${req.json.messages.length}`))
    t.after(() => llm.close())
    const id = unique("conv")
    const turn = (prompt) =>
      runChild(
        `
        const { createClient, createToolkit } = await import(ENTRY)
        const client = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k", store: ${JSON.stringify(url)} })
        const r = await client.ask(${JSON.stringify(prompt)}, { toolkit: await createToolkit({}), id: ${JSON.stringify(id)} })
        console.log(r.text)
      `,
        { timeoutMs: 30_000 },
      )
    const first = await turn("hello")
    assert.equal(first.code, 0, first.stderr)
    assert.equal(first.stdout, "seen 1\n")
    const second = await turn("again")
    assert.equal(second.code, 0, second.stderr)
    assert.equal(second.stdout, "seen 3\n", "the second process sent the first one's turn back")
    assert.deepEqual(
      llm.requests[1].json.messages.map((m) => [m.role, m.content]),
      [["user", "hello"], ["assistant", "seen 1"], ["user", "again"]],
    )
    // And this process reads it too, through the same URL.
    const here = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: url })
    const third = await here.ask("third", { toolkit: await createToolkit({}), id })
    assert.equal(third.text, "seen 5")
  })

  test(`${engine}: resolveStore(url) keeps Tasks another process reads`, async () => {
    const id = unique("task")
    const store = resolveStore(url)
    assert.equal(await store.get(id), undefined)
    await store.save({ id, contextId: "c", status: { state: "working", message: { text: "ü 🙂" } } })
    const r = await runChild(
      `
      const { resolveStore } = await import(ENTRY)
      const store = resolveStore(${JSON.stringify(url)})
      const task = await store.get(${JSON.stringify(id)})
      console.log(JSON.stringify(task))
    `,
      { timeoutMs: 30_000 },
    )
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { id, contextId: "c", status: { state: "working", message: { text: "ü 🙂" } } })
  })

  test(`${engine}: two served processes on one store answer GetTask for each other's Tasks`, async (t) => {
    const a = await serveChild(url)
    t.after(() => a.kill())
    const b = await serveChild(url)
    t.after(() => b.kill())
    const sent = await rpc(a.url, "SendMessage", { message: { role: "user", parts: [{ kind: "text", text: "hi" }] } })
    const id = sent.result.id
    let seen
    for (let i = 0; i < 300; i++) {
      seen = (await rpc(b.url, "GetTask", { id })).result
      if (seen?.status?.state === "completed") break
      await new Promise((r) => setTimeout(r, 10))
    }
    assert.equal(seen?.status?.state, "completed", JSON.stringify(seen))
    assert.equal(seen.id, id)
  })
}

test("a store URL whose engine is down fails the call that needs it, clearly, without its password", async (t) => {
  const llm = await startLLM(() => oaText("never"))
  t.after(() => llm.close())
  const port = await closedPort()
  for (const url of [`postgres://app:pw-s3cr3t@127.0.0.1:${port}/db?connect_timeout=2`, `redis://:pw-s3cr3t@127.0.0.1:${port}/0`]) {
    // Accepted at construction, as the reference accepts any store there.
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: url })
    const e = await client.ask("hi", { toolkit: await createToolkit({}), id: "x" }).then(
      () => assert.fail("the ask succeeded"),
      (e) => e,
    )
    assert.ok(e instanceof Error)
    assert.equal(e.code, "ESTOREUNAVAILABLE", e.message)
    assert.ok(!e.message.includes("pw-s3cr3t"), e.message)
    assert.ok(e.message.includes(`127.0.0.1:${port}`), e.message)
    assert.equal(llm.requests.length, 0, "no model call without the conversation")
    const task = await resolveStore(url).get("t").then(
      () => assert.fail("the get succeeded"),
      (e) => e,
    )
    assert.equal(task.code, "ESTOREUNAVAILABLE")
    assert.ok(!task.message.includes("pw-s3cr3t"), task.message)
  }
})

/** An A2A server in its own process on `store`: resolves { url, kill }. */
async function serveChild(store) {
  const child = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `
      const { startA2AServer } = await import(${JSON.stringify(ENTRY_URL)})
      const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: { name: "replica", store: ${JSON.stringify(store)} },
        runTask: async (text) => ({ text: "echo " + text + " from " + process.pid, status: "done" }) })
      console.log(srv.url)
    `,
    ],
    { cwd: REPO, env: cleanEnv(), stdio: ["ignore", "pipe", "inherit"] },
  )
  const url = await new Promise((resolve, reject) => {
    child.stdout.once("data", (d) => resolve(String(d).trim()))
    child.once("exit", (code) => reject(new Error(`the server exited (${code})`)))
  })
  return { url, kill: () => child.kill("SIGKILL") }
}

test("in-memory stores keep maxEntries entries, the least recently used going first; running Tasks always stay", async () => {
  const { InMemoryConversationStore, InMemoryTaskStore } = await import("../index.js")
  const convos = new InMemoryConversationStore({ maxEntries: 2 })
  await convos.save("a", [{ role: "user", content: "a" }])
  await convos.save("b", [{ role: "user", content: "b" }])
  await convos.get("a")
  await convos.save("c", [{ role: "user", content: "c" }])
  assert.deepEqual([!!(await convos.get("a")), !!(await convos.get("b")), !!(await convos.get("c"))], [true, false, true])

  const tasks = new InMemoryTaskStore({ maxEntries: 1 })
  await tasks.save({ id: "run", status: { state: "working" } })
  await tasks.save({ id: "d1", status: { state: "completed" } })
  await tasks.save({ id: "d2", status: { state: "completed" } })
  assert.equal((await tasks.get("run")).status.state, "working")
  assert.equal(await tasks.get("d1"), undefined)
  assert.equal((await tasks.get("d2")).id, "d2")

  // The default is bounded too, and the reference's no-argument forms still work.
  const plain = new InMemoryTaskStore()
  for (let i = 0; i < 1100; i++) await plain.save({ id: `t${i}`, status: { state: "completed" } })
  assert.equal(await plain.get("t0"), undefined)
  assert.equal((await plain.get("t1099")).id, "t1099")
  assert.ok(new InMemoryConversationStore(5) instanceof InMemoryConversationStore, "a non-object argument is ignored, as the reference ignores it")

  for (const bad of [0, -1, 1.5, "3"]) {
    assert.throws(() => new InMemoryTaskStore({ maxEntries: bad }), { name: "TypeError", message: /^InMemoryTaskStore: maxEntries must be a positive integer \(got / })
    assert.throws(() => new InMemoryConversationStore({ maxEntries: bad }), { name: "TypeError", message: /^InMemoryConversationStore: maxEntries/ })
  }
})

test("the store classes and `store` strings learn a URL's engine from one rule, its scheme in any case", async (t) => {
  const { SqliteStore, PostgresStore, RedisStore } = await import("../index.js")
  const dir = tmp()
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, "upper.db")
  const upper = `SQLite:${file}`
  // A scheme in capitals names the same engine: the class keeps the URL and opens the file it names.
  const store = new SqliteStore(upper)
  await store.save("c1", [{ role: "user", content: "hi" }])
  assert.ok(fs.existsSync(file), "the file the URL names, not one called SQLite:…")
  assert.deepEqual(await new SqliteStore(file).get("c1"), [{ role: "user", content: "hi" }])
  // So does createClient's `store` string, and serve's (a Task saved there, read through the class).
  const llm = await startLLM(() => oaText("noted"))
  t.after(() => llm.close())
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: upper })
  await client.ask("remember", { toolkit: await createToolkit({}), id: "c2" })
  assert.deepEqual((await store.get("c2")).map((m) => m.content), ["remember", "noted"])
  await resolveStore(upper).save({ id: "t1", status: { state: "working" } })
  assert.equal((await store.get("t1")).status.state, "working")
  // A URL of another engine is refused by name, with the schemes the class takes, its password hidden.
  assert.throws(() => new PostgresStore("redis://:pw@h:1"), {
    name: "TypeError",
    message: 'PostgresStore: expected a URL starting with postgres:// or postgresql://, got "redis://:***@h:1"',
  })
  assert.throws(() => new RedisStore(42), { name: "TypeError", message: "RedisStore: expected a URL starting with redis:// or rediss://, got number" })
  assert.throws(() => new SqliteStore(undefined), { name: "TypeError", message: "SqliteStore: expected a URL starting with sqlite:, got undefined" })
  new PostgresStore("POSTGRES://u:pw@127.0.0.1:1/db")
  new RedisStore("Redis://127.0.0.1:1")
})

test("one rule says which stores are ours: an instance of a class we ship crosses natively, a subclass's own methods are called as JavaScript", async (t) => {
  const { InMemoryConversationStore, InMemoryTaskStore, SqliteStore, startA2AServer } = await import("../index.js")
  const dir = tmp()
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const llm = await startLLM(() => oaText("ok"))
  t.after(() => llm.close())
  const saved = []
  class Logged extends InMemoryConversationStore {
    async save(id, messages) {
      saved.push(["memory", id, messages.length])
      return super.save(id, messages)
    }
  }
  class LoggedSqlite extends SqliteStore {
    async save(id, messages) {
      saved.push(["sqlite", id, messages.length])
      return super.save(id, messages)
    }
  }
  const kit = await createToolkit({})
  for (const store of [new Logged(), new LoggedSqlite(path.join(dir, "s.db"))]) {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store })
    await client.ask("hi", { toolkit: kit, id: "c" })
    assert.deepEqual((await store.get("c")).map((m) => m.content), ["hi", "ok"])
  }
  assert.deepEqual(saved, [["memory", "c", 2], ["sqlite", "c", 2]])
  // The classes themselves cross natively: their (prototype's) save is not called from JS.
  const plain = new InMemoryConversationStore()
  const spied = []
  const original = InMemoryConversationStore.prototype.save
  InMemoryConversationStore.prototype.save = function (...args) {
    spied.push(args[0])
    return original.apply(this, args)
  }
  try {
    await createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", store: plain }).ask("hi", { toolkit: kit, id: "n" })
  } finally {
    InMemoryConversationStore.prototype.save = original
  }
  assert.deepEqual(spied, [])
  assert.equal((await plain.get("n")).length, 2)
  // Serving asks the same rule: a Task store subclass's save sees every Task saved.
  const tasks = []
  class LoggedTasks extends InMemoryTaskStore {
    async save(task) {
      tasks.push(task.status.state)
      return super.save(task)
    }
  }
  const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: { name: "n", store: new LoggedTasks() }, runTask: async () => ({ text: "done", status: "done" }) })
  t.after(() => srv.stop())
  const res = await fetch(srv.url + "/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { role: "user", parts: [{ kind: "text", text: "go" }] } } }),
  })
  assert.equal(res.status, 200)
  for (let i = 0; i < 300 && !tasks.includes("completed"); i++) await new Promise((r) => setTimeout(r, 10))
  assert.deepEqual(tasks, ["submitted", "working", "completed"].filter((s) => tasks.includes(s)))
  assert.ok(tasks.includes("completed"), JSON.stringify(tasks))
})
