// Soak: the process ends at a random moment of mixed work, and must end the way it was asked to.
//
// `node bench/soak-exit.mjs [count]` (default 1,000; SOAK_PARALLEL children at once, default 2).
// Each child process runs four lanes of work at once against a scripted endpoint of its own:
// client runs whose async tool and hooks answer after a random delay, `client.stream()`
// consumed event by event, `toolkit.execute("bash", …)` on the runtime, and (every other child)
// calls to a local MCP server over stdio. At a random moment the child either calls
// `process.exit(code)` from a timer (mode "exit"), from inside a tool (mode "exit-in-tool"), or
// runs the lanes in a worker thread that it terminates before exiting (mode "worker").
//
// Counted per child: the exit code (must be the one asked for), death by signal (SIGABRT is an
// abort, SIGSEGV a segfault), a hang (killed after 20 s), and orphans: any process still alive
// 3 s after the child ended whose command line carries that child's tag (the MCP servers).
// Nothing here asserts: it prints a table and writes bench/soak-exit.json.

import { spawn } from "node:child_process"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"

const BENCH = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.dirname(BENCH)
const ENTRY = path.join(ROOT, "index.js")
const MCP = path.join(ROOT, "crates", "core", "tests", "fixtures", "mcp_server.mjs")
const COUNT = Number(process.argv[2] ?? process.env.SOAK_COUNT ?? 1000)
const PARALLEL = Number(process.env.SOAK_PARALLEL ?? 2)
const MODES = (process.env.SOAK_MODES ?? "exit,exit-in-tool,worker").split(",")

// The lanes, as CommonJS source that runs on the main thread or in a worker.
const LANES = `
const http = require("node:http")
const t = require(${JSON.stringify(ENTRY)})
const cfg = JSON.parse(process.env.SOAK_CFG)
const pause = (ms) => new Promise((r) => setTimeout(r, ms))
const rnd = (n) => Math.floor(Math.random() * n)

async function lanes(onTool) {
  let n = 0
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (d) => (body += d))
    req.on("end", () => {
      const json = JSON.parse(body)
      const answered = json.messages.some((m) => m.role === "tool")
      if (json.stream) {
        res.writeHead(200, { "content-type": "text/event-stream" })
        for (let i = 0; i < 20; i++) res.write("data: " + JSON.stringify({ choices: [{ index: 0, delta: { content: "w" + i + " " } }] }) + "\\n\\n")
        res.end("data: [DONE]\\n\\n")
        return
      }
      const message = answered
        ? { role: "assistant", content: "done" }
        : { role: "assistant", content: null, tool_calls: [{ id: "c" + n++, type: "function", function: { name: "work", arguments: "{}" } }] }
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: answered ? "stop" : "tool_calls" }] }))
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  server.unref()
  const work = t.defineTool({ name: "work", description: "w", run: async () => { onTool(); await pause(rnd(15)); return "ok" } })
  const mcpConfig = cfg.mcp ? { soak: { type: "local", command: [process.execPath, ${JSON.stringify(MCP)}, "--ignore-eof", "--tag", cfg.tag] } } : undefined
  const toolkit = await t.createToolkit({ extraTools: [work], mcpConfig })
  const client = t.createClient({
    baseUrl: "http://127.0.0.1:" + server.address().port + "/v1", apiKey: "k", model: "m", style: "openai",
    hooks: { beforeTool: async () => { await pause(rnd(3)) } },
    onMetric: () => {},
  })
  const forever = async (fn) => { for (;;) await fn() }
  return Promise.all([
    forever(() => client.run("go", { toolkit })),
    forever(async () => { for await (const ev of client.stream("go", { toolkit })) if (rnd(40) === 0) break }),
    forever(() => toolkit.execute("bash", { command: "sleep 0.0" + rnd(3) + "; echo hi" })),
    cfg.mcp ? forever(() => toolkit.execute("soak_slow", { ms: rnd(20) })) : null,
  ])
}
`

// The control: the same shape of work in plain Node (node:http endpoint, fetch, timers, a child
// process), with no addon loaded. Node itself can die when a worker is terminated mid-read
// (nodejs/node#38418 and kin); the control tells those deaths from ours.
const FLOOR_LANES = `
const http = require("node:http")
const { execFile } = require("node:child_process")
const cfg = JSON.parse(process.env.SOAK_CFG)
const pause = (ms) => new Promise((r) => setTimeout(r, ms))
const rnd = (n) => Math.floor(Math.random() * n)
async function lanes(onTool) {
  const server = http.createServer((req, res) => { req.resume(); req.on("end", () => { res.writeHead(200, { "content-type": "application/json" }); res.end('{"choices":[{"message":{"content":"done"}}]}') }) })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  server.unref()
  const url = "http://127.0.0.1:" + server.address().port + "/v1/chat/completions"
  const forever = async (fn) => { for (;;) await fn() }
  return Promise.all([
    forever(async () => { await (await fetch(url, { method: "POST", body: "{}" })).json(); onTool(); await pause(rnd(15)); await (await fetch(url, { method: "POST", body: "{}" })).json() }),
    forever(async () => { const r = await fetch(url, { method: "POST", body: "{}" }); for await (const c of r.body) if (rnd(40) === 0) break }),
    forever(() => new Promise((r) => execFile("/bin/sh", ["-c", "sleep 0.0" + rnd(3) + "; echo hi"], () => r()))),
  ])
}
`
const FLOOR = process.env.SOAK_FLOOR === "1"

