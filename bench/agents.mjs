// The agents fan-out benchmark: `npm run bench:agents` from the repository root, or
// `node bench/agents.mjs`.
//
// One tree = a coordinator fanning out to 100 sub-agents against a scripted local endpoint
// (bench/agents/endpoint.mjs, its own process): the coordinator's model asks for 100 `task`
// calls in one message, each worker calls the JS tool `lookup` once and answers, the coordinator
// answers last; 202 LLM requests and 200 tool calls per tree. Peers, side by side in one run:
//   - floor             the same tree with plain createClient + nested client.run (Promise.all)
//   - runtime           agents.agent("coordinator", { team: [worker] }).run(), turn gate 16
//   - runtime-t8        the same at the default turn gate (8)
//   - runtime-defaults  every cap at its default (8 running children, the rest queue)
//   - reference         the reference TypeScript package's runtime, when it can be installed
// Each runner runs in a fresh process per round (bench/agents/worker.mjs); rounds rotate the order.
// Reported per runner: wall time and CPU per tree, peak RSS, each as a ratio to the floor of the
// same round, and the runtime's overhead per handle = (runner - floor) / 100.
// Writes agents-results.json and agents-results.md into bench/ (or BENCH_OUT). Nothing here
// asserts a figure.

import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { summarize } from "./lib/stats.mjs"
import { FANOUT, LLM_REQUESTS_PER_TREE, TOOL_CALLS_PER_TREE } from "./agents/scenario.mjs"
import { RUNNERS } from "./agents/runners/index.mjs"
import { machine, stopChild } from "./lib/proc.mjs"
import { firstJsonLine } from "./lib/orchestrator.mjs"

const BENCH = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.dirname(BENCH)
const REF_DIR = path.join(BENCH, "agents", "ref")
const REF_SPEC = "toolnexus@0.16.0"

