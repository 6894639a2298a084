// SPEC §8 Conversation memory: conversation(), ask() with and without an id, ConversationStore.
import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import { createClient, createToolkit, defineTool, InMemoryConversationStore, Conversation } from "../index.js"
import { startLLM, oaText, oaCalls, sawToolResult, sse, SSE_DONE, oaDeltaText, oaUsageChunk } from "./support/llm.mjs"

const client = (url, extra = {}) => createClient({ baseUrl: url, style: "openai", model: "mem-m", apiKey: "k", ...extra })

/** A reply that reports how many messages the request carried: easy to read history off it. */
const countingLLM = () => startLLM((req) => oaText(`seen ${req.json.messages.length}`))

// ---------------------------------------------------------------------------------------------
// conversation()
// ---------------------------------------------------------------------------------------------

test("conversation: send() carries the transcript forward, messages is the result's, reset() starts over", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const convo = client(llm.url, { systemPrompt: "Be brief." }).conversation({ toolkit: tk })
  assert.ok(convo instanceof Conversation)
  assert.deepStrictEqual(convo.messages, [])

  const first = await convo.send("hello")
  assert.equal(first.text, "seen 2")
  assert.equal(convo.messages, first.messages)
  assert.deepStrictEqual(convo.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "hello" },
    { role: "assistant", content: "seen 2" },
  ])

  const second = await convo.send("again")
  assert.equal(second.text, "seen 4", "no second system message; the earlier turn is replayed")
  assert.deepStrictEqual(llm.requests[1].json.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "hello" },
    { role: "assistant", content: "seen 2" },
    { role: "user", content: "again" },
  ])
  assert.equal(convo.messages.length, 5)

  convo.reset()
  assert.deepStrictEqual(convo.messages, [])
  const fresh = await convo.send("new topic")
  assert.equal(fresh.text, "seen 2")
  assert.deepStrictEqual(llm.requests[2].json.messages, [{ role: "system", content: "Be brief." }, { role: "user", content: "new topic" }])
})

test("conversation: tool turns stay in the transcript for the next send", async (t) => {
  const llm = await startLLM((req, i) => (i === 0 ? oaCalls([{ id: "q1", name: "clock", args: {} }]) : oaText(`turn ${i}`)))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "clock", description: "", run: () => "12:00" })] })
  const convo = client(llm.url).conversation({ toolkit: tk })
  await convo.send("time?")
  await convo.send("thanks")
  assert.deepStrictEqual(llm.requests[2].json.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant", "user"])
  assert.deepStrictEqual(llm.requests[2].json.messages[2], { role: "tool", tool_call_id: "q1", content: "12:00" })
})

// ---------------------------------------------------------------------------------------------
// ask() through the default store
// ---------------------------------------------------------------------------------------------

test("ask with an id: the default in-memory store remembers the thread, per id", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const c = client(llm.url)
  const store = c.conversationStore()
  assert.ok(store instanceof InMemoryConversationStore)
  assert.equal(c.conversationStore(), store, "the same instance every time")
  assert.equal(await store.get("thread-a"), undefined)

  const r1 = await c.ask("first", { toolkit: tk, id: "thread-a" })
  assert.equal(r1.text, "seen 1")
  assert.deepStrictEqual(await store.get("thread-a"), r1.messages)
  const r2 = await c.ask("second", { toolkit: tk, id: "thread-a" })
  assert.equal(r2.text, "seen 3")
  assert.deepStrictEqual(await store.get("thread-a"), [
    { role: "user", content: "first" },
    { role: "assistant", content: "seen 1" },
    { role: "user", content: "second" },
    { role: "assistant", content: "seen 3" },
  ])
  const other = await c.ask("elsewhere", { toolkit: tk, id: "thread-b" })
  assert.equal(other.text, "seen 1", "another id starts its own thread")
  assert.equal((await store.get("thread-a")).length, 4)
  assert.equal(await store.get("thread-c"), undefined)
})

