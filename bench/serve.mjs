// The serving benchmark (issue #13): `npm run bench:serve` from the repository root, or
// `node bench/serve.mjs`.
//
// Three profiles, each against a peer that does the same work in Node:
//   - mcp: `tools/call get_weather` on POST /mcp (streamable HTTP). toolnexus `toolkit.serve({ mcp })`
//     against a Node `http` server on the official MCP SDK (serve/peer-sdk-mcp.mjs).
//   - a2a: one `SendMessage` then one `GetTask` for the returned id, per sequence. toolnexus
//     `toolkit.serve({ a2a, client })` against a plain Node server speaking the same wire
//     (serve/peer-node-a2a.mjs). Both fulfil each task with one request to a scripted LLM
//     (serve/llm.mjs, its own process).
//   - a2a-v1: the same sequence in A2A v1.0's wire (`A2A-Version: 1.0`, `returnImmediately`),
//     toolnexus against the A2A SDK's own server (@a2a-js/sdk's DefaultRequestHandler on express,
//     serve/peer-sdk-a2a.mjs) whose executor makes the same one LLM request per task.
// For each profile, each peer runs in its own fresh process; autocannon drives it at 1, 16 and
// 64 concurrent connections for DURATION seconds each after a warm-up; peer order rotates per
// round. Before timing, one request per peer is checked for the right answer.
// Writes serve-results.json and serve-results.md into bench/ (or BENCH_OUT). Nothing here
// asserts a figure.

