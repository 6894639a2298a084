// Every factory's options cross to the core whole (issue 45): the core reads each callback
// option, so "unset when falsy, a TypeError naming it when it is called otherwise" is one rule,
// and each callback is called with the `this` the reference calls it with.
import test from "node:test"
import assert from "node:assert/strict"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { agents, buildMcpServer, createClient, createToolkit, defineTool, httpTool, loadMcp } from "../index.js"
import { startLLM, sse, SSE_DONE, oaDeltaText, oaText } from "./support/llm.mjs"

const notAFunction = (text) => (e) => e instanceof TypeError && e.message === text

test("createToolkit: null is refused with a TypeError; any other value that is not an object is no options, as the reference reads it", async () => {
  await assert.rejects(createToolkit(null), notAFunction("createToolkit: options must be an object"))
  for (const opts of ["x", 3, true, undefined]) {
    const tk = await createToolkit(opts)
    assert.ok(tk.tools().length > 0, String(opts))
    await tk.close()
  }
  // `extraTools` that is not an array is still named.
  await assert.rejects(createToolkit({ extraTools: 1 }), /`extraTools` must be an array/)
})

test("createToolkit: skills from an iterable and a provider; a provider resolving to no iterable fails the toolkit as the reference's spread does", async () => {
  const skill = (name) => ({ name, description: `${name} skill`, content: `# ${name}` })
  const tk = await createToolkit({ builtins: false, skills: new Set([skill("a")]), skillProvider: async () => new Set([skill("b")]) })
  assert.match(tk.skillsPrompt(), /a skill[\s\S]*b skill/)
  await assert.rejects(createToolkit({ builtins: false, skillProvider: async () => 5 }), TypeError)
  // A provider that rejects is reported and contributes nothing.
  const warned = []
  const quiet = await createToolkit({ builtins: false, skills: [skill("c")], skillProvider: async () => { throw new Error("down") }, logger: { warn: (t) => warned.push(t) } })
  assert.match(quiet.skillsPrompt(), /c skill/)
  assert.deepEqual(warned, ["[toolnexus] skill provider failed: down"])
})

test("createToolkit and loadMcp: a `waitFor` that is no function is taken (it fails only when a server asks for input); the signal still aborts", async () => {
  const tk = await createToolkit({ builtins: false, waitFor: "later", mcpConfig: { mcpServers: {} } })
  assert.deepEqual(tk.mcpStatus(), {})
  const src = await loadMcp({ mcpServers: {} }, { waitFor: 42 })
  assert.deepEqual(src.status, {})
  await src.close()
  const ac = new AbortController()
  ac.abort(new Error("stop"))
  await assert.rejects(loadMcp({ mcpServers: { a: { command: "node", args: ["-e", "setInterval(() => {}, 1000)"] } } }, { signal: ac.signal }), /stop/)
  await assert.rejects(createToolkit({ mcpConfig: { mcpServers: { a: { command: "node", args: ["-e", "setInterval(() => {}, 1000)"] } } }, signal: ac.signal }), /stop/)
})

test("httpTool: anything but an object is the core's TypeError", () => {
  for (const bad of [null, undefined, "GET", 3]) assert.throws(() => httpTool(bad), notAFunction("httpTool: options must be an object"))
})

test("buildMcpServer: onCall is called as a plain function; one that is no function is named (and, as any onCall failure, changes no call)", async () => {
  const echo = defineTool({ name: "echo", description: "echo", run: () => "ok" })
  const thisSeen = []
  const seen = []
  for (const onCall of [function () { thisSeen.push(this) }, "nope"]) {
    const server = buildMcpServer([echo], { name: "x" }, onCall)
    const [a, b] = InMemoryTransport.createLinkedPair()
    await server.connect(b)
    const client = new Client({ name: "t", version: "1" })
    await client.connect(a)
    seen.push((await client.callTool({ name: "echo", arguments: {} })).content[0].text)
    await client.close()
  }
  assert.deepEqual(seen, ["ok", "ok"])
  assert.deepEqual(thisSeen, [undefined])
})

