// The scripted OpenAI-style endpoint of the agents bench, in its own process.
//
//   node bench/agents/endpoint.mjs   prints {"listening":PORT,"control":PORT} on stdout; stdin closed = exit
//
// POST .../chat/completions, non-streaming, deterministic by `body.model`:
//   - COORDINATOR_MODEL, no tool message yet -> ONE assistant message with FANOUT `task` calls,
//     call_task_<i> {"agent":"worker","prompt":"job <i>"};
//   - COORDINATOR_MODEL, tool messages       -> FINAL_TEXT, after checking there are exactly FANOUT
//     tool results and the one for call_task_<i> is "done <i>";
//   - WORKER_MODEL (the job number is read from the user message "job <i>"), no tool message ->
//     one `lookup` call, call_lookup_<i> {"key":"<i>"};
//   - WORKER_MODEL, tool message             -> "done <i>", after checking the result for
//     call_lookup_<i> is "value-<i>".
// Every reply carries `usage`. Anything else (an unknown model, a tool not advertised, a wrong
// tool result, `stream: true`) is answered 400 and counted as invalid.
// On the control port:
// GET /stats  -> counters since the last reset: requests, replies by kind, invalid (+ the last
//                reason), connections opened and the high-water mark of open connections (how
//                many LLM requests a runner had in flight at once), its own CPU.
// POST /reset -> zeroes them.

import http from "node:http"
import {
  COORDINATOR_MODEL,
  COORDINATOR_USAGE,
  FANOUT,
  FINAL_TEXT,
  WORKER_MODEL,
  WORKER_USAGE,
  jobPrompt,
  lookupValue,
  workerAnswer,
} from "./scenario.mjs"

const CREATED = 1_700_000_000

function reply(model, message, usage) {
  const bytes = Buffer.from(
    JSON.stringify({
      id: "chatcmpl-agents",
      object: "chat.completion",
      created: CREATED,
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: message.tool_calls ? "tool_calls" : "stop" }],
      usage,
    }),
  )
  return { bytes, headers: { "content-type": "application/json", "content-length": String(bytes.length) } }
}

const call = (id, name, args) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } })
const taskId = (i) => `call_task_${i}`
const lookupId = (i) => `call_lookup_${i}`

// Every reply is precomputed: the endpoint's per-request work is one JSON.parse and the checks.
const FANOUT_REPLY = reply(
  COORDINATOR_MODEL,
  {
    role: "assistant",
    content: null,
    tool_calls: Array.from({ length: FANOUT }, (_, i) => call(taskId(i), "task", { agent: "worker", prompt: jobPrompt(i) })),
  },
  COORDINATOR_USAGE,
)
const FINAL_REPLY = reply(COORDINATOR_MODEL, { role: "assistant", content: FINAL_TEXT }, COORDINATOR_USAGE)
const LOOKUP_REPLIES = Array.from({ length: FANOUT }, (_, i) =>
  reply(WORKER_MODEL, { role: "assistant", content: null, tool_calls: [call(lookupId(i), "lookup", { key: String(i) })] }, WORKER_USAGE),
)
const DONE_REPLIES = Array.from({ length: FANOUT }, (_, i) => reply(WORKER_MODEL, { role: "assistant", content: workerAnswer(i) }, WORKER_USAGE))

const kinds = ["fanout", "final", "lookup", "done"]
let stats
let cpu0
let openConnections = 0
function reset() {
  stats = { requests: 0, replies: Object.fromEntries(kinds.map((k) => [k, 0])), invalid: 0, lastInvalid: null, connections: 0, maxOpenConnections: openConnections }
  cpu0 = process.cpuUsage()
}
reset()

/** A message's content as text (a string, or an array of text parts). */
function text(content) {
  if (typeof content === "string") return content
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : (p?.text ?? ""))).join("")
  return ""
}

const advertises = (body, name) => Array.isArray(body.tools) && body.tools.some((t) => (t.function?.name ?? t.name) === name)

/** The reply for a request body, or a string saying why it is invalid. */
function answer(body) {
  if (body.stream) return "stream: true is not supported by this endpoint"
  const messages = Array.isArray(body.messages) ? body.messages : []
  const tools = messages.filter((m) => m.role === "tool")
  if (body.model === COORDINATOR_MODEL) {
    if (!advertises(body, "task")) return "coordinator request does not advertise a `task` tool"
    if (tools.length === 0) return ["fanout", FANOUT_REPLY]
    if (tools.length !== FANOUT) return `coordinator got ${tools.length} tool results, expected ${FANOUT}`
    const byId = new Map(tools.map((m) => [m.tool_call_id, text(m.content)]))
    for (let i = 0; i < FANOUT; i++) {
      const got = byId.get(taskId(i))
      if (got !== workerAnswer(i)) return `coordinator: result of ${taskId(i)} is ${JSON.stringify(got)}, expected ${JSON.stringify(workerAnswer(i))}`
    }
    return ["final", FINAL_REPLY]
  }
  if (body.model === WORKER_MODEL) {
    if (!advertises(body, "lookup")) return "worker request does not advertise a `lookup` tool"
    const user = messages.find((m) => m.role === "user")
    const m = /job (\d+)/.exec(text(user?.content))
    const i = m ? Number(m[1]) : -1
    if (!(i >= 0 && i < FANOUT)) return `worker: no "job <i>" in the user message ${JSON.stringify(user?.content)}`
    if (tools.length === 0) return ["lookup", LOOKUP_REPLIES[i]]
    if (tools.length !== 1 || tools[0].tool_call_id !== lookupId(i) || text(tools[0].content) !== lookupValue(String(i))) {
      return `worker ${i}: wrong tool results ${JSON.stringify(tools)}`
    }
    return ["done", DONE_REPLIES[i]]
  }
  return `unknown model ${JSON.stringify(body.model)}`
}

function invalid(res, why) {
  stats.invalid++
  stats.lastInvalid = why
  const bytes = Buffer.from(JSON.stringify({ error: { message: why, type: "invalid_request_error" } }))
  res.writeHead(400, { "content-type": "application/json", "content-length": String(bytes.length) })
  res.end(bytes)
}

/** The control path, on its own port so its connection never counts as a runner's. */
const control = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    if (req.method === "GET" && req.url === "/stats") {
      const c = process.cpuUsage(cpu0)
      const body = Buffer.from(JSON.stringify({ ...stats, cpuUs: c.user + c.system, rss: process.memoryUsage.rss() }))
      res.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) })
      return res.end(body)
    }
    if (req.method === "POST" && req.url === "/reset") {
      reset()
      res.writeHead(204)
      return res.end()
    }
    res.writeHead(404)
    res.end()
  })
})

const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
      res.writeHead(404)
      return res.end()
    }
    stats.requests++
    let body
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      return invalid(res, "request body is not JSON")
    }
    const out = answer(body)
    if (typeof out === "string") return invalid(res, out)
    stats.replies[out[0]]++
    res.writeHead(200, out[1].headers)
    res.end(out[1].bytes)
  })
})
server.on("connection", (socket) => {
  openConnections++
  stats.connections++
  if (openConnections > stats.maxOpenConnections) stats.maxOpenConnections = openConnections
  socket.on("close", () => openConnections--)
})
server.keepAliveTimeout = 60_000
server.headersTimeout = 65_000
server.listen(0, "127.0.0.1", () =>
  control.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ listening: server.address().port, control: control.address().port }))),
)
process.stdin.resume()
process.stdin.on("end", () => process.exit(0))
