// The benchmark driver (issue #5): `npm run bench` from the repository root, or `node bench/run.mjs`.
//
// 1. Installs the bench's own dependencies into bench/node_modules if missing (npm ci --prefix bench),
//    builds the addon if no toolnexus.*.node is present (npm run build), and, when the `limit` or `floor-hyper`
//    runner is on, has cargo bring its binary up to date (bench/limit, bench/floor; skipped without cargo).
// 2. Starts the scripted endpoint (server.mjs) in its own process on 127.0.0.1.
// 3. For each round, runner order rotated by one each round: one fresh worker process per runner
//    (worker.mjs): cold init, warm-up, timed sequential runs, throughput at N in flight.
// 4. The leak check: one long sequential run of one runner with memory sampled.
// 5. Writes results.json, results.md and chart.svg (into bench/, or BENCH_OUT).
//
// Every count is an environment variable (BENCH_X, or X alone); see README.md. Nothing here
// asserts a figure: it measures and reports.

import { execFileSync, spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { METRICS, fmt } from "./lib/metrics.mjs"
import { renderMarkdown, renderSvg } from "./lib/report.mjs"
import { median, metricsOverRounds, summarize } from "./lib/stats.mjs"
import { FINAL_TEXT, PROMPT } from "./lib/scenario.mjs"
import { machine } from "./lib/proc.mjs"
import { clockTicks, control, num, spawnEndpoint, toolnexusVersion, versionOf, workerEnv, workerResult } from "./lib/orchestrator.mjs"

const BENCH = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.dirname(BENCH)
const FLOOR = "floor"
const ALL_RUNNERS = ["floor", "toolnexus", "toolnexus-otel", "otel-sdk", "limit", "floor-hyper", "toolnexus-mcp", "ai-sdk", "langchain"]
/** The runner that is not JavaScript: the same core driven from Rust (bench/limit), its own binary. */
const LIMIT = "limit"
/** The floor of the work: the same run with hyper and serde_json alone, no toolnexus (bench/floor). */
const FLOOR_HYPER = "floor-hyper"
/** The Rust runners and the workspace packages whose binaries they are, built by cargo on first use. */
const RUST_RUNNERS = { [LIMIT]: "toolnexus-bench-limit", [FLOOR_HYPER]: "toolnexus-bench-floor" }
/**
 * Rows of ratios under the main table, each a runner's figures over another's from the same round,
 * with the goals the issues set (`atMost` for times and CPU, `atLeast` for throughput in runs/s).
 * JS cost: what Node, the binding and the JS layer add to the core. Core cost: what the core adds
 * to the least a program can do for the same run.
 */
const COST_ROWS = [
  {
    id: "jsCost",
    label: "JS cost",
    of: "toolnexus",
    over: LIMIT,
    goals: { p50: { atMost: 1.15 }, cpu: { atMost: 1.3 }, tput: { atLeast: 0.9 } },
  },
  {
    id: "coreCost",
    label: "core cost",
    of: LIMIT,
    over: FLOOR_HYPER,
    goals: { p50: { atMost: 1.3 }, cpu: { atMost: 1.3 }, tput: null },
  },
]

// ---------------------------------------------------------------------------------------------
// Configuration

const config = {
  warmup: num("WARMUP", 1000),
  runs: num("RUNS", 2000),
  tputRuns: num("TPUT_RUNS", 2000),
  concurrency: Math.max(1, num("CONCURRENCY", 32)),
  rounds: Math.max(1, num("ROUNDS", 5)),
  leakRuns: num("LEAK_RUNS", 20000),
  leakEvery: Math.max(1, num("LEAK_EVERY", 1000)),
  leakRunner: process.env.BENCH_LEAK_RUNNER ?? "toolnexus",
  workerTimeoutS: num("WORKER_TIMEOUT_S", 600),
  pauseMs: num("PAUSE_MS", 500),
}
const only = (process.env.BENCH_RUNNERS ?? "").split(",").map((s) => s.trim()).filter(Boolean)
const runners = only.length ? ALL_RUNNERS.filter((r) => r === FLOOR || only.includes(r)) : ALL_RUNNERS
for (const r of only) {
  if (!ALL_RUNNERS.includes(r)) {
    console.error(`[bench] unknown runner ${r}; known: ${ALL_RUNNERS.join(", ")}`)
    process.exit(2)
  }
}
const outDir = path.resolve(process.env.BENCH_OUT ?? BENCH)

const log = (...a) => console.error("[bench]", ...a)

// ---------------------------------------------------------------------------------------------
// Prerequisites

function ensureDeps() {
  const pkg = JSON.parse(readFileSync(path.join(BENCH, "package.json"), "utf8"))
  const missing = Object.keys(pkg.dependencies ?? {}).filter((d) => !existsSync(path.join(BENCH, "node_modules", d, "package.json")))
  if (!missing.length) return
  const verb = existsSync(path.join(BENCH, "package-lock.json")) ? "ci" : "install"
  log(`installing the bench's dependencies (missing: ${missing.join(", ")}): npm ${verb} --prefix bench`)
  const r = spawnSync("npm", [verb, "--prefix", BENCH, "--no-audit", "--no-fund"], { cwd: ROOT, stdio: "inherit" })
  if (r.status !== 0) throw new Error(`npm ${verb} --prefix bench failed`)
}

function ensureAddon() {
  if (readdirSync(ROOT).some((f) => /^toolnexus\..+\.node$/.test(f))) return
  if (!existsSync(path.join(ROOT, "node_modules", ".bin", "napi"))) {
    // A fresh clone: the build tools are the package's own dev dependencies.
    log("no toolnexus.*.node and no build tools: npm ci")
    const ci = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: ROOT, stdio: "inherit" })
    if (ci.status !== 0) throw new Error("npm ci failed")
  }
  log("no toolnexus.*.node found: npm run build")
  const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit" })
  if (r.status !== 0) throw new Error("npm run build failed")
}

