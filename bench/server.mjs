// A scripted OpenAI-compatible chat-completions endpoint for the benchmark, in its own process.
//
//   node bench/server.mjs [--port N]     (0 / absent = any free port; prints {"listening":PORT})
//
// POST .../chat/completions (any prefix, e.g. /v1/chat/completions), non-streaming only:
//   - no `role: "tool"` message in the request  -> two parallel tool calls, get_weather {"city":"Paris"}
//     and add {"a":2,"b":2}, under the names the request advertises in `tools` (the first name
//     containing "weather", the first other one containing "add"; so MCP-prefixed names such as
//     bench_get_weather work too);
//   - tool results present                      -> the final text (FINAL_TEXT), after checking that
//     the result for the weather call carries WEATHER_TEXT and the one for the add call is 4.
//   `stream: true` is refused with 400 so a runner that streams fails loudly instead of skewing.
// GET /stats  -> {requests, toolCallReplies, finalReplies, invalid, cpuUserUs, cpuSystemUs,
//                 cpuPerRequestUs, rss, lastInvalid}   (since the last reset)
// POST /reset -> zeroes the counters and the CPU baseline.
//
// Cost per request is kept small and flat: the request body is parsed once (JSON.parse: the
// tool names and tool results have to be read), response bodies are precomputed Buffers per
// advertised tool-name pair, and the only per-reply work is one copy of the template plus a
// fixed-width counter written into it (the completion id and both tool-call ids), so every
// reply is distinct at a constant Content-Length. The server reports its own CPU per request
// so a reader can see how much of a figure is the endpoint.

import http from "node:http"
import { FINAL_TEXT, MODEL, WEATHER_TEXT } from "./lib/scenario.mjs"

const ID_WIDTH = 12
const ID_SLOT = "#".repeat(ID_WIDTH)
const CREATED = 1_700_000_000

// ---------------------------------------------------------------------------------------------
// Precomputed replies

/** A reply template: the JSON bytes with ID_SLOT placeholders, and where the slots are. */
function template(obj) {
  const bytes = Buffer.from(JSON.stringify(obj), "utf8")
  const offsets = []
  for (let at = bytes.indexOf(ID_SLOT); at !== -1; at = bytes.indexOf(ID_SLOT, at + ID_WIDTH)) offsets.push(at)
  const headers = { "content-type": "application/json", "content-length": String(bytes.length) }
  return { bytes, offsets, headers }
}

function toolCallReply(weatherName, addName) {
  return template({
    id: `chatcmpl-${ID_SLOT}`,
    object: "chat.completion",
    created: CREATED,
    model: MODEL,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: `call_w_${ID_SLOT}`, type: "function", function: { name: weatherName, arguments: '{"city":"Paris"}' } },
            { id: `call_a_${ID_SLOT}`, type: "function", function: { name: addName, arguments: '{"a":2,"b":2}' } },
          ],
        },
        logprobs: null,
        finish_reason: "tool_calls",
      },
    ],
    usage: { prompt_tokens: 60, completion_tokens: 40, total_tokens: 100 },
  })
}

const FINAL_REPLY = template({
  id: `chatcmpl-${ID_SLOT}`,
  object: "chat.completion",
  created: CREATED,
  model: MODEL,
  choices: [
    { index: 0, message: { role: "assistant", content: FINAL_TEXT }, logprobs: null, finish_reason: "stop" },
  ],
  usage: { prompt_tokens: 120, completion_tokens: 20, total_tokens: 140 },
})

/** Tool-call templates by advertised name pair (runners differ: get_weather vs bench_get_weather). */
const toolReplies = new Map()

let counter = 0

/** One distinct reply: copy the template, write the counter into every id slot. */
function materialize(t) {
  const digits = String(++counter).padStart(ID_WIDTH, "0")
  const out = Buffer.allocUnsafe(t.bytes.length)
  t.bytes.copy(out)
  for (const at of t.offsets) out.write(digits, at, ID_WIDTH, "latin1")
  return out
}

// ---------------------------------------------------------------------------------------------
// Request handling

const stats = { requests: 0, toolCallReplies: 0, finalReplies: 0, invalid: 0, lastInvalid: null }
let cpuBase = process.cpuUsage()

