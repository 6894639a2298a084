// The peer for the A2A profile: the least a plain Node `http` server does to speak the same
// JSON-RPC wire (SPEC §7B: SendMessage returns a submitted task, fulfilment runs in the
// background with one LLM request through global fetch, GetTask reads the task back from a Map).
// Prints {"url":...} once listening.
import http from "node:http"
import { randomUUID } from "node:crypto"
import { API_KEY, MODEL, PROMPT } from "../lib/scenario.mjs"

const llm = process.argv[2]
const tasks = new Map()

async function fulfil(id, text, contextId) {
  tasks.set(id, { id, contextId, status: { state: "working" } })
  try {
    const res = await fetch(`${llm}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: text || PROMPT }] }),
    })
    const body = await res.json()
    const out = body.choices[0].message.content
    tasks.set(id, { id, contextId, status: { state: "completed" }, artifacts: [{ artifactId: randomUUID(), parts: [{ kind: "text", text: out }] }] })
  } catch (e) {
    tasks.set(id, { id, contextId, status: { state: "failed", message: { role: "agent", parts: [{ kind: "text", text: String(e) }] } } })
  }
}

const server = http.createServer((req, res) => {
  let body = ""
  req.setEncoding("utf8")
  req.on("data", (c) => (body += c))
  req.on("end", () => {
    const reply = (obj) => {
      const bytes = JSON.stringify(obj)
      res.writeHead(200, { "content-type": "application/json" })
      res.end(bytes)
    }
    let rpc
    try {
      rpc = JSON.parse(body)
    } catch {
      return reply({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } })
    }
    if (rpc.method === "SendMessage") {
      const parts = rpc.params?.message?.parts ?? []
      const text = parts.filter((p) => p?.kind === "text").map((p) => p.text).join("")
      const id = randomUUID()
      const task = { id, contextId: rpc.params?.message?.contextId, status: { state: "submitted" } }
      tasks.set(id, task)
      void fulfil(id, text, task.contextId)
      return reply({ jsonrpc: "2.0", id: rpc.id, result: task })
    }
    if (rpc.method === "GetTask") {
      const task = tasks.get(String(rpc.params?.id ?? ""))
      if (!task) return reply({ jsonrpc: "2.0", id: rpc.id, error: { code: -32001, message: "Task not found" } })
      return reply({ jsonrpc: "2.0", id: rpc.id, result: task })
    }
    reply({ jsonrpc: "2.0", id: rpc.id, error: { code: -32601, message: `Method not found: ${rpc.method}` } })
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` })))
process.stdin.resume()
process.stdin.on("end", () => process.exit(0))
