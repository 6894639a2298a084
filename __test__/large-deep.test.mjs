// Large and deep bodies: JSON nested 10,000 deep everywhere a value crosses (the reply, the
// history, a hook's answer, a tool's schema and result), and replies of hundreds of MB, against
// a real local endpoint. The big ones run in child processes, one run each.
import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import { createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls, runChild } from "./support/llm.mjs"

const DEEP = 10_000
const deepText = (n = DEEP) => "[".repeat(n) + "]".repeat(n)
const deepValue = (n = DEEP) => JSON.parse(deepText(n))
/** How deep a chain of one-element arrays (or `{ a }` objects) goes, without recursing. */
function depthOf(v) {
  let d = 0
  while (v !== null && typeof v === "object") {
    v = Array.isArray(v) ? v[0] : v.a
    d++
  }
  return d
}

const client = (llm, extra = {}) => createClient({ baseUrl: llm.url, model: "m", apiKey: "k", ...extra })
const echo = (seen) => defineTool({ name: "echo", description: "echo", run: (args) => (seen.push(args), "done") })

test("deep: a reply with a field nested 10,000 deep comes back whole, to afterLLM and in the transcript", async (t) => {
  const body = `{"choices":[{"message":{"role":"assistant","content":"hi","extra":${deepText()}}}],"deep":${deepText()}}`
  const llm = await startLLM([{ body }])
  t.after(() => llm.close())
  let seen
  const res = await client(llm, { hooks: { afterLLM: (ev) => void (seen = ev.response) } }).run("p", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "hi")
  assert.equal(depthOf(res.messages.at(-1).extra), DEEP)
  assert.equal(depthOf(seen.deep), DEEP)
})

test("deep: tool-call arguments whose JSON nests 10,000 deep reach the tool and the record", async (t) => {
  const llm = await startLLM([oaCalls([{ id: "c1", name: "echo", args: `{"x":${deepText()}}` }]), oaText("end")])
  t.after(() => llm.close())
  const seen = []
  const res = await client(llm).run("p", { toolkit: await createToolkit({ extraTools: [echo(seen)] }) })
  assert.equal(res.text, "end")
  assert.equal(depthOf(seen[0].x), DEEP)
  assert.equal(depthOf(res.toolCalls[0].args.x), DEEP)
})

test("deep: a history nested 10,000 deep is sent on", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const history = [{ role: "user", content: "before", extra: deepValue() }]
  const res = await client(llm).run("p", { toolkit: await createToolkit({}), history })
  assert.equal(res.text, "ok")
  assert.equal(depthOf(llm.requests[0].json.messages[0].extra), DEEP)
  assert.equal(depthOf(res.messages[0].extra), DEEP)
})

test("deep: a hook answering with a value 10,000 deep is taken as the reference takes it", async (t) => {
  const llm = await startLLM([oaCalls([{ id: "c1", name: "echo", args: {} }]), oaText("end")])
  t.after(() => llm.close())
  const seen = []
  const hooks = {
    beforeTool: () => ({ args: { x: deepValue() } }),
    afterTool: ({ result }) => ({ result: { ...result, metadata: deepValue() } }),
  }
  const res = await client(llm, { hooks }).run("p", { toolkit: await createToolkit({ extraTools: [echo(seen)] }) })
  assert.equal(res.text, "end")
  assert.equal(depthOf(seen[0].x), DEEP)
  assert.equal(depthOf(res.toolCalls[0].metadata), DEEP)
})

test("deep: a tool whose inputSchema nests 10,000 deep is declared, and its result metadata comes back", async (t) => {
  const llm = await startLLM([oaCalls([{ id: "c1", name: "deep", args: {} }]), oaText("end")])
  t.after(() => llm.close())
  const tool = {
    name: "deep",
    description: "deep",
    inputSchema: { type: "object", properties: { x: { deep: deepValue() } } },
    execute: async () => ({ output: "o", isError: false, metadata: { deep: deepValue() } }),
  }
  const tk = await createToolkit({ extraTools: [tool] })
  const res = await client(llm).run("p", { toolkit: tk })
  assert.equal(res.text, "end")
  const declared = llm.requests[0].json.tools.find((d) => d.function.name === "deep")
  assert.equal(depthOf(declared.function.parameters.properties.x.deep), DEEP)
  assert.equal(depthOf(res.toolCalls[0].metadata.deep), DEEP)
})

