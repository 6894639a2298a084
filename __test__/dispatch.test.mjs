// The crossings between the core's threads and JavaScript: many at once, answered now or later,
// failing in every way a callback can, released when no longer needed, and per environment.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createInProcessClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls, sawToolResult, runChild } from "./support/llm.mjs"

const client = (url, extra = {}) => createClient({ baseUrl: url, style: "openai", model: "m", apiKey: "k", ...extra })

test("200 runs in flight at once: every tool answer reaches its own run", async (t) => {
  // Each run asks for `echo` with its own number; the final text repeats what the tool said.
  const llm = await startLLM((req) => {
    const msgs = req.json.messages
    const user = msgs.find((m) => m.role === "user").content
    if (!sawToolResult(req)) return oaCalls([{ id: "c", name: "echo", args: { n: Number(user) } }])
    return oaText(`final ${msgs.find((m) => m.role === "tool").content}`)
  })
  t.after(() => llm.close())
  const tk = await createToolkit({
    builtins: false,
    extraTools: [
      // Half answer after a random delay, half synchronously: both reply paths interleave.
      defineTool({ name: "echo", description: "", run: ({ n }) => (n % 2 ? new Promise((r) => setTimeout(() => r(`n=${n}`), Math.random() * 20)) : `n=${n}`) }),
    ],
  })
  const c = client(llm.url)
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => c.run(String(i), { toolkit: tk })))
  assert.deepStrictEqual(results.map((r) => r.text), Array.from({ length: 200 }, (_, i) => `final n=${i}`))
})

test("a plain (non-async) tool object answering synchronously, and one answering later", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("ok") : oaCalls([{ id: "a", name: "now", args: {} }, { id: "b", name: "later", args: {} }])))
  t.after(() => llm.close())
  const mk = (name, execute) => ({ name, description: "", inputSchema: { type: "object" }, source: "custom", execute })
  const tk = await createToolkit({
    builtins: false,
    extraTools: [
      mk("now", () => ({ output: "at once", isError: false })),
      mk("later", () => new Promise((r) => setTimeout(() => r({ output: "after a while", isError: false }), 30))),
    ],
  })
  const res = await client(llm.url).run("go", { toolkit: tk })
  assert.deepStrictEqual(res.toolCalls.map((c) => c.output), ["at once", "after a while"])
})

test("a hook whose Promise resolves to something JSON cannot hold rejects the run with that very TypeError", async (t) => {
  const llm = await startLLM(() => oaText("never"))
  t.after(() => llm.close())
  const c = client(llm.url, { hooks: { beforeLLM: async () => ({ replace: 1n }) } })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({ builtins: false }) }), TypeError)
  assert.equal(llm.requests.length, 0)
})

test("a hook that throws synchronously and one that rejects with a non-Error both reach the caller as thrown", async (t) => {
  const llm = await startLLM(() => oaText("never"))
  t.after(() => llm.close())
  class Custom extends Error {}
  const tk = await createToolkit({ builtins: false })
  const thrown = new Custom("sync throw")
  await assert.rejects(client(llm.url, { hooks: { beforeLLM: () => { throw thrown } } }).run("hi", { toolkit: tk }), (e) => e === thrown)
  const rejected = await client(llm.url, { hooks: { beforeLLM: () => Promise.reject("just a string") } })
    .run("hi", { toolkit: tk })
    .then(() => "resolved", (e) => e)
  assert.equal(rejected, "just a string")
})

test("callbacks handed to the core are let go once their client and toolkit are gone", async () => {
  const r = await runChild(`
    const { createClient, createToolkit, defineTool } = await import(ENTRY)
    const gone = new Set()
    const registry = new FinalizationRegistry((name) => gone.add(name))
    async function make() {
      const hook = () => undefined
      const run = () => "x"
      registry.register(hook, "hook")
      registry.register(run, "tool")
      const tk = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "t", description: "", run })] })
      createClient({ baseUrl: "http://127.0.0.1:9", style: "openai", model: "m", hooks: { beforeLLM: hook } })
      return tk.tools().length
    }
    console.log(await make())
    for (let i = 0; i < 50 && gone.size < 2; i++) {
      globalThis.gc()
      await new Promise((r) => setTimeout(r, 20))
    }
    console.log([...gone].sort().join(","))
  `, { nodeArgs: ["--expose-gc"] })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "1\nhook,tool\n")
})

test("the addon works inside worker threads, each with its own environment, and they end cleanly", async () => {
  const r = await runChild(`
    const { Worker } = await import("node:worker_threads")
    const source = \`
      const { parentPort, workerData } = require("node:worker_threads")
      const { createInProcessClient, createToolkit, defineTool } = require(workerData.entry)
      ;(async () => {
        const toolkit = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "twice", description: "", run: async ({ n }) => n * 2 })] })
        const client = createInProcessClient({ model: "m", generate: (req) => req.messages.some((m) => m.role === "tool")
          ? { content: "got " + req.messages.find((m) => m.role === "tool").content }
          : { toolCalls: [{ id: "c", name: "twice", arguments: { n: workerData.n } }] } })
        parentPort.postMessage((await client.run("go", { toolkit })).text)
      })()
    \`
    const entry = (await import("node:url")).fileURLToPath(ENTRY)
    const answers = await Promise.all([1, 2, 3].map((n) => new Promise((resolve, reject) => {
      const w = new Worker(source, { eval: true, execArgv: [], workerData: { entry, n } })
      w.once("message", (m) => { resolve(m); w.terminate() })
      w.once("error", reject)
    })))
    console.log(answers.join("|"))
    // The main thread's own environment is unaffected by the workers coming and going.
    const { createInProcessClient, createToolkit } = await import(ENTRY)
    const c = createInProcessClient({ model: "m", generate: () => ({ content: "main" }) })
    console.log((await c.run("hi", { toolkit: await createToolkit({ builtins: false }) })).text)
  `)
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "got 2|got 4|got 6\nmain\n")
})
