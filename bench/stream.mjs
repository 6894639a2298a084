// The streaming benchmark: `npm run bench:stream` from the repository root, `node bench/stream.mjs`,
// or `import { main } from "./stream.mjs"` (main() resolves to the results object; it does not exit).
//
// One run = two streamed chat-completions turns against a scripted local endpoint
// (bench/stream/endpoint.mjs, its own process): turn 1 streams 200 text deltas and one tool call
// (get_weather {"city":"Paris"}), the runner executes it, turn 2 streams 200 text deltas of the
// final answer. Runners (bench/stream/runners/): the plain-Node floor (fetch + hand-split SSE),
// toolnexus (client.stream), the AI SDK (streamText + fullStream). Each runs in a fresh process
// per round (bench/stream/worker.mjs), the order rotated each round; every run is checked.
// Reported per runner: time to first text delta, wall and CPU per SSE event, CPU per run, p50 run,
// peak RSS, each also as a ratio to the floor of the same round. Writes stream-results.json and
// stream-results.md into bench/ (or BENCH_OUT). Nothing here asserts a figure; as a script it
// exits 1 only when a runner failed (a wrong answer, a crash, an endpoint mismatch).

import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { fmt } from "./lib/metrics.mjs"
import { machine } from "./lib/proc.mjs"
import { clockTicks, control, num, spawnEndpoint, toolnexusVersion, versionOf, workerEnv, workerResult } from "./lib/orchestrator.mjs"
import { median, metricsOverRounds } from "./lib/stats.mjs"
import { STREAM_METRICS, goalLines, renderStreamMarkdown } from "./stream/report.mjs"
import { RUNNERS } from "./stream/runners/index.mjs"
import * as S from "./stream/scenario.mjs"

const BENCH = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.dirname(BENCH)
const FLOOR = "floor"
const log = (...a) => console.error("[bench:stream]", ...a)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

function readConfig() {
  return {
    warmup: num("WARMUP", 200),
    runs: Math.max(1, num("RUNS", 500)),
    rounds: Math.max(1, num("ROUNDS", 3)),
    workerTimeoutS: num("WORKER_TIMEOUT_S", 300),
    pauseMs: num("PAUSE_MS", 300),
    paceMs: num("PACE_MS", 0),
  }
}

function selectedRunners() {
  const only = (process.env.BENCH_RUNNERS ?? "").split(",").map((s) => s.trim()).filter(Boolean)
  for (const r of only) if (!RUNNERS.includes(r)) throw new Error(`unknown stream runner ${r}; known: ${RUNNERS.join(", ")}`)
  return only.length ? RUNNERS.filter((r) => r === FLOOR || only.includes(r)) : RUNNERS
}

// ---------------------------------------------------------------------------------------------
// Prerequisites (as bench/serve.mjs: the bench's own dependencies; the addon must be built)

function ensurePrerequisites() {
  const pkg = JSON.parse(readFileSync(path.join(BENCH, "package.json"), "utf8"))
  const missing = Object.keys(pkg.dependencies ?? {}).filter((d) => !existsSync(path.join(BENCH, "node_modules", d, "package.json")))
  if (missing.length) {
    log(`installing the bench's dependencies (missing: ${missing.join(", ")}): npm ci --prefix bench`)
    const r = spawnSync("npm", ["ci", "--prefix", BENCH, "--no-audit", "--no-fund"], { cwd: ROOT, stdio: "inherit" })
    if (r.status !== 0) throw new Error("npm ci --prefix bench failed")
  }
  if (!process.env.BENCH_OURS_PKG && !readdirSync(ROOT).some((f) => /^toolnexus\..+\.node$/.test(f))) {
    throw new Error("no toolnexus.*.node: run `npm run build` first")
  }
}

// ---------------------------------------------------------------------------------------------
// Endpoint and workers

/** The scripted streaming endpoint (stream/endpoint.mjs) on a free port: { child, origin }. */
function startEndpoint(paceMs) {
  return spawnEndpoint([path.join(BENCH, "stream", "endpoint.mjs"), "--port", "0", "--pace-ms", String(paceMs)], "stream endpoint")
}