const CHILD = `
const { Worker, isMainThread, parentPort } = require("node:worker_threads")
${FLOOR ? FLOOR_LANES : LANES}
const exitNow = () => process.exit(cfg.code)
if (cfg.mode === "worker") {
  const w = new Worker(${JSON.stringify(FLOOR ? FLOOR_LANES : LANES)} + "\\nlanes(() => {}).catch(() => {})", { eval: true, env: process.env, execArgv: [] })
  setTimeout(() => { w.terminate().finally(() => setTimeout(exitNow, rnd(20))) }, cfg.delay)
} else if (cfg.mode === "exit-in-tool") {
  let calls = 0
  lanes(() => { if (++calls === cfg.calls) exitNow() }).catch(() => {})
  setTimeout(exitNow, 5000)
} else {
  setTimeout(exitNow, cfg.delay)
  lanes(() => {}).catch(() => {})
}
`

function alive(tag) {
  const found = []
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8")
      const state = readFileSync(`/proc/${name}/stat`, "utf8").split(") ")[1]?.[0]
      if (cmd.includes(tag) && state !== "Z") found.push(Number(name))
    } catch {}
  }
  return found
}

function one(i) {
  const mode = MODES[i % MODES.length]
  const cfg = { mode, code: 3 + (i % 100), delay: 20 + Math.floor(Math.random() * 400), calls: 1 + Math.floor(Math.random() * 12), mcp: !FLOOR && i % 2 === 0, tag: `tn-soak-${process.pid}-${i}` }
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, ["-e", CHILD], { env: { ...process.env, SOAK_CFG: JSON.stringify(cfg) }, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (d) => (stderr += d))
    const killer = setTimeout(() => child.kill("SIGKILL"), 20_000)
    child.on("exit", (code, signal) => {
      clearTimeout(killer)
      const ms = Date.now() - started
      // A server may take a moment to go after its parent: look again for up to 3 s.
      const deadline = Date.now() + (cfg.mcp ? 3000 : 0)
      const check = () => {
        const orphans = alive(cfg.tag)
        if (orphans.length && Date.now() < deadline) return setTimeout(check, 100)
        for (const pid of orphans) try { process.kill(pid, "SIGKILL") } catch {}
        resolve({ i, mode, mcp: cfg.mcp, asked: cfg.code, code, signal, ms, orphans: orphans.length, hung: signal === "SIGKILL", stderr: stderr.slice(0, 400) })
      }
      check()
    })
  })
}

const results = []
let next = 0
async function lane() {
  while (next < COUNT) {
    const r = await one(next++)
    results.push(r)
    if (r.code !== r.asked || r.signal || r.orphans) console.log(`#${r.i} ${r.mode}${r.mcp ? "+mcp" : ""}: code=${r.code} (asked ${r.asked}) signal=${r.signal} orphans=${r.orphans} ${r.stderr}`)
    if (results.length % 100 === 0) console.log(`${results.length}/${COUNT}`)
  }
}
await Promise.all(Array.from({ length: PARALLEL }, lane))

const count = (f) => results.filter(f).length
const summary = {
  when: new Date().toISOString(),
  control: FLOOR ? "plain Node, no addon" : "toolnexus",
  node: process.version,
  children: results.length,
  byMode: Object.fromEntries(MODES.map((m) => [m, count((r) => r.mode === m)])),
  withMcp: count((r) => r.mcp),
  exitCodeAsAsked: count((r) => r.code === r.asked && !r.signal),
  aborts: count((r) => r.signal === "SIGABRT" || r.code === 134),
  segfaults: count((r) => r.signal === "SIGSEGV" || r.code === 139),
  otherSignals: count((r) => r.signal && !["SIGABRT", "SIGSEGV", "SIGKILL"].includes(r.signal)),
  hangs: count((r) => r.hung),
  wrongCode: count((r) => !r.signal && r.code !== r.asked),
  orphans: results.reduce((a, r) => a + r.orphans, 0),
  medianChildMs: results.map((r) => r.ms).sort((a, b) => a - b)[Math.floor(results.length / 2)],
}
console.log(summary)
writeFileSync(path.join(BENCH, FLOOR ? "soak-exit-floor.json" : "soak-exit.json"), JSON.stringify({ summary, failures: results.filter((r) => r.code !== r.asked || r.signal || r.orphans) }, null, 2) + "\n")