function num(name, fallback) {
  const raw = process.env[`BENCH_${name}`] ?? process.env[name]
  if (raw === undefined || raw === "") return fallback
  const v = Number(raw)
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name}=${raw} is not a number >= 0`)
  return v
}

const config = {
  trees: Math.max(1, Math.floor(num("TREES", 10))),
  warmupTrees: Math.floor(num("WARMUP_TREES", 3)),
  rounds: Math.max(1, Math.floor(num("ROUNDS", 5))),
  workerTimeoutS: num("WORKER_TIMEOUT_S", 300),
  pauseMs: num("PAUSE_MS", 300),
  fanout: FANOUT,
}
const wanted = (process.env.BENCH_RUNNERS ?? Object.keys(RUNNERS).join(","))
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean)
for (const n of wanted) if (!RUNNERS[n]) throw new Error(`unknown runner ${n} (known: ${Object.keys(RUNNERS).join(", ")})`)
const names = ["floor", ...wanted.filter((n) => n !== "floor")]
const outDir = path.resolve(process.env.BENCH_OUT ?? BENCH)
const log = (...a) => console.error("[bench:agents]", ...a)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// ---------------------------------------------------------------------------------------------
// Packages

/** The entry file of an installed package directory (exports "." -> import/default/require, main, index.js). */
function entryOf(dir) {
  const pj = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"))
  let dot = pj.exports?.["."] ?? (typeof pj.exports === "string" ? pj.exports : undefined)
  while (dot && typeof dot === "object") dot = dot.node ?? dot.import ?? dot.default ?? dot.require
  return path.join(dir, typeof dot === "string" ? dot : (pj.main ?? "index.js"))
}

/** Where the reference package's entry is, installing it into bench/agents/ref if it can; or why not. */
function referencePackage() {
  const given = process.env.BENCH_REF_PKG
  if (given) {
    const p = path.resolve(given)
    if (!existsSync(p)) return { skipped: `BENCH_REF_PKG=${given} does not exist` }
    return { entry: existsSync(path.join(p, "package.json")) ? entryOf(p) : p }
  }
  const dir = path.join(REF_DIR, "node_modules", "toolnexus")
  if (!existsSync(dir)) {
    if (process.env.BENCH_REF_INSTALL === "0") return { skipped: `${REF_SPEC} is not installed in bench/agents/ref (BENCH_REF_INSTALL=0)` }
    log(`looking for ${REF_SPEC} on the registry`)
    const view = spawnSync("npm", ["view", REF_SPEC, "version"], { cwd: BENCH, encoding: "utf8", timeout: 30_000 })
    if (view.status !== 0 || !view.stdout.trim()) {
      const why = /E404|404 Not Found/.test(view.stderr) ? "not on the npm registry (404)" : `npm view failed: ${view.stderr.trim().split("\n")[0]}`
      return { skipped: `${REF_SPEC} could not be installed: ${why}` }
    }
    mkdirSync(REF_DIR, { recursive: true })
    const inst = spawnSync("npm", ["install", "--prefix", REF_DIR, "--no-save", "--no-audit", "--no-fund", REF_SPEC], { cwd: BENCH, encoding: "utf8", timeout: 300_000 })
    if (inst.status !== 0 || !existsSync(dir)) return { skipped: `npm install ${REF_SPEC} failed: ${inst.stderr.trim().split("\n").at(-1)}` }
  }
  return { entry: entryOf(dir) }
}

function packageVersion(entry) {
  for (let d = path.dirname(entry); d !== path.dirname(d); d = path.dirname(d)) {
    const pj = path.join(d, "package.json")
    if (existsSync(pj)) return JSON.parse(readFileSync(pj, "utf8")).version ?? null
  }
  return null
}

// ---------------------------------------------------------------------------------------------
// Processes

/** Start the endpoint, wait for its first JSON line; stdin open = alive. */
function startEndpoint() {
  const child = spawn(process.execPath, [path.join(BENCH, "agents", "endpoint.mjs")], { cwd: BENCH, stdio: ["pipe", "pipe", "inherit"] })
  const ready = firstJsonLine(child, (code) => new Error(`endpoint exited with ${code} before it was ready`))
  return ready.then((info) => ({ child, ...info }))
}


/** A control request to the endpoint (its own port, a fresh connection each time). */
function control(port, method, p) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path: p, agent: false }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (d) => (body += d))
      res.on("end", () => resolve(body ? JSON.parse(body) : null))
    })
    req.on("error", reject)
    req.end()
  })
}

/** One runner in one fresh process; resolves with its result line (or a failure). */
function runWorker(name, env) {
  // A TypeScript entry (a reference checkout given as BENCH_REF_PKG) is loaded through tsx.
  const loader = /\.[cm]?ts$/.test(env.BENCH_PKG) ? ["--import", "tsx"] : []
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...loader, path.join(BENCH, "agents", "worker.mjs"), name], {
      cwd: BENCH,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let out = ""
    let err = ""
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (err += d))
    const timer = setTimeout(() => {
      err += `\nkilled after ${config.workerTimeoutS} s`
      child.kill("SIGKILL")
    }, config.workerTimeoutS * 1000)
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      const line = out.split("\n").find((l) => l.startsWith("BENCH_RESULT "))
      if (line) return resolve(JSON.parse(line.slice("BENCH_RESULT ".length)))
      const tail = err.trim().split("\n").slice(-3).join(" | ")
      resolve({ runner: name, ok: false, error: `worker exited with ${signal ?? code} without a result${tail ? `: ${tail}` : ""}` })
    })
  })
}

// ---------------------------------------------------------------------------------------------
// Summaries

const medianOf = (xs) => summarize(xs).median

/** Per-round figures of one worker result (null when it failed). */
function figures(r) {
  if (!r?.ok) return null
  return {
    wallMs: medianOf(r.wallMs),
    cpuMs: medianOf(r.cpuMs),
    maxRss: r.maxRss,
    coldTreeMs: r.coldTreeMs,
    initMs: r.importMs + r.setupMs,
    rssAfterSetup: r.rssAfterSetup,
    wallMinMs: Math.min(...r.wallMs),
    wallMaxMs: Math.max(...r.wallMs),
    maxOpenConnections: r.endpoint?.maxOpenConnections ?? null,
    endpointCpuPerTreeMs: r.endpoint ? r.endpoint.cpuUs / 1000 / r.trees : null,
    maxObservedConcurrentTurns: r.info?.maxObservedConcurrentTurns ?? null,
    handlesPerTree: r.handlesPerTree,
  }
}

function summarizeRunner(name, rounds) {
  const per = rounds.map((round) => ({ f: figures(round[name]), floor: figures(round.floor) }))
  const ok = per.filter((p) => p.f)
  const failures = rounds.map((round) => round[name]).filter((r) => r && !r.ok)
  const pick = (k) => summarize(ok.map((p) => p.f[k]))
  const paired = ok.filter((p) => p.floor)
  const ratio = (k) => summarize(paired.map((p) => p.f[k] / p.floor[k]))
  const perHandle = (k, scale) => summarize(paired.map((p) => ((p.f[k] - p.floor[k]) * scale) / FANOUT))
  return {
    what: RUNNERS[name].what,
    roundsOk: ok.length,
    rounds: rounds.length,
    failed: failures.length ? failures[0].error : null,
    skipped: rounds.find((r) => r[name]?.skipped)?.[name].skipped ?? null,
    wallMs: pick("wallMs"),
    cpuMs: pick("cpuMs"),
    maxRss: pick("maxRss"),
    coldTreeMs: pick("coldTreeMs"),
    initMs: pick("initMs"),
    rssAfterSetup: pick("rssAfterSetup"),
    wallMinMs: summarize(ok.map((p) => p.f.wallMinMs)).min,
    wallMaxMs: summarize(ok.map((p) => p.f.wallMaxMs)).max,
    maxOpenConnections: pick("maxOpenConnections"),
    endpointCpuPerTreeMs: pick("endpointCpuPerTreeMs"),
    maxObservedConcurrentTurns: pick("maxObservedConcurrentTurns"),
    handlesPerTree: pick("handlesPerTree"),
    ratio: { wall: ratio("wallMs"), cpu: ratio("cpuMs"), rss: ratio("maxRss") },
    // µs of wall / CPU and KiB of peak RSS per handle, from the same round's floor
    perHandle: { wallUs: perHandle("wallMs", 1000), cpuUs: perHandle("cpuMs", 1000), rssKiB: perHandle("maxRss", 1 / 1024) },
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const f1 = (x) => (x == null ? "–" : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2))
const mib = (b) => (b == null ? "–" : (b / 1048576).toFixed(1))
const rng = (s, fmt = f1) => (s.median == null ? "–" : s.n > 1 ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : fmt(s.median))
const rngMiB = (s) => rng(s, mib)
const times = (s) => (s.median == null ? "" : ` ×${s.median.toFixed(2)}${s.n > 1 ? ` (${s.min.toFixed(2)}–${s.max.toFixed(2)})` : ""}`)
const signed = (x) => (x == null ? "–" : `${x >= 0 ? "+" : ""}${f1(x)}`)
const rngSigned = (s) => (s.median == null ? "–" : s.n > 1 ? `${signed(s.median)} (${signed(s.min)} to ${signed(s.max)})` : signed(s.median))

function markdown(res) {
  const { summary, config: c, machine } = res
  const lines = [
    "# Agents fan-out benchmark",
    "",
    `A coordinator fanning out to ${FANOUT} sub-agents against a scripted local endpoint: per tree ${LLM_REQUESTS_PER_TREE} LLM requests and ${TOOL_CALLS_PER_TREE} tool calls (${FANOUT} \`task\`, ${FANOUT} \`lookup\`).`,
    `Node ${machine.node}, ${machine.cpus} × ${machine.cpuModel}; ${c.rounds} round(s), a fresh process per runner per round, ${c.warmupTrees} warm-up + ${c.trees} timed trees each.`,
    "Cells: median over rounds (min–max over rounds); ×ratio to the floor of the same round. Generated by `npm run bench:agents` (bench/agents.mjs); see bench/README.md for the method.",
  ]
  if (res.trial) lines.push("", `**Trial settings** (${res.trialReasons.join("; ")}): indicative only.`)
  lines.push(
    "",
    "| runner | wall ms / tree | CPU ms / tree | peak RSS MiB | overhead / handle: wall µs | CPU µs | peak RSS KiB |",
    "|---|---:|---:|---:|---:|---:|---:|",
  )
  for (const [n, s] of Object.entries(summary)) {
    if (s.skipped) {
      lines.push(`| ${n} | skipped: ${s.skipped} | | | | | |`)
      continue
    }
    if (!s.roundsOk) {
      lines.push(`| ${n} | failed: ${String(s.failed).replaceAll("|", "\\|")} | | | | | |`)
      continue
    }
    const floor = n === "floor"
    lines.push(
      `| ${n} | ${rng(s.wallMs)}${floor ? "" : times(s.ratio.wall)} | ${rng(s.cpuMs)}${floor ? "" : times(s.ratio.cpu)} | ${rngMiB(s.maxRss)}${floor ? "" : times(s.ratio.rss)} | ${floor ? "—" : rngSigned(s.perHandle.wallUs)} | ${floor ? "—" : rngSigned(s.perHandle.cpuUs)} | ${floor ? "—" : rngSigned(s.perHandle.rssKiB)} |`,
    )
  }
  lines.push(
    "",
    `Overhead per handle = (runner − floor of the same round) ÷ ${FANOUT}, the median over rounds (min to max). Wall and CPU are medians of the timed trees of each process; peak RSS is the process's high-water mark over its whole life.`,
    "",
    "## Details",
    "",
    "| runner | cold tree ms | import + setup ms | RSS after setup MiB | fastest / slowest tree ms | open connections (max) | turns in flight (max) | endpoint CPU ms / tree | rounds ok |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  )
  for (const [n, s] of Object.entries(summary)) {
    if (s.skipped || !s.roundsOk) continue
    const failed = s.roundsOk < s.rounds ? ` (failed: ${String(s.failed).replaceAll("|", "\\|")})` : ""
    lines.push(
      `| ${n} | ${rng(s.coldTreeMs)} | ${rng(s.initMs)} | ${rngMiB(s.rssAfterSetup)} | ${f1(s.wallMinMs)} / ${f1(s.wallMaxMs)} | ${f1(s.maxOpenConnections.median)} | ${f1(s.maxObservedConcurrentTurns.median)} | ${rng(s.endpointCpuPerTreeMs)} | ${s.roundsOk}/${s.rounds}${failed} |`,
    )
  }
  lines.push("", "## Runners", "")
  for (const [n, s] of Object.entries(summary)) lines.push(`- \`${n}\`: ${s.what}`)
  lines.push(
    "",
    `Versions: this package ${res.versions.ours ?? "?"}${res.packages.reference ? `, reference ${res.versions.reference ?? `from ${res.packages.reference}`}` : ""}. Load average at start ${machine.loadavgStart.map((x) => x.toFixed(2)).join(" ")}, at end ${machine.loadavgEnd.map((x) => x.toFixed(2)).join(" ")}.`,
    "",
  )
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const started = Date.now()
  const loadavgStart = os.loadavg()
  const pkgs = { ours: process.env.BENCH_OURS_PKG ? path.resolve(process.env.BENCH_OURS_PKG) : path.join(ROOT, "index.js") }
  if (!process.env.BENCH_OURS_PKG && !readdirSync(ROOT).some((f) => /^toolnexus\..+\.node$/.test(f))) {
    throw new Error("no toolnexus.*.node: run `npm run build` first")
  }
  const skipped = {}
  if (names.some((n) => RUNNERS[n].pkg === "reference")) {
    const ref = referencePackage()
    if (ref.entry) pkgs.reference = ref.entry
    else {
      log(`reference runner skipped: ${ref.skipped}`)
      for (const n of names) if (RUNNERS[n].pkg === "reference") skipped[n] = ref.skipped
    }
  }
  const active = names.filter((n) => !skipped[n])
  const endpoint = await startEndpoint()
  const baseURL = `http://127.0.0.1:${endpoint.listening}/v1`
  const rounds = []
  try {
    for (let round = 0; round < config.rounds; round++) {
      const order = active.map((_, i) => active[(i + round) % active.length])
      const results = { ...Object.fromEntries(Object.entries(skipped).map(([n, why]) => [n, { ok: false, skipped: why }])) }
      for (const name of order) {
        await control(endpoint.control, "POST", "/reset")
        const r = await runWorker(name, {
          BENCH_BASE_URL: baseURL,
          BENCH_PKG: pkgs[RUNNERS[name].pkg],
          BENCH_WARMUP: String(config.warmupTrees),
          BENCH_RUNS: String(config.trees),
        })
        const stats = await control(endpoint.control, "GET", "/stats")
        r.endpoint = stats
        r.loadavg = os.loadavg()
        if (r.ok) {
          // The endpoint's count is the other half of the correctness check.
          const expected = r.trees * LLM_REQUESTS_PER_TREE
          if (stats.invalid) Object.assign(r, { ok: false, error: `endpoint saw ${stats.invalid} invalid request(s), last: ${stats.lastInvalid}` })
          else if (stats.requests !== expected) Object.assign(r, { ok: false, error: `endpoint saw ${stats.requests} requests for ${r.trees} trees, expected ${expected}` })
        } else if (stats.invalid && !r.error.includes(stats.lastInvalid)) {
          r.error += ` (endpoint: ${stats.lastInvalid})`
        }
        results[name] = r
        log(
          `round ${round + 1}/${config.rounds} ${name}: ` +
            (r.ok ? `wall ${f1(medianOf(r.wallMs))} ms/tree, CPU ${f1(medianOf(r.cpuMs))} ms/tree, peak RSS ${mib(r.maxRss)} MiB` : `failed: ${r.error}`),
        )
        await sleep(config.pauseMs)
      }
      rounds.push(results)
    }
  } finally {
    await stopChild(endpoint.child)
  }
  const trialReasons = []
  if (config.rounds < 3) trialReasons.push(`rounds ${config.rounds} < 3`)
  if (config.trees < 5) trialReasons.push(`trees ${config.trees} < 5`)
  const res = {
    generatedAt: new Date().toISOString(),
    durationS: (Date.now() - started) / 1000,
    trial: trialReasons.length > 0,
    trialReasons,
    scenario: { fanout: FANOUT, llmRequestsPerTree: LLM_REQUESTS_PER_TREE, toolCallsPerTree: TOOL_CALLS_PER_TREE },
    config,
    runners: Object.fromEntries(names.map((n) => [n, RUNNERS[n].what])),
    machine: machine(loadavgStart),
    packages: pkgs,
    versions: { ours: packageVersion(pkgs.ours), reference: pkgs.reference ? packageVersion(pkgs.reference) : null },
    summary: Object.fromEntries(names.map((n) => [n, summarizeRunner(n, rounds)])),
    rounds,
  }
  mkdirSync(outDir, { recursive: true })
  writeFileSync(path.join(outDir, "agents-results.json"), JSON.stringify(res, null, 2) + "\n")
  const md = markdown(res)
  writeFileSync(path.join(outDir, "agents-results.md"), md)
  console.log(md)
  log(`wrote ${path.join(outDir, "agents-results.json")} and agents-results.md in ${f1(res.durationS)} s`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