test("deep: in a worker thread with a 2 MiB stack", async (t) => {
  const llm = await startLLM([
    { body: `{"choices":[{"message":{"role":"assistant","content":null,"extra":${deepText()},"tool_calls":[{"id":"c1","type":"function","function":{"name":"echo","arguments":${JSON.stringify(`{"x":${deepText()}}`)}}}]}}]}` },
    oaText("end"),
  ])
  t.after(() => llm.close())
  const child = await runChild(
    `import { Worker } from "node:worker_threads"
     const code = \`
       const { parentPort, workerData } = require("node:worker_threads")
       const { createClient, createToolkit, defineTool } = require(workerData.entry)
       ;(async () => {
         const seen = []
         const tool = defineTool({ name: "echo", description: "echo", run: (a) => (seen.push(a), "done") })
         const c = createClient({ baseUrl: workerData.url, model: "m", apiKey: "k", hooks: { afterLLM: () => {} } })
         const r = await c.run("p", { toolkit: await createToolkit({ extraTools: [tool] }) })
         let d = 0, v = r.toolCalls[0].args.x
         while (Array.isArray(v)) { v = v[0]; d++ }
         parentPort.postMessage(r.text + " " + d)
       })().catch((e) => parentPort.postMessage("failed: " + e.message))\`
     const w = new Worker(code, { eval: true, workerData: { entry: new URL(ENTRY).pathname, url: ${JSON.stringify(llm.url)} }, resourceLimits: { stackSizeMb: 2 }, execArgv: [] })
     w.on("message", (m) => { console.log(m); w.terminate() })
     w.on("error", (e) => console.log("worker error: " + e.message))`,
    { timeoutMs: 60_000 },
  )
  assert.equal(child.signal, null, child.stderr)
  assert.equal(child.stdout.trim(), `end ${DEEP}`, child.stderr)
})

/** A server answering every request with `body` (a Buffer), for a child process to call. */
async function serve(t, body) {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": body.length })
      res.end(body)
    })
  })
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  t.after(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${server.address().port}`
}

const replyOf = (n) => Buffer.from(JSON.stringify({ choices: [{ message: { role: "assistant", content: "x".repeat(n) } }] }))

test("large: a 300 MB reply comes back as the run's text and the transcript's content", { timeout: 600_000 }, async (t) => {
  const url = await serve(t, replyOf(300_000_000))
  const child = await runChild(
    `import { createClient, createToolkit } from ENTRY
     const r = await createClient({ baseUrl: ${JSON.stringify(url)}, model: "m", apiKey: "k" }).run("p", { toolkit: await createToolkit({}) })
     console.log(JSON.stringify({ text: r.text.length, content: r.messages.at(-1).content.length, same: r.text === r.messages.at(-1).content }))`,
    { timeoutMs: 540_000, nodeArgs: ["--max-old-space-size=4096"] },
  )
  assert.equal(child.code, 0, child.stderr)
  assert.deepStrictEqual(JSON.parse(child.stdout), { text: 300_000_000, content: 300_000_000, same: true })
})

test("large: a 200 MB reply peaks at no more than 1.5x the memory of Node's own fetch and res.json()", { timeout: 600_000 }, async (t) => {
  const url = await serve(t, replyOf(200_000_000))
  const peak = `Math.round(process.resourceUsage().maxRSS / 1024)`
  const ours = await runChild(
    `import { createClient, createToolkit } from ENTRY
     const tk = await createToolkit({})
     const r = await createClient({ baseUrl: ${JSON.stringify(url)}, model: "m", apiKey: "k" }).run("p", { toolkit: tk })
     console.log(r.text.length, ${peak})`,
    { timeoutMs: 540_000, nodeArgs: ["--max-old-space-size=4096"] },
  )
  const node = await runChild(
    `const res = await fetch(${JSON.stringify(url + "/chat/completions")}, { method: "POST", body: "{}" })
     const data = await res.json()
     console.log(data.choices[0].message.content.length, ${peak})`,
    { timeoutMs: 540_000, nodeArgs: ["--max-old-space-size=4096"] },
  )
  assert.equal(ours.code, 0, ours.stderr)
  assert.equal(node.code, 0, node.stderr)
  const [oursLen, oursMb] = ours.stdout.trim().split(" ").map(Number)
  const [nodeLen, nodeMb] = node.stdout.trim().split(" ").map(Number)
  t.diagnostic(`peak RSS: toolnexus ${oursMb} MB, Node fetch + res.json() ${nodeMb} MB (${(oursMb / nodeMb).toFixed(2)}x)`)
  assert.equal(oursLen, 200_000_000)
  assert.equal(nodeLen, 200_000_000)
  assert.ok(oursMb <= 1.5 * nodeMb, `toolnexus peaked at ${oursMb} MB, Node at ${nodeMb} MB`)
})