test("the default store hands out copies: mutating a read or a result never changes what is stored", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const c = client(llm.url)
  const res = await c.ask("keep me", { toolkit: tk, id: "t" })
  const snapshot = structuredClone(res.messages)
  res.messages.push({ role: "user", content: "injected into the result" })
  const read = await c.conversationStore().get("t")
  assert.deepStrictEqual(read, snapshot)
  read.length = 0
  read.push({ role: "user", content: "injected into a read" })
  assert.deepStrictEqual(await c.conversationStore().get("t"), snapshot)
  assert.notEqual(await c.conversationStore().get("t"), await c.conversationStore().get("t"), "each get is a fresh array")
  // The next ask continues from the stored copy, not from the mutated arrays.
  await c.ask("next", { toolkit: tk, id: "t" })
  assert.deepStrictEqual(llm.requests[1].json.messages, [...snapshot, { role: "user", content: "next" }])
})

test("writing the store directly rewinds or seeds a thread for the next ask", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const c = client(llm.url, { systemPrompt: "S" })
  await c.ask("a", { toolkit: tk, id: "w" })
  await c.ask("b", { toolkit: tk, id: "w" })
  const store = c.conversationStore()
  await store.save("w", (await store.get("w")).slice(0, 3)) // drop the second exchange
  const res = await c.ask("c", { toolkit: tk, id: "w" })
  assert.equal(res.text, "seen 4")
  await store.save("seeded", [{ role: "user", content: "earlier" }, { role: "assistant", content: "noted" }])
  const seeded = await c.ask("continue", { toolkit: tk, id: "seeded" })
  assert.deepStrictEqual(llm.requests.at(-1).json.messages, [
    { role: "user", content: "earlier" },
    { role: "assistant", content: "noted" },
    { role: "user", content: "continue" },
  ], "a non-empty history gets no system prompt")
  assert.equal(seeded.messages.length, 4)
})

test("ask without an id is a one-shot: the store is never read nor written", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const calls = []
  const store = { get: async (id) => { calls.push(["get", id]) }, save: async (id) => { calls.push(["save", id]) } }
  const c = client(llm.url, { store })
  const tk = await createToolkit({})
  const r1 = await c.ask("one", { toolkit: tk })
  const r2 = await c.ask("two", { toolkit: tk, id: "" })
  assert.equal(r1.text, "seen 1")
  assert.equal(r2.text, "seen 1")
  assert.deepStrictEqual(calls, [])
  // And with the default store, a one-shot leaves no trace either.
  const plain = client(llm.url)
  await plain.ask("nothing kept", { toolkit: tk })
  assert.equal(await plain.conversationStore().get("undefined"), undefined)
  assert.equal(await plain.conversationStore().get(""), undefined)
})

// ---------------------------------------------------------------------------------------------
// A user store
// ---------------------------------------------------------------------------------------------

test("a user store (async methods, private state) is called as methods and sees every turn", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  class VaultStore {
    #threads = new Map()
    log = []
    async get(id) {
      this.log.push(["get", id])
      const m = this.#threads.get(id)
      return m && [...m]
    }
    async save(id, messages) {
      this.log.push(["save", id, messages.length])
      this.#threads.set(id, [...messages])
    }
  }
  const store = new VaultStore()
  const c = client(llm.url, { store })
  assert.equal(c.conversationStore(), store, "the very instance passed in")
  const tk = await createToolkit({})
  const r1 = await c.ask("hi", { toolkit: tk, id: "u-1" })
  const r2 = await c.ask("more", { toolkit: tk, id: "u-1" })
  assert.equal(r2.text, "seen 3")
  assert.deepStrictEqual(store.log, [["get", "u-1"], ["save", "u-1", 2], ["get", "u-1"], ["save", "u-1", 4]])
  assert.deepStrictEqual(await store.get("u-1"), r2.messages)
  assert.deepStrictEqual(r1.messages, r2.messages.slice(0, 2))
  // A second client sharing the store resumes the thread.
  const again = await client(llm.url, { store }).ask("still there?", { toolkit: tk, id: "u-1" })
  assert.equal(again.text, "seen 5")
})

test("a user store with synchronous get/save returning plain values works the same", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const backing = {}
  const store = {
    receivers: [],
    get(id) {
      this.receivers.push(this)
      return backing[id] ? backing[id].slice() : undefined
    },
    save(id, messages) {
      this.receivers.push(this)
      backing[id] = messages.slice()
    },
  }
  const c = client(llm.url, { store })
  const tk = await createToolkit({})
  await c.ask("a", { toolkit: tk, id: "sync" })
  const r = await c.ask("b", { toolkit: tk, id: "sync" })
  assert.equal(r.text, "seen 3")
  assert.deepStrictEqual(backing.sync, r.messages)
  assert.equal(store.receivers.length, 4)
  assert.ok(store.receivers.every((x) => x === store), "this is the store in every call")
})