async function runWorker(endpoint, runner, config, clkTck) {
  await control(endpoint.origin, "POST", "/reset")
  const loadavg = os.loadavg()
  const t0 = Date.now()
  const child = spawn(process.execPath, [path.join(BENCH, "stream", "worker.mjs"), runner], {
    env: workerEnv({
      BENCH_BASE_URL: `${endpoint.origin}/v1`,
      BENCH_WARMUP: String(config.warmup),
      BENCH_RUNS: String(config.runs),
      BENCH_CLK_TCK: String(clkTck),
      ...(process.env.BENCH_OURS_PKG ? { BENCH_OURS_PKG: path.resolve(process.env.BENCH_OURS_PKG) } : {}),
    }),
    stdio: ["ignore", "pipe", "pipe"],
  })
  const { result: line, code } = await workerResult(child, `[${runner}]`, config.workerTimeoutS)
  const stats = await control(endpoint.origin, "GET", "/stats")
  const result = line ?? { runner, ok: false, error: `worker exited with ${code} and no result` }
  Object.assign(result, { loadavg, wallS: (Date.now() - t0) / 1000, endpoint: stats })
  if (result.ok) {
    // The endpoint is the second witness: two valid requests and every event written, per run.
    const expected = 2 * result.totalRuns
    if (stats.invalid) Object.assign(result, { ok: false, error: `endpoint rejected ${stats.invalid} request(s): ${stats.lastInvalid}` })
    else if (stats.requests !== expected) Object.assign(result, { ok: false, error: `endpoint saw ${stats.requests} requests, expected ${expected}` })
    else if (stats.aborted || stats.eventsWritten !== S.WIRE_EVENTS_PER_RUN * result.totalRuns) {
      Object.assign(result, { ok: false, error: `endpoint wrote ${stats.eventsWritten} events (${stats.aborted} streams cut), expected ${S.WIRE_EVENTS_PER_RUN * result.totalRuns}` })
    }
  } else if (stats.invalid) result.error += ` (endpoint: ${stats.lastInvalid})`
  return result
}

// ---------------------------------------------------------------------------------------------
// Summaries

function summarizeRunner(name, rounds) {
  const got = rounds.map((r) => r.results[name]).filter(Boolean)
  const ok = got.filter((r) => r.ok)
  if (!ok.length) return { status: "failed", reason: (got[0]?.error ?? "not run").split("\n")[0], roundsOk: 0 }
  const metrics = metricsOverRounds(rounds, name, FLOOR, STREAM_METRICS)
  const pick = (f) => median(ok.map(f))
  return {
    status: "ok",
    roundsOk: ok.length,
    failures: got.filter((r) => !r.ok).map((r) => r.error),
    metrics,
    details: {
      p95Ms: pick((r) => r.seq.p95Ms),
      p99Ms: pick((r) => r.seq.p99Ms),
      meanMs: pick((r) => r.seq.meanMs),
      ttfeP95Ms: pick((r) => r.seq.ttfeP95Ms),
      userEventsPerRun: pick((r) => r.seq.userEventsPerRun),
      readsPerRun: pick((r) => r.seq.readsPerRun),
      coldMs: pick((r) => r.cold.importMs + r.cold.setupMs + r.cold.firstRunMs),
      endpointCpuPerRequestUs: pick((r) => r.endpoint.cpuPerRequestUs),
    },
  }
}

function versions() {
  const v = { toolnexus: toolnexusVersion(ROOT) }
  for (const p of ["ai", "@ai-sdk/openai", "zod"]) v[p] = versionOf(path.join(BENCH, "node_modules", p, "package.json"))
  return v
}

function oneLine(r) {
  if (!r.ok) return `FAILED — ${(r.error ?? "").split("\n")[0]}`
  const s = r.seq
  return (
    `TTFT ${fmt(s.ttfeP50Ms)} ms, ${fmt(s.wallPerEventUs)} µs wall/event, ${fmt(s.cpuPerEventUs)} µs CPU/event, ` +
    `CPU ${fmt(s.cpuPerRunUs / 1000)} ms/run, p50 ${fmt(s.p50Ms)} ms, peak RSS ${fmt(r.mem.peakRss / 2 ** 20)} MiB  (${fmt(r.wallS)} s)`
  )
}

