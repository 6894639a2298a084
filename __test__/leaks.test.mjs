// Nothing leaked across the wire (issue 27): an agent's headers reach only its card's origin;
// secrets an endpoint echoes back never reach a run's error, a metric, a served Task or the
// task store's files; a task store's failure answered to a caller names no path on the
// server's disk. Each test fails on the TypeScript library's behaviour.

import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import http from "node:http"
import { agent, agentTools, createClient, createToolkit, FileTaskStore } from "../index.js"
import { startLLM } from "./support/llm.mjs"

const API_KEY = "sk-test-Q7v1secretkey"
const ORG_TOKEN = "org-token-5c2e9a"

/** A real HTTP server on 127.0.0.1 recording every request; `answer(req, body)` → `{ status, body }`. */
async function recorder(answer) {
  const seen = []
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", async () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body })
      const out = await answer(req, body)
      res.writeHead(out.status ?? 200, { "content-type": "application/json" })
      res.end(typeof out.body === "string" ? out.body : JSON.stringify(out.body))
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

/** Collect console.warn lines while `fn` runs. */
async function warnings(fn) {
  const lines = []
  const orig = console.warn
  console.warn = (...a) => lines.push(a.join(" "))
  try {
    return { value: await fn(), lines }
  } finally {
    console.warn = orig
  }
}

// An A2A endpoint speaking SPEC's wire: every SendMessage completes at once.
const completed = (req, body) => {
  const rpc = JSON.parse(body)
  const task = { id: "t1", contextId: "c1", kind: "task", status: { state: "completed" }, artifacts: [{ artifactId: "a", parts: [{ kind: "text", text: "done" }] }] }
  return { body: { jsonrpc: "2.0", id: rpc.id, result: task } }
}

test("an agent's headers go to its card's origin only, unless that origin is trusted", async () => {
  const endpoint = await recorder(completed)
  const card = { name: "desk", url: endpoint.url + "/", skills: [{ id: "ask", name: "ask", description: "ask" }] }
  const home = await recorder(() => ({ body: card }))
  const headers = { Authorization: `Bearer ${ORG_TOKEN}`, "X-Api-Key": API_KEY }
  try {
    const { value: out, lines } = await warnings(async () => {
      const [tool] = await agentTools(agent({ card: home.url + "/.well-known/agent-card.json", headers }))
      return tool.execute({ task: "hi" })
    })
    assert.equal(out.isError, false, out.output)
    assert.equal(out.output, "done")
    assert.equal(home.seen[0].headers.authorization, `Bearer ${ORG_TOKEN}`, "the card's own origin gets them")
    const rpc = endpoint.seen.find((s) => s.method === "POST")
    assert.ok(rpc, "the task reached the endpoint")
    assert.equal(rpc.headers.authorization, undefined, "no Authorization to another origin")
    assert.equal(rpc.headers["x-api-key"], undefined)
    assert.ok(lines.some((l) => l.includes("trustedOrigins") && l.includes(endpoint.url)), lines.join("\n"))

    // Listed as trusted, the other origin gets them.
    const [trusted] = await agentTools(agent({ card: home.url + "/.well-known/agent-card.json", headers, trustedOrigins: [endpoint.url] }))
    const before = endpoint.seen.length
    assert.equal((await trusted.execute({ task: "again" })).output, "done")
    const second = endpoint.seen.slice(before).find((s) => s.method === "POST")
    assert.equal(second.headers.authorization, `Bearer ${ORG_TOKEN}`)
    assert.equal(second.headers["x-api-key"], API_KEY)
  } finally {
    endpoint.close()
    home.close()
  }
})

test("agent(): trustedOrigins is kept only when given; the reference's four fields stay as they were", () => {
  assert.deepEqual(Object.keys(agent({ card: "http://x/c" })), ["card", "headers", "timeout", "pollEvery"])
  const a = agent({ card: "http://x/c", trustedOrigins: ["http://y"] })
  assert.deepEqual(a.trustedOrigins, ["http://y"])
})

test("a peer's error that echoes the agent's headers reaches the tool result without them", async () => {
  const card = { name: "desk", url: "SELF", skills: [{ id: "ask" }] }
  const peer = await recorder((req, body) => {
    if (req.method === "GET") return { body: { ...card, url: peerUrl + "/" } }
    return { status: 401, body: { error: "bad credentials", got: req.headers } }
  })
  const peerUrl = peer.url
  try {
    const [tool] = await agentTools(agent({ card: peer.url + "/card", headers: { Authorization: `Bearer ${ORG_TOKEN}` } }))
    const out = await tool.execute({ task: "x" })
    assert.equal(out.isError, true)
    assert.match(out.output, /^HTTP 401: /)
    assert.ok(!out.output.includes(ORG_TOKEN), out.output)
    assert.ok(out.output.includes("[REDACTED]"), out.output)
  } finally {
    peer.close()
  }
})

/** An LLM that refuses every request, echoing the request's headers and key back. */
const echoingLLM = () =>
  startLLM((req) => ({
    status: 401,
    body: { error: { message: `Incorrect API key provided: ${API_KEY}`, request: { headers: req.headers } } },
  }))

test("an LLM error echoing the key and header values: run()'s error and onMetric carry neither", async () => {
  const llm = await echoingLLM()
  const metrics = []
  const tk = await createToolkit({ builtins: false })
  const client = createClient({
    baseUrl: llm.url,
    style: "openai",
    model: "m",
    apiKey: API_KEY,
    headers: { "X-Org-Token": ORG_TOKEN },
    retries: 0,
    onMetric: (m) => metrics.push(m),
  })
  try {
    const err = await client.run("hi", { toolkit: tk }).then(
      () => assert.fail("the run should fail"),
      (e) => e,
    )
    assert.match(err.message, /^LLM 401: /)
    assert.ok(llm.requests[0].headers.authorization.includes(API_KEY), "the key was sent")
    for (const secret of [API_KEY, ORG_TOKEN]) {
      assert.ok(!err.message.includes(secret), err.message)
      assert.ok(!JSON.stringify(metrics).includes(secret), JSON.stringify(metrics))
    }
    assert.ok(err.message.includes("[REDACTED]"), err.message)
    assert.ok(metrics.some((m) => m.event === "run" && m.error), JSON.stringify(metrics))
  } finally {
    await llm.close()
  }
})

async function rpc(url, method, params) {
  const res = await fetch(url + "/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  })
  return res.json()
}
const message = (text) => ({ message: { role: "user", messageId: "m1", parts: [{ kind: "text", text }] } })

test("a served Task that failed on an echoing LLM: neither GetTask nor the store's file holds the secrets", async () => {
  const llm = await echoingLLM()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-leak-"))
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: API_KEY, headers: { "X-Org-Token": ORG_TOKEN }, retries: 0 })
  const tk = await createToolkit({ builtins: false })
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: { store: new FileTaskStore(dir) } })
  try {
    const sent = await rpc(srv.url, "SendMessage", { ...message("hi"), configuration: { blocking: true } })
    let got
    for (let i = 0; i < 200; i++) {
      got = (await rpc(srv.url, "GetTask", { id: sent.result.id })).result
      if (got.status.state === "failed") break
      await new Promise((r) => setTimeout(r, 20))
    }
    assert.equal(got.status.state, "failed")
    const said = JSON.stringify(got)
    assert.ok(said.includes("[REDACTED]"), said)
    const files = fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), "utf8")).join("\n")
    assert.ok(files.length > 0)
    for (const secret of [API_KEY, ORG_TOKEN]) {
      assert.ok(!said.includes(secret), said)
      assert.ok(!files.includes(secret), files)
    }
  } finally {
    await srv.stop()
    await llm.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("a task store that fails: the caller's error names no path on the server's disk; the server's log has it", async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tn-leak-store-"))
  const dir = path.join(root, "tasks")
  const tk = await createToolkit({ builtins: false })
  const client = { run: async (text) => ({ text, status: "done" }) }
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: { store: new FileTaskStore(dir) } })
  try {
    // The store's folder becomes a file: every save fails with ENOTDIR, on the real disk.
    fs.rmSync(dir, { recursive: true, force: true })
    fs.writeFileSync(dir, "not a folder")
    // The warning crosses to the JS thread on its own: give it a moment to land.
    const { value: answer, lines } = await warnings(async () => {
      const a = await rpc(srv.url, "SendMessage", message("x"))
      await new Promise((r) => setTimeout(r, 200))
      return a
    })
    assert.ok(answer.error, JSON.stringify(answer))
    assert.equal(answer.error.code, -32603)
    assert.ok(!answer.error.message.includes(root), answer.error.message)
    assert.ok(!answer.error.message.includes(os.tmpdir() + path.sep), answer.error.message)
    assert.ok(lines.some((l) => l.includes(root)), "the operator still sees where: " + lines.join("\n"))
  } finally {
    await srv.stop()
    fs.rmSync(root, { recursive: true, force: true })
  }
})