test("a store whose get fails rejects ask with that very error, before any request", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const boom = new Error("database is down")
  await assert.rejects(client(llm.url, { store: { get: async () => { throw boom }, save: async () => {} } }).ask("x", { toolkit: tk, id: "d" }), (e) => e === boom)
  const syncBoom = new TypeError("bad key")
  await assert.rejects(client(llm.url, { store: { get: () => { throw syncBoom }, save: () => {} } }).ask("x", { toolkit: tk, id: "d" }), (e) => e === syncBoom)
  assert.equal(llm.requests.length, 0)
})

test("a store whose save fails rejects ask with that error after the model answered", async (t) => {
  const llm = await countingLLM()
  t.after(() => llm.close())
  const full = new Error("disk full")
  const c = client(llm.url, { store: { get: async () => undefined, save: async () => { throw full } } })
  await assert.rejects(c.ask("x", { toolkit: await createToolkit({}), id: "s" }), (e) => e === full)
  assert.equal(llm.requests.length, 1)
})

// ---------------------------------------------------------------------------------------------
// ask() with on_text
// ---------------------------------------------------------------------------------------------

test("ask with on_text (or onText) receives each text delta and still returns the RunResult", async (t) => {
  const llm = await startLLM((req) => {
    const n = req.json.messages.length
    return { sse: [sse(oaDeltaText("Hel")), sse(oaDeltaText("lo ")), sse(oaDeltaText(`#${n}`)), sse(oaUsageChunk(3, 2)), SSE_DONE] }
  })
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const c = client(llm.url)
  for (const key of ["on_text", "onText"]) {
    const deltas = []
    const res = await c.ask("greet", { toolkit: tk, [key]: (d) => { deltas.push(d); return "ignored" } })
    assert.deepStrictEqual(deltas, ["Hel", "lo ", "#1"], key)
    assert.deepStrictEqual(res, {
      text: "Hello #1",
      messages: [{ role: "user", content: "greet" }, { role: "assistant", content: "Hello #1" }],
      toolCalls: [],
      toolCallCount: 0,
      turns: 1,
      usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 },
      model: "mem-m",
      status: "done",
    })
    assert.equal(llm.requests.at(-1).json.stream, true, "on_text streams")
  }
  // With an id as well, the streamed turn is remembered.
  const deltas = []
  await c.ask("one", { toolkit: tk, id: "live", on_text: (d) => deltas.push(d) })
  const res = await c.ask("two", { toolkit: tk, id: "live", on_text: (d) => deltas.push(d) })
  assert.equal(res.text, "Hello #3")
  assert.deepStrictEqual(deltas.join(""), "Hello #1Hello #3")
  assert.equal((await c.conversationStore().get("live")).length, 4)
})

// ---------------------------------------------------------------------------------------------
// Scale
// ---------------------------------------------------------------------------------------------

test("1,000 sequential asks on one id: the stored transcript grows by exactly 2 per call", { timeout: 120_000 }, async (t) => {
  // A minimal endpoint: it does not parse or keep the (growing) bodies.
  const reply = JSON.stringify({ choices: [{ message: { role: "assistant", content: "ok" } }] })
  let hits = 0
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      hits++
      res.writeHead(200, { "content-type": "application/json" })
      res.end(reply)
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  t.after(() => new Promise((r) => { server.closeAllConnections(); server.close(r) }))
  const c = client(`http://127.0.0.1:${server.address().port}`, { systemPrompt: "sys" })
  const tk = await createToolkit({})
  const N = 1000
  const started = Date.now()
  for (let k = 1; k <= N; k++) {
    const res = await c.ask(`q${k}`, { toolkit: tk, id: "long" })
    if (res.messages.length !== 2 * k + 1) assert.fail(`call ${k}: ${res.messages.length} messages, expected ${2 * k + 1}`)
  }
  const stored = await c.conversationStore().get("long")
  assert.equal(stored.length, 2 * N + 1)
  assert.deepStrictEqual(stored[0], { role: "system", content: "sys" })
  assert.deepStrictEqual(stored.at(-2), { role: "user", content: `q${N}` })
  assert.equal(stored.filter((m) => m.role === "system").length, 1)
  assert.equal(hits, N)
  t.diagnostic(`${N} asks in ${Date.now() - started}ms`)
})