/**
 * The Rust runners' binaries, built release by cargo in one call (a no-op when they are up to
 * date; the limit follows the core, so a changed core is rebuilt here as the addon would be).
 * For each name: `{ bin }`, or `{ skip }` without cargo, or `{ error }` when the build fails.
 */
function ensureRust(names) {
  const packages = names.map((n) => RUST_RUNNERS[n])
  const all = (x) => Object.fromEntries(names.map((n) => [n, x]))
  const args = ["build", "--release", ...packages.flatMap((p) => ["-p", p]), "--message-format=json-render-diagnostics"]
  log(`building the Rust runners: cargo ${args.slice(0, -1).join(" ")}`)
  const r = spawnSync("cargo", args, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", maxBuffer: 256 * 2 ** 20 })
  if (r.error?.code === "ENOENT") return all({ skip: "cargo is not installed (this runner is a Rust binary)" })
  if (r.error) return all({ error: `cargo: ${r.error.message}` })
  if (r.status !== 0) return all({ error: `cargo ${args.slice(0, -1).join(" ")} failed (exit ${r.status})` })
  const bins = {}
  for (const l of r.stdout.split("\n")) {
    if (!l.startsWith("{")) continue
    const m = JSON.parse(l)
    if (m.reason === "compiler-artifact" && m.executable) bins[m.target?.name] = m.executable
  }
  return Object.fromEntries(
    names.map((n) => [n, bins[RUST_RUNNERS[n]] ? { bin: bins[RUST_RUNNERS[n]] } : { error: `cargo built ${RUST_RUNNERS[n]} but named no executable` }]),
  )
}

/**
 * The benches with scenarios of their own, each in its own process after the main one (whose
 * endpoint is gone by then), writing its own results beside ours: the streaming scenario,
 * grep/glob against ripgrep and the cold start. `BENCH_OTHERS=none` (or a comma list of names) picks them.
 */
const OTHER_BENCHES = [
  { name: "stream", script: "stream.mjs", results: "stream-results.md" },
  { name: "grep-glob", script: "grep-glob.mjs", results: "grep-glob.json" },
  { name: "cold", script: "cold.mjs", results: "cold-results.json" },
]

function runOtherBenches() {
  const pick = (process.env.BENCH_OTHERS ?? "all").split(",").map((s) => s.trim())
  const out = []
  for (const b of OTHER_BENCHES) {
    if (!pick.includes("all") && !pick.includes(b.name)) continue
    log(`${b.name}: node bench/${b.script}`)
    const t0 = Date.now()
    const r = spawnSync(process.execPath, [path.join(BENCH, b.script)], { cwd: ROOT, stdio: "inherit" })
    const ok = r.status === 0
    log(`  ${b.name}: ${ok ? "done" : `failed (exit ${r.status ?? r.signal})`} in ${fmt((Date.now() - t0) / 1000)} s`)
    out.push({ name: b.name, ok, results: b.results, wallS: (Date.now() - t0) / 1000 })
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// The endpoint

/** The scripted endpoint (server.mjs) on a free port: { child, origin }. */
function startServer() {
  return spawnEndpoint([path.join(BENCH, "server.mjs"), "--port", "0"], "endpoint")
}

// ---------------------------------------------------------------------------------------------
// Workers

async function runWorker(server, runner, mode, clkTck, rust) {
  const native = RUST_RUNNERS[runner] ? (rust?.[runner] ?? { error: `the ${runner} runner was not built` }) : null
  if (native && !native.bin) {
    return native.skip ? { runner, mode, ok: false, skipped: true, reason: native.skip } : { runner, mode, ok: false, error: native.error }
  }
  await control(server.origin, "POST", "/reset")
  const loadavg = os.loadavg()
  const args = mode === "leak" ? ["--expose-gc"] : []
  const env = workerEnv({
    BENCH_BASE_URL: `${server.origin}/v1`,
    BENCH_WARMUP: String(config.warmup),
    BENCH_RUNS: String(config.runs),
    BENCH_TPUT_RUNS: String(config.tputRuns),
    BENCH_CONCURRENCY: String(config.concurrency),
    BENCH_LEAK_RUNS: String(config.leakRuns),
    BENCH_LEAK_EVERY: String(config.leakEvery),
    BENCH_CLK_TCK: String(clkTck),
    // The limit runner sets its HTTP client up as the binding does under this Node (zstd from 24 on).
    BENCH_NODE_MAJOR: process.versions.node.split(".")[0],
  })
  const t0 = process.hrtime.bigint()
  env.BENCH_SPAWN_NS = String(process.hrtime.bigint()) // the cold-init clock starts here
  // A Rust runner is its own binary, started the same way and printing the same result line.
  const [cmd, argv] = native ? [native.bin, [mode]] : [process.execPath, [...args, path.join(BENCH, "worker.mjs"), runner, mode]]
  const child = spawn(cmd, argv, { env, stdio: ["ignore", "pipe", "pipe"] })
  const { result: line, code } = await workerResult(child, `[${runner}]`, config.workerTimeoutS)
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9
  const serverStats = await control(server.origin, "GET", "/stats")

  const result = line ?? { runner, mode, ok: false, error: `worker exited with ${code} and no result` }
  result.loadavg = loadavg
  result.wallS = wallS
  result.server = serverStats
  if (result.ok) {
    // The endpoint is the second witness: every run is exactly two requests, all valid.
    const expected = 2 * result.totalRuns
    if (serverStats.invalid) {
      result.ok = false
      result.error = `endpoint rejected ${serverStats.invalid} request(s): ${serverStats.lastInvalid}`
    } else if (serverStats.requests !== expected) {
      result.ok = false
      result.error = `endpoint saw ${serverStats.requests} requests, expected ${expected} (2 per run)`
    }
  }
  return result
}

// ---------------------------------------------------------------------------------------------
// Summaries

function summarizeRunner(name, rounds) {
  const got = rounds.map((r) => r.results[name]).filter(Boolean)
  const ok = got.filter((r) => r.ok)
  if (!ok.length) {
    const skipped = got.find((r) => r.skipped)
    return { status: skipped ? "skipped" : "failed", reason: (skipped ?? got[0])?.reason ?? (got[0]?.error ?? "").split("\n")[0], roundsOk: 0 }
  }
  const metrics = metricsOverRounds(rounds, name, FLOOR, METRICS)
  const pick = (f) => median(ok.map(f))
  return {
    status: "ok",
    roundsOk: ok.length,
    failures: got.filter((r) => !r.ok).map((r) => r.reason ?? r.error),
    metrics,
    details: {
      p99Ms: pick((r) => r.seq.p99Ms),
      nodeBootMs: pick((r) => r.cold.nodeBootMs),
      spawnToScriptMs: pick((r) => r.cold.spawnToScriptMs),
      importMs: pick((r) => r.cold.importMs),
      setupMs: pick((r) => r.cold.setupMs),
      firstRunMs: pick((r) => r.cold.firstRunMs),
      childVmHwm: pick((r) => r.mem.childVmHwm),
      sampledMaxRss: pick((r) => r.mem.sampledMaxRss),
      tputCpuPerRunUs: pick((r) => r.tput.cpuPerRunUs + (r.tput.childCpuPerRunUs ?? 0)),
      serverCpuPerRequestUs: pick((r) => r.server.cpuPerRequestUs),
    },
  }
}

/**
 * Each cost row whose two runners ran: the first's figures divided by the second's from the same
 * round (median, min–max over rounds), with the row's goals. `{ [id]: { label, of, over, [metric]: { ratio, goal } } }`.
 */
function summarizeCosts(rounds) {
  const out = {}
  for (const row of COST_ROWS) {
    if (!runners.includes(row.of) || !runners.includes(row.over)) continue
    const cells = { label: row.label, of: row.of, over: row.over }
    for (const key of Object.keys(row.goals)) {
      const m = METRICS.find((x) => x.key === key)
      const ratios = []
      for (const r of rounds) {
        const a = r.results[row.of]
        const b = r.results[row.over]
        if (!a?.ok || !b?.ok) continue
        const d = m.get(b)
        if (d > 0) ratios.push(m.get(a) / d)
      }
      cells[key] = { ratio: summarize(ratios), goal: row.goals[key] }
    }
    out[row.id] = cells
  }
  return out
}

function summarizeLeak(result) {
  if (!result.ok) return { runner: result.runner, ok: false, skipped: !!result.skipped, reason: result.reason, error: result.error }
  const { samples, runs, every, gcBeforeSample, wallMs } = result.leak
  const series = (key) => {
    const xs = samples.map((s) => s[key])
    const first = xs[0]
    const last = xs.at(-1)
    const mid = xs[Math.floor((xs.length - 1) / 2)]
    const max = Math.max(...xs)
    const pct = (a, b) => (b ? ((a - b) / b) * 100 : null)
    return { first, last, max, lastVsFirstPct: pct(last, first), maxVsFirstPct: pct(max, first), secondHalfPct: pct(last, mid) }
  }
  return {
    runner: result.runner,
    ok: true,
    runs,
    every,
    gcBeforeSample,
    wallMs,
    rss: series("rss"),
    heapUsed: series("heapUsed"),
    external: series("external"),
    samples,
  }
}

// ---------------------------------------------------------------------------------------------
// Main

function versions() {
  const v = { toolnexus: toolnexusVersion(ROOT) }
  if (Object.keys(RUST_RUNNERS).some((n) => runners.includes(n))) {
    try {
      v.rustc = execFileSync("rustc", ["--version"], { encoding: "utf8" }).trim().replace(/^rustc /, "")
    } catch {
      v.rustc = "missing"
    }
  }
  for (const p of ["ai", "@ai-sdk/openai", "langchain", "@langchain/openai", "@langchain/core", "@langchain/langgraph", "@modelcontextprotocol/sdk", "zod"]) {
    v[p] = versionOf(path.join(BENCH, "node_modules", p, "package.json"))
  }
  return v
}

function oneLine(r) {
  if (r.skipped) return `skipped — ${r.reason}`
  if (!r.ok) return `FAILED — ${(r.error ?? "").split("\n")[0]}`
  const cpu = (r.seq.cpuPerRunUs + r.seq.childCpuPerRunUs) / 1000
  return (
    `p50 ${fmt(r.seq.p50Ms)} ms, p95 ${fmt(r.seq.p95Ms)} ms, CPU ${fmt(cpu)} ms/run, peak RSS ${fmt(r.mem.peakRss / 2 ** 20)} MiB, ` +
    `${fmt(r.tput.runsPerSec)} runs/s @${r.tput.concurrency}, cold ${fmt(r.cold.importMs + r.cold.setupMs + r.cold.firstRunMs)} ms (spawn→first run ${fmt(r.cold.coldInitMs)} ms)  (${fmt(r.wallS)} s)`
  )
}

async function main() {
  const started = Date.now()
  ensureDeps()
  ensureAddon()
  const wanted = Object.keys(RUST_RUNNERS).filter((n) => runners.includes(n) || (config.leakRuns > 0 && config.leakRunner === n))
  const rust = wanted.length ? ensureRust(wanted) : {}
  for (const [n, b] of Object.entries(rust)) {
    if (b.skip) log(`${n} runner skipped: ${b.skip}`)
    if (b.error) log(`${n} runner not built: ${b.error}`)
  }
  const clkTck = clockTicks()
  const loadavgStart = os.loadavg()
  const trialReasons = []
  if (config.warmup < 1000) trialReasons.push(`warm-up ${config.warmup} < 1000 runs`)
  if (config.rounds < 3) trialReasons.push(`${config.rounds} round(s) < 3`)
  if (config.runs < 1000) trialReasons.push(`${config.runs} timed runs < 1000`)
  log(`config ${JSON.stringify(config)}; runners ${runners.join(", ")}`)
  if (trialReasons.length) log(`trial settings: ${trialReasons.join("; ")}`)

  const server = await startServer()
  log(`endpoint ${server.origin} (pid ${server.child.pid})`)
  const rounds = []
  let leak = null
  try {
    for (let i = 0; i < config.rounds; i++) {
      const order = runners.map((_, j) => runners[(j + i) % runners.length])
      log(`round ${i + 1}/${config.rounds}: ${order.join(" → ")}`)
      const roundStart = Date.now()
      const round = { round: i + 1, order, results: {} }
      for (const name of order) {
        const r = await runWorker(server, name, "measure", clkTck, rust)
        round.results[name] = r
        log(`  ${name.padEnd(14)} ${oneLine(r)}`)
        await new Promise((res) => setTimeout(res, config.pauseMs))
      }
      round.wallS = (Date.now() - roundStart) / 1000
      rounds.push(round)
      if (i === 0 && config.rounds > 1) log(`round 1 took ${fmt(round.wallS)} s; the remaining ${config.rounds - 1} round(s) ≈ ${fmt(round.wallS * (config.rounds - 1))} s more`)
    }
    if (config.leakRuns > 0) {
      log(`leak check: ${config.leakRunner}, ${config.leakRuns} runs, memory every ${config.leakEvery}`)
      const r = await runWorker(server, config.leakRunner, "leak", clkTck, rust)
      leak = summarizeLeak(r)
      if (leak.ok) {
        const f = leak.rss
        log(`  RSS first ${fmt(f.first / 2 ** 20)} MiB, last ${fmt(f.last / 2 ** 20)} MiB, max ${fmt(f.max / 2 ** 20)} MiB, last vs first ${f.lastVsFirstPct.toFixed(1)}%`)
      } else log(`  ${oneLine(r)}`)
    }
  } finally {
    server.child.kill("SIGTERM")
  }

  const others = runOtherBenches()
  const summary = Object.fromEntries(runners.map((n) => [n, summarizeRunner(n, rounds)]))
  const costs = summarizeCosts(rounds)
  for (const c of Object.values(costs)) {
    const goal = (g) => (g?.atMost ? ` (goal ≤ ${g.atMost}×)` : g?.atLeast ? ` (goal ≥ ${g.atLeast}×)` : "")
    const show = (k) => `${fmt(c[k].ratio.median)}×${goal(c[k].goal)}`
    log(`${c.label} (${c.of} ÷ ${c.over}, median over rounds): p50 ${show("p50")}, CPU/run ${show("cpu")}, throughput ${show("tput")}`)
  }
  const results = {
    generatedAt: new Date().toISOString(),
    durationS: (Date.now() - started) / 1000,
    trial: trialReasons.length > 0,
    trialReasons,
    scenario: { prompt: PROMPT, finalText: FINAL_TEXT, llmRequestsPerRun: 2, toolExecutionsPerRun: 2 },
    config,
    floor: FLOOR,
    runners,
    machine: machine(loadavgStart),
    versions: versions(),
    summary,
    jsCost: costs.jsCost ?? null,
    coreCost: costs.coreCost ?? null,
    leak,
    others,
    rounds,
  }
  mkdirSync(outDir, { recursive: true })
  writeFileSync(path.join(outDir, "results.json"), JSON.stringify(results, null, 2) + "\n")
  writeFileSync(path.join(outDir, "results.md"), renderMarkdown(results))
  writeFileSync(path.join(outDir, "chart.svg"), renderSvg(results))
  log(`wrote ${["results.json", "results.md", "chart.svg"].map((f) => path.join(outDir, f)).join(", ")} in ${fmt(results.durationS)} s`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
