// Pieces the scripted chat-completions endpoints share (server.mjs, stream/endpoint.mjs): their
// counters with the endpoint's own CPU and RSS (GET /stats, POST /reset), the error and JSON
// replies, reading a message's text, the HTTP server around them, its --port, listening and
// stopping. Each endpoint keeps its own counters and its own replies.

import http from "node:http"

/**
 * The counters of an endpoint: `stats` (its fields and their values after a reset are `initial`),
 * reset(), snapshot() and fail(res, status, message); `initial` must have `invalid` and `lastInvalid`.
 */
export function endpointStats(initial) {
  const stats = { ...initial }
  let cpuBase = process.cpuUsage()

  /** Zero the counters and the CPU baseline (POST /reset). */
  function reset() {
    Object.assign(stats, initial)
    cpuBase = process.cpuUsage()
  }

  /** The counters, the CPU since the last reset and RSS (GET /stats). */
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

  /** Count an invalid request and answer it with an OpenAI-style error. */
  function fail(res, status, message) {
    stats.invalid++
    stats.lastInvalid = message
    const body = JSON.stringify({ error: { message, type: "invalid_request_error" } })
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  }

  return { stats, reset, snapshot, fail }
}

/** The text of a message's `content`: a string, the joined text of its parts, or else its JSON. */
export function textOf(content) {
  if (typeof content === "string") return content
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : (p?.text ?? ""))).join("")
  return JSON.stringify(content) ?? ""
}

/** Answer 200 with `value` as JSON. */
function json(res, value) {
  const body = JSON.stringify(value)
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

/**
 * The endpoint's HTTP server. Each POST .../chat/completions is counted in `counters` (an
 * endpointStats()) and its JSON body goes to completions(res, body) (not JSON: a counted 400);
 * GET /stats and POST /reset are answered from `counters`, GET /health too with `health`; else 404.
 */
export function chatServer(completions, counters, { health = false } = {}) {
  const server = http.createServer({ noDelay: true, keepAlive: true }, (req, res) => {
    if (req.method === "POST" && req.url.endsWith("/chat/completions")) {
      const chunks = []
      req.on("data", (c) => chunks.push(c))
      req.on("end", () => chatRequest(completions, counters, res, chunks.length === 1 ? chunks[0].toString() : Buffer.concat(chunks).toString()))
      return
    }
    req.resume()
    if (req.method === "GET" && req.url === "/stats") return json(res, counters.snapshot())
    if (req.method === "POST" && req.url === "/reset") {
      counters.reset()
      return json(res, { ok: true })
    }
    if (health && req.method === "GET" && req.url === "/health") return json(res, { ok: true })
    res.writeHead(404, { "content-length": "0" })
    res.end()
  })
  // Clients keep pooled connections between runs and between phases; don't drop them early.
  server.keepAliveTimeout = 120_000
  server.headersTimeout = 121_000
  server.requestTimeout = 0
  return server
}

/** Count a chat request and hand its parsed body to completions(res, body), or answer 400 when it is not JSON. */
function chatRequest(completions, counters, res, raw) {
  counters.stats.requests++
  let body
  try {
    body = JSON.parse(raw)
  } catch {
    return counters.fail(res, 400, "request body is not JSON")
  }
  return completions(res, body)
}

/** The `--port N` argument as a number, or `fallback` without one. */
export function portArg(fallback) {
  const i = process.argv.indexOf("--port")
  return i !== -1 ? Number(process.argv[i + 1]) : fallback
}

/** Listen on 127.0.0.1:`port`, print {"listening": port} when ready, and stop on SIGTERM or SIGINT. */
export function serve(server, port) {
  server.listen(port, "127.0.0.1", () => process.stdout.write(JSON.stringify({ listening: server.address().port }) + "\n"))
  process.on("SIGTERM", () => stop(server))
  process.on("SIGINT", () => stop(server))
}

/** Close `server` and its connections, then exit 0. */
function stop(server) {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