test("compactor: summarize is called on the options, countTokens as a plain function; either set to a non-function fails when it is called, naming it", async () => {
  const messages = ["a", "b", "c", "d"].map((content, i) => ({ role: i % 2 ? "assistant" : "user", content }))
  const counted = []
  const summarized = []
  const opts = {
    maxTokens: 3,
    keepTail: 2,
    summarize(older) {
      summarized.push([this === opts, older.length])
      return "S"
    },
    countTokens(m) {
      counted.push(this)
      return m.length
    },
  }
  const out = await agents.compactor(opts)({ messages })
  assert.equal(out.messages.length, 3)
  assert.deepEqual(summarized, [[true, 2]])
  assert.ok(counted.length > 0 && counted.every((t) => t === undefined))
  await assert.rejects(agents.compactor({ maxTokens: 1, countTokens: "n" })({ messages }), notAFunction("compactor: `countTokens` is not a function (got string)"))
  await assert.rejects(agents.compactor({ maxTokens: 1 })({ messages }), notAFunction("compactor: `summarize` is not a function (got undefined)"))
  await assert.rejects(agents.compactor({ maxTokens: 1, summarize: null })({ messages }), notAFunction("compactor: `summarize` is not a function (got object)"))
})

test("guardedHooks: guardrails and the prior beforeTool are plain functions; a non-function is named when it is consulted", async () => {
  const ev = { name: "t", args: {} }
  const seen = []
  const hooks = agents.guardedHooks([function () { seen.push(this); return "allow" }], { beforeTool: function () { seen.push(this); return { args: { x: 1 } } } })
  assert.deepEqual(await hooks.beforeTool(ev), { args: { x: 1 } })
  assert.deepEqual(seen, [undefined, undefined])
  assert.deepEqual(await agents.guardedHooks([() => "no"], {}).beforeTool(ev), { result: { output: "denied: no", isError: true } })
  await assert.rejects(agents.guardedHooks([() => "allow", 5], undefined).beforeTool(ev), notAFunction("guardedHooks: `guardrails[1]` is not a function (got number)"))
  await assert.rejects(agents.guardedHooks([() => "allow"], { beforeTool: "x" }).beforeTool(ev), notAFunction("guardedHooks: `hooks.beforeTool` is not a function (got string)"))
  // A falsy prior is none.
  assert.equal(await agents.guardedHooks([() => "allow"], { beforeTool: 0 }).beforeTool(ev), undefined)
})

test("runGated: verify is called on the completion, ask as a plain function; the checks come in the reference's order", async () => {
  const done = { text: "t", messages: [], toolCalls: [], toolCallCount: 0, turns: 1, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, status: "done" }
  const seen = []
  const completion = { maxAttempts: 2, verify(r) { seen.push(["verify", this === completion, r.text]); return { ok: true } } }
  const r = await agents.runGated(function (p) { seen.push(["ask", this, p]); return done }, "go", completion)
  assert.equal(r.text, "t")
  assert.deepEqual(seen, [["ask", undefined, "go"], ["verify", true, "t"]])
  await assert.rejects(agents.runGated(() => done, "go", { maxAttempts: "2", verify: () => ({ ok: true }) }), /maxAttempts must be an integer >= 1/)
  await assert.rejects(agents.runGated(() => done, "go", { maxAttempts: 1, verify: "yes" }), /completion.verify is required/)
  await assert.rejects(agents.runGated(() => done, "go", 7), /maxAttempts must be an integer >= 1/)
  await assert.rejects(agents.runGated(5, "go", { maxAttempts: 1, verify: () => ({ ok: true }) }), notAFunction("runGated: `ask` is not a function (got number)"))
  await assert.rejects(agents.runGated(null, "go", { maxAttempts: 1, verify: () => ({ ok: true }) }), notAFunction("runGated: `ask` is not a function (got object)"))
})

test("ask: on_text that is no function is named when the first delta comes; a falsy one is none", async (t) => {
  const llm = await startLLM((req) => (req.json.stream ? { sse: [sse(oaDeltaText("hi")), SSE_DONE] } : oaText("hi")))
  t.after(() => llm.close())
  const client = createClient({ baseUrl: llm.url, model: "m", apiKey: "k" })
  const tk = await createToolkit({ builtins: false })
  assert.equal((await client.ask("x", { toolkit: tk, on_text: false })).text, "hi")
  assert.equal(llm.requests.at(-1).json.stream, undefined, "a falsy on_text does not stream")
  const deltas = []
  assert.equal((await client.ask("x", { toolkit: tk, onText: function (d) { deltas.push([d, this]) } })).text, "hi")
  assert.deepEqual(deltas, [["hi", undefined]])
  await assert.rejects(client.ask("x", { toolkit: tk, on_text: 5 }), notAFunction("ask: `on_text` is not a function (got number)"))
})