function reset() {
  Object.assign(stats, { requests: 0, toolCallReplies: 0, finalReplies: 0, invalid: 0, lastInvalid: null })
  cpuBase = process.cpuUsage()
}

function snapshot() {
  const cpu = process.cpuUsage(cpuBase)
  return {
    ...stats,
    cpuUserUs: cpu.user,
    cpuSystemUs: cpu.system,
    cpuPerRequestUs: stats.requests ? (cpu.user + cpu.system) / stats.requests : null,
    rss: process.memoryUsage.rss(),
  }
}

function textOf(content) {
  if (typeof content === "string") return content
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : (p?.text ?? ""))).join("")
  return JSON.stringify(content) ?? ""
}

/** Check the tool results of a second request; returns an error string or null. */
function checkToolResults(messages) {
  let weather = 0
  let sum = 0
  for (const m of messages) {
    if (m?.role !== "tool") continue
    const id = String(m.tool_call_id ?? "")
    const text = textOf(m.content)
    if (id.startsWith("call_w_")) {
      if (!text.includes(WEATHER_TEXT)) return `weather result ${JSON.stringify(text)} lacks the weather text`
      weather++
    } else if (id.startsWith("call_a_")) {
      if (text.replace(/["\s]/g, "") !== "4") return `add result ${JSON.stringify(text)} is not 4`
      sum++
    } else {
      return `tool result for unknown call id ${JSON.stringify(id)}`
    }
  }
  if (weather !== 1 || sum !== 1) return `expected one result per tool call, got weather=${weather} add=${sum}`
  return null
}

function pickNames(tools) {
  const names = (Array.isArray(tools) ? tools : []).map((t) => t?.function?.name ?? t?.name).filter((n) => typeof n === "string")
  const weather = names.find((n) => n.includes("weather"))
  const add = names.find((n) => n !== weather && n.includes("add"))
  return weather && add ? [weather, add] : null
}

function fail(res, status, message) {
  stats.invalid++
  stats.lastInvalid = message
  const body = JSON.stringify({ error: { message, type: "invalid_request_error" } })
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

function send(res, t) {
  res.writeHead(200, t.headers)
  res.end(materialize(t))
}

function completions(req, res, raw) {
  stats.requests++
  let body
  try {
    body = JSON.parse(raw)
  } catch {
    return fail(res, 400, "request body is not JSON")
  }
  if (body.stream === true) return fail(res, 400, "this scripted endpoint does not stream; send stream: false")
  const messages = Array.isArray(body.messages) ? body.messages : []
  if (messages.some((m) => m?.role === "tool")) {
    const problem = checkToolResults(messages)
    if (problem) return fail(res, 400, problem)
    stats.finalReplies++
    return send(res, FINAL_REPLY)
  }
  const names = pickNames(body.tools)
  if (!names) return fail(res, 400, "the request advertises no weather and add tools")
  const key = names[0] + "\u0000" + names[1]
  let t = toolReplies.get(key)
  if (!t) toolReplies.set(key, (t = toolCallReply(names[0], names[1])))
  stats.toolCallReplies++
  return send(res, t)
}

function json(res, value) {
  const body = JSON.stringify(value)
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const server = http.createServer({ noDelay: true, keepAlive: true }, (req, res) => {
  if (req.method === "POST" && req.url.endsWith("/chat/completions")) {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => completions(req, res, chunks.length === 1 ? chunks[0].toString() : Buffer.concat(chunks).toString()))
    return
  }
  req.resume()
  if (req.method === "GET" && req.url === "/stats") return json(res, snapshot())
  if (req.method === "POST" && req.url === "/reset") {
    reset()
    return json(res, { ok: true })
  }
  if (req.method === "GET" && req.url === "/health") return json(res, { ok: true })
  res.writeHead(404, { "content-length": "0" })
  res.end()
})

// Clients keep pooled connections between runs and between phases; don't drop them early.
server.keepAliveTimeout = 120_000
server.headersTimeout = 121_000
server.requestTimeout = 0

const portArg = process.argv.indexOf("--port")
const port = portArg !== -1 ? Number(process.argv[portArg + 1]) : Number(process.env.BENCH_SERVER_PORT ?? 0)
server.listen(port, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ listening: server.address().port }) + "\n")
})

function stop() {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