// ---------------------------------------------------------------------------------------------
// Main

export async function main() {
  const started = Date.now()
  const config = readConfig()
  const runners = selectedRunners()
  const outDir = path.resolve(process.env.BENCH_OUT ?? BENCH)
  ensurePrerequisites()
  const clkTck = clockTicks()
  const loadavgStart = os.loadavg()
  const trialReasons = []
  if (config.rounds < 3) trialReasons.push(`${config.rounds} round(s) < 3`)
  if (config.warmup < 200) trialReasons.push(`warm-up ${config.warmup} < 200 runs`)
  if (config.runs < 500) trialReasons.push(`${config.runs} timed runs < 500`)
  log(`config ${JSON.stringify(config)}; runners ${runners.join(", ")}; load average ${loadavgStart.map(fmt).join(" / ")}`)
  if (trialReasons.length) log(`trial settings: ${trialReasons.join("; ")}`)

  const endpoint = await startEndpoint(config.paceMs)
  const rounds = []
  try {
    for (let i = 0; i < config.rounds; i++) {
      const order = runners.map((_, j) => runners[(j + i) % runners.length])
      log(`round ${i + 1}/${config.rounds}: ${order.join(" → ")}`)
      const round = { round: i + 1, order, results: {} }
      for (const name of order) {
        const r = await runWorker(endpoint, name, config, clkTck)
        round.results[name] = r
        log(`  ${name.padEnd(10)} ${oneLine(r)}`)
        await sleep(config.pauseMs)
      }
      rounds.push(round)
    }
  } finally {
    endpoint.child.kill("SIGTERM")
  }

  const summary = Object.fromEntries(runners.map((n) => [n, summarizeRunner(n, rounds)]))
  const failures = rounds.flatMap((r) => Object.values(r.results).filter((x) => !x.ok).map((x) => `round ${r.round} ${x.runner}: ${(x.error ?? "").split("\n")[0]}`))
  const results = {
    generatedAt: new Date().toISOString(),
    durationS: (Date.now() - started) / 1000,
    ok: failures.length === 0,
    failures,
    trial: trialReasons.length > 0,
    trialReasons,
    scenario: {
      prompt: S.PROMPT,
      finalText: S.FINAL_TEXT,
      deltasPerTurn: S.DELTAS_PER_TURN,
      textDeltasPerRun: S.TEXT_DELTAS_PER_RUN,
      toolCallChunks: S.TOOL_ARG_FRAGMENTS.length,
      wireEventsPerRun: S.WIRE_EVENTS_PER_RUN,
      llmRequestsPerRun: 2,
      toolExecutionsPerRun: 1,
      pacing: config.paceMs
        ? `one res.write per event, the next after setTimeout(${config.paceMs} ms)`
        : "one res.write per event, the next from setImmediate (one send() per event, TCP_NODELAY; no timer)",
    },
    config,
    floor: FLOOR,
    runners,
    machine: machine(loadavgStart),
    versions: versions(),
    summary,
    rounds,
  }
  mkdirSync(outDir, { recursive: true })
  writeFileSync(path.join(outDir, "stream-results.json"), JSON.stringify(results, null, 2) + "\n")
  writeFileSync(path.join(outDir, "stream-results.md"), renderStreamMarkdown(results))
  for (const l of goalLines(results)) log(l)
  if (failures.length) log(`failures:\n  ${failures.join("\n  ")}`)
  log(`wrote ${path.join(outDir, "stream-results.json")} and stream-results.md in ${fmt(results.durationS)} s`)
  return results
}

/** Run as a script (not imported): the entry Node was started with is this file. */
function isEntry() {
  try {
    return !!process.argv[1] && import.meta.url === pathToFileURL(realpathSync(path.resolve(process.argv[1]))).href
  } catch {
    return false
  }
}

if (isEntry()) {
  main().then(
    (res) => process.exit(res.ok ? 0 : 1),
    (e) => {
      console.error(e)
      process.exit(1)
    },
  )
}