import { spawn, spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { FINAL_TEXT, WEATHER_TEXT } from "./lib/scenario.mjs"
import { stopChild } from "./lib/proc.mjs"
import { firstJsonLine } from "./lib/orchestrator.mjs"

const BENCH = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.dirname(BENCH)
const require = createRequire(path.join(BENCH, "package.json"))

function num(name, fallback) {
  const raw = process.env[`BENCH_${name}`] ?? process.env[name]
  if (raw === undefined || raw === "") return fallback
  const v = Number(raw)
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name}=${raw} is not a positive number`)
  return v
}

const config = {
  duration: num("DURATION", 5),
  warmup: num("WARMUP_S", 2),
  rounds: Math.floor(num("ROUNDS", 2)),
  connections: (process.env.BENCH_CONNECTIONS ?? "1,16,64").split(",").map(Number).filter((n) => n > 0),
}
const outDir = path.resolve(process.env.BENCH_OUT ?? BENCH)
const log = (...a) => console.error("[bench:serve]", ...a)

const PROFILES = {
  mcp: { peers: { toolnexus: ["serve/peer-toolnexus.mjs", "mcp"], "mcp-sdk": ["serve/peer-sdk-mcp.mjs"] } },
  a2a: { peers: { toolnexus: ["serve/peer-toolnexus.mjs", "a2a"], "node-http": ["serve/peer-node-a2a.mjs"] } },
  "a2a-v1": { peers: { toolnexus: ["serve/peer-toolnexus.mjs", "a2a"], "a2a-sdk": ["serve/peer-sdk-a2a.mjs"] } },
}
const usesLlm = (profile) => profile !== "mcp"

// ---------------------------------------------------------------------------------------------
// Processes

/** Start a node script, wait for its first JSON line on stdout; stdin open = alive. */
function startNode(args) {
  const child = spawn(process.execPath, args, { cwd: BENCH, stdio: ["pipe", "pipe", "inherit"] })
  const ready = firstJsonLine(child, (code) => new Error(`${args.join(" ")}: exited with ${code} before it was ready`))
  return ready.then((info) => ({ child, info }))
}


// ---------------------------------------------------------------------------------------------
// Requests

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }
const MCP_CALL = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_weather", arguments: { city: "Paris" } } })
const A2A_SEND = JSON.stringify({
  jsonrpc: "2.0",
  id: "s",
  method: "SendMessage",
  params: { message: { role: "user", messageId: "m", parts: [{ kind: "text", text: "weather?" }] } },
})
const getTask = (id) => JSON.stringify({ jsonrpc: "2.0", id: "g", method: "GetTask", params: { id } })
const V1_HEADERS = { "content-type": "application/json", "a2a-version": "1.0" }
const V1_SEND = JSON.stringify({
  jsonrpc: "2.0",
  id: "s",
  method: "SendMessage",
  params: { message: { role: "ROLE_USER", messageId: "m", parts: [{ text: "weather?" }] }, configuration: { returnImmediately: true } },
})
/** Per profile: the send's body and headers, where its answer keeps the task id, and the completed state's name. */
const A2A_WIRES = {
  a2a: { headers: { "content-type": "application/json" }, send: A2A_SEND, idOf: (r) => r?.id, completed: "completed", text: (t) => t.artifacts?.[0]?.parts?.[0]?.text },
  "a2a-v1": { headers: V1_HEADERS, send: V1_SEND, idOf: (r) => r?.task?.id, completed: "TASK_STATE_COMPLETED", text: (t) => t.artifacts?.[0]?.parts?.[0]?.text },
}

/** The JSON-RPC message of an MCP reply, JSON or one SSE event. */
function mcpMessage(text) {
  const t = text.trim()
  if (t.startsWith("{")) return JSON.parse(t)
  const data = t.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim())
  return JSON.parse(data.at(-1))
}

/** One checked request per peer before timing: a wrong answer stops the bench. */
async function check(profile, url) {
  if (profile === "mcp") {
    const res = await fetch(url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: MCP_CALL })
    const msg = mcpMessage(await res.text())
    const text = msg.result?.content?.[0]?.text
    if (res.status !== 200 || text !== WEATHER_TEXT) throw new Error(`mcp check failed at ${url}: ${res.status} ${JSON.stringify(msg)}`)
    return
  }
  const wire = A2A_WIRES[profile]
  const rpc = async (body) => (await fetch(url + "/", { method: "POST", headers: wire.headers, body })).json()
  const sent = await rpc(wire.send)
  const id = wire.idOf(sent.result)
  if (!id) throw new Error(`a2a check failed at ${url}: ${JSON.stringify(sent)}`)
  for (let i = 0; i < 200; i++) {
    const got = await rpc(getTask(id))
    const state = got.result?.status?.state
    if (state === wire.completed) {
      const text = wire.text(got.result)
      if (text !== FINAL_TEXT) throw new Error(`a2a check: wrong artifact ${JSON.stringify(got)}`)
      return
    }
    if (state === "failed" || state === "TASK_STATE_FAILED") throw new Error(`a2a check: task failed ${JSON.stringify(got)}`)
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`a2a check: task never completed at ${url}`)
}

function requestsFor(profile) {
  if (profile === "mcp") return [{ method: "POST", path: "/mcp", headers: MCP_HEADERS, body: MCP_CALL }]
  const wire = A2A_WIRES[profile]
  return [
    {
      method: "POST",
      path: "/",
      headers: wire.headers,
      body: wire.send,
      onResponse: (status, body, context) => {
        try {
          context.id = wire.idOf(JSON.parse(body).result)
        } catch {
          context.id = undefined
        }
      },
    },
    {
      method: "POST",
      path: "/",
      headers: wire.headers,
      setupRequest: (req, context) => (context.id ? { ...req, body: getTask(context.id) } : null),
    },
  ]
}

async function drive(autocannon, profile, url, connections, duration) {
  const result = await autocannon({ url, connections, duration, requests: requestsFor(profile), pipelining: 1 })
  return {
    connections,
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

function summarize(samples) {
  // samples: { profile: { peer: { connections: [run...] } } }
  const out = {}
  for (const [profile, peers] of Object.entries(samples)) {
    out[profile] = {}
    for (const [peer, byConn] of Object.entries(peers)) {
      out[profile][peer] = {}
      for (const [c, runs] of Object.entries(byConn)) {
        out[profile][peer][c] = {
          rps: median(runs.map((r) => r.rps)),
          p50: median(runs.map((r) => r.p50)),
          p99: median(runs.map((r) => r.p99)),
          errors: runs.reduce((n, r) => n + r.errors + r.timeouts + r.non2xx, 0),
        }
      }
    }
  }
  return out
}

function markdown(summary, meta) {
  const lines = [
    "# Serving benchmark",
    "",
    `Node ${meta.node}, ${meta.cpus} × ${meta.cpu}; ${meta.rounds} round(s) × ${meta.duration} s per level; medians of rounds.`,
    "Generated by `npm run bench:serve` (bench/serve.mjs); see bench/README.md for the method.",
    "",
  ]
  const titles = {
    mcp: "MCP `tools/call` on POST /mcp (streamable HTTP)",
    a2a: "A2A `SendMessage` + `GetTask` (requests/s counts both; one LLM round trip per task in the background)",
    "a2a-v1": "A2A v1.0 `SendMessage` (`returnImmediately`) + `GetTask`, against the A2A SDK's own server (requests/s counts both)",
  }
  for (const [profile, peers] of Object.entries(summary)) {
    const names = Object.keys(peers)
    const [ours, peer] = names
    lines.push(`## ${titles[profile]}`, "")
    lines.push(`| clients | ${names.map((n) => `${n} req/s | ${n} p99 ms`).join(" | ")} | ${ours} ÷ ${peer} |`)
    lines.push(`|---:|${names.map(() => "---:|---:").join("|")}|---:|`)
    for (const c of Object.keys(peers[ours])) {
      const cells = names.map((n) => `${Math.round(peers[n][c].rps)} | ${peers[n][c].p99}`)
      const ratio = peers[ours][c].rps / peers[peer][c].rps
      lines.push(`| ${c} | ${cells.join(" | ")} | ${ratio.toFixed(2)}× |`)
    }
    const errs = names.map((n) => `${n} ${Object.values(peers[n]).reduce((s, v) => s + v.errors, 0)}`).join(", ")
    lines.push("", `Errors, timeouts and non-2xx replies over all runs: ${errs}.`, "")
  }
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  if (!existsSync(path.join(BENCH, "node_modules", "autocannon", "package.json"))) {
    log("installing the bench's dependencies: npm ci --prefix bench")
    const r = spawnSync("npm", ["ci", "--prefix", BENCH, "--no-audit", "--no-fund"], { cwd: ROOT, stdio: "inherit" })
    if (r.status !== 0) throw new Error("npm ci --prefix bench failed")
  }
  if (!readdirSync(ROOT).some((f) => /^toolnexus\..+\.node$/.test(f))) throw new Error("no toolnexus.*.node: run `npm run build` first")
  const autocannon = require("autocannon")
  const llm = await startNode(["serve/llm.mjs"])
  const llmUrl = `http://127.0.0.1:${llm.info.listening}`
  const samples = {}
  try {
    // BENCH_PROFILES=mcp,a2a-v1 runs only those (for a quick look; the committed results run all).
    const only = process.env.BENCH_PROFILES?.split(",").filter(Boolean)
    for (const [profile, { peers }] of Object.entries(PROFILES).filter(([p]) => !only || only.includes(p))) {
      samples[profile] = {}
      const names = Object.keys(peers)
      for (const n of names) samples[profile][n] = Object.fromEntries(config.connections.map((c) => [c, []]))
      for (let round = 0; round < config.rounds; round++) {
        const order = names.map((_, i) => names[(i + round) % names.length])
        for (const name of order) {
          const [script, ...rest] = peers[name]
          const args = usesLlm(profile) ? [script, ...rest, llmUrl] : [script, ...rest]
          const peer = await startNode(args)
          try {
            const url = peer.info.url
            await check(profile, url)
            await drive(autocannon, profile, url, Math.max(...config.connections), config.warmup)
            for (const c of config.connections) {
              const r = await drive(autocannon, profile, url, c, config.duration)
              samples[profile][name][c].push(r)
              log(`${profile} ${name} round ${round + 1} c=${c}: ${Math.round(r.rps)} req/s p99 ${r.p99} ms errors ${r.errors + r.timeouts + r.non2xx}`)
            }
          } finally {
            await stopChild(peer.child)
          }
        }
      }
    }
  } finally {
    await stopChild(llm.child)
  }
  const meta = {
    node: process.version,
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? "?",
    rounds: config.rounds,
    duration: config.duration,
    date: new Date().toISOString(),
  }
  const summary = summarize(samples)
  mkdirSync(outDir, { recursive: true })
  writeFileSync(path.join(outDir, "serve-results.json"), JSON.stringify({ meta, config, summary, samples }, null, 2) + "\n")
  writeFileSync(path.join(outDir, "serve-results.md"), markdown(summary, meta) + "\n")
  console.log(markdown(summary, meta))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
