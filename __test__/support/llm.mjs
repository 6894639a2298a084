// Shared test support: a scripted LLM endpoint on a real node:http server, reply builders for
// both wire styles, and a helper that runs a snippet in a fresh Node process.
// (Not a test file: the name does not match the runner's test patterns.)

import http from "node:http"
import { spawn } from "node:child_process"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
export const ENTRY_URL = pathToFileURL(path.join(REPO, "index.js")).href

/**
 * Start a local endpoint. `script` is either an array (the n-th request gets the n-th reply; the
 * last one repeats) or a function `(request, index) => reply`. A reply is
 * `{ status?, headers?, body }` (a non-string body is JSON-encoded), `{ hang: true }` to never
 * answer, `{ sse: [frame, ...] }` to answer with an event stream (each string written as is, see
 * `sse`), or `{ respond: async (res) => ... }` to write the response by hand. Every request is recorded as `{ method, path, headers, raw, json, closed }`.
 */
export async function startLLM(script) {
  const requests = []
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", async () => {
      const raw = Buffer.concat(chunks).toString("utf8")
      let json
      try {
        json = JSON.parse(raw)
      } catch {
        json = undefined
      }
      // `closed` settles when the client side goes away (e.g. an aborted in-flight request).
      const closed = new Promise((resolve) => res.on("close", resolve))
      const entry = { method: req.method, path: req.url, headers: req.headers, raw, json, closed }
      const index = requests.length
      requests.push(entry)
      let reply
      try {
        reply = typeof script === "function" ? await script(entry, index) : script[Math.min(index, script.length - 1)]
      } catch (e) {
        reply = { status: 599, body: `script error: ${e?.message ?? e}` }
      }
      if (!reply || reply.hang) return
      if (typeof reply.respond === "function") {
        // Full control of the response (e.g. a stream written piece by piece).
        await reply.respond(res)
        return
      }
      if (Array.isArray(reply.sse)) {
        res.writeHead(reply.status ?? 200, { "content-type": "text/event-stream", ...(reply.headers ?? {}) })
        for (const frame of reply.sse) res.write(frame)
        res.end()
        return
      }
      const body = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body ?? {})
      res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...(reply.headers ?? {}) })
      res.end(body)
    })
  })
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address()
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      }),
  }
}

// ---- OpenAI-style replies ----

export function oaText(content, usage) {
  const body = { id: "cmpl-x", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }] }
  if (usage) body.usage = usage
  return { body }
}

/** `calls`: [{ id, name, args }] where args is an object (encoded) or a raw string (sent as is). */
export function oaCalls(calls, usage, content = null) {
  const tool_calls = calls.map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.name, arguments: typeof c.args === "string" ? c.args : JSON.stringify(c.args ?? {}) },
  }))
  const body = { choices: [{ index: 0, message: { role: "assistant", content, tool_calls }, finish_reason: "tool_calls" }] }
  if (usage) body.usage = usage
  return { body }
}

// ---- Server-sent events ----

/** One SSE frame: `data: <payload>` and a blank line (a non-string payload is JSON-encoded). */
export const sse = (payload) => `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`

/** The OpenAI end-of-stream frame. */
export const SSE_DONE = "data: [DONE]\n\n"

/** An OpenAI chunk carrying one `delta` (plus any top-level extras such as `usage`). */
export const oaChunk = (delta, extra = {}) => ({ id: "chunk", object: "chat.completion.chunk", choices: [{ index: 0, delta }], ...extra })

/** A text delta chunk. */
export const oaDeltaText = (content) => oaChunk({ content })

/** A chunk with tool-call fragments: `parts` = [{ index, id?, name?, args? }]. */
export const oaDeltaTools = (parts) =>
  oaChunk({
    tool_calls: parts.map((p) => {
      const tc = { index: p.index }
      if (p.id !== undefined) tc.id = p.id
      if (p.id !== undefined) tc.type = "function"
      const fn = {}
      if (p.name !== undefined) fn.name = p.name
      if (p.args !== undefined) fn.arguments = p.args
      tc.function = fn
      return tc
    }),
  })

/** The trailing usage-only chunk OpenAI sends with `stream_options.include_usage`. */
export const oaUsageChunk = (prompt_tokens, completion_tokens, total_tokens = prompt_tokens + completion_tokens) => ({
  id: "chunk",
  choices: [],
  usage: { prompt_tokens, completion_tokens, total_tokens },
})

/** Split `text` into `n` consecutive pieces (the last takes the remainder); joined they give `text` back. */
export function pieces(text, n) {
  const size = Math.max(1, Math.floor(text.length / n))
  const out = []
  for (let i = 0; i < n - 1; i++) out.push(text.slice(i * size, (i + 1) * size))
  out.push(text.slice((n - 1) * size))
  return out
}

// ---- small async helpers ----

/** A promise with its resolve/reject exposed. */
export function deferred() {
  let resolve
  let reject
  const promise = new Promise((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Resolve `promise` or fail after `ms` — an upper bound only, never a lower one. */
export function within(ms, promise, what) {
  let timer
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms}ms`)), ms)
  })
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort() {
  // A port below the systems' ephemeral ranges (Linux from 32768, Windows from 49152): a closed
  // ephemeral port can be picked as a client's own source port, and a socket that connects to
  // itself succeeds instead of being refused. Free when a listener could take it just now.
  for (let i = 0; i < 50; i++) {
    const port = 20000 + Math.floor(Math.random() * 12000)
    const server = http.createServer()
    const ok = await new Promise((resolve) => {
      server.once("error", () => resolve(false))
      server.listen(port, "127.0.0.1", () => resolve(true))
    })
    if (ok) {
      await new Promise((resolve) => server.close(resolve))
      return port
    }
  }
  throw new Error("closedPort: no free port in 20000-31999 after 50 tries")
}

// ---- Anthropic-style replies ----

export function anReply(blocks, usage) {
  const body = { id: "msg_x", type: "message", role: "assistant", content: blocks, stop_reason: "end_turn" }
  if (usage) body.usage = usage
  return { body }
}

export const text = (t) => ({ type: "text", text: t })
export const toolUse = (id, name, input) => ({ type: "tool_use", id, name, input })

/** True when any message of an OpenAI-style request is a tool result. */
export const sawToolResult = (entry) => (entry.json?.messages ?? []).some((m) => m.role === "tool")

/**
 * Run an ES-module snippet in a fresh Node process. The snippet may import the package through
 * the `ENTRY` placeholder. Resolves `{ code, signal, stdout, stderr, ms, timedOut }`; the child is
 * killed after `timeoutMs`.
 */
export function runChild(source, { env = process.env, timeoutMs = 10_000, nodeArgs = [] } = {}) {
  env = cleanEnv(env)
  const code = source.replaceAll("ENTRY", JSON.stringify(ENTRY_URL))
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, [...nodeArgs, "--input-type=module", "-e", code], { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill("SIGKILL")
    }, timeoutMs)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started, timedOut })
    })
  })
}

/** A child's environment: the parent's test-runner marker removed so the child is a plain process. */
export function cleanEnv(env = process.env) {
  const out = { ...env }
  delete out.NODE_TEST_CONTEXT
  return out
}

/** The environment without any variable the client reads an API key from. */
export function envWithoutKeys() {
  const env = { ...process.env }
  for (const k of ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"]) delete env[k]
  return env
}
