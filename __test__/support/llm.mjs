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
 * `{ status?, headers?, body }` (a non-string body is JSON-encoded), or `{ hang: true }` to never
 * answer. Every request is recorded as `{ method, path, headers, raw, json, closed }`.
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
export function runChild(source, { env = process.env, timeoutMs = 10_000 } = {}) {
  env = cleanEnv(env)
  const code = source.replaceAll("ENTRY", JSON.stringify(ENTRY_URL))
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, ["--input-type=module", "-e", code], { cwd: REPO, env, stdio: ["ignore", "pipe", "pipe"] })
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
