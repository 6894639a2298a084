// One runner, one fresh process: cold init, warm-up, timed phases; started by run.mjs.
//
//   node bench/worker.mjs <runner> measure|leak
//
// Environment (set by run.mjs): BENCH_BASE_URL (the endpoint, ".../v1"), BENCH_SPAWN_NS (the
// parent's process.hrtime.bigint() taken immediately before spawn), BENCH_WARMUP, BENCH_RUNS,
// BENCH_TPUT_RUNS, BENCH_CONCURRENCY, BENCH_LEAK_RUNS, BENCH_LEAK_EVERY, BENCH_CLK_TCK.
//
// The result is one stdout line, "BENCH_RESULT <json>"; anything else a library prints is
// passed through by the parent as log.
//
// Cold init: process.hrtime.bigint() reads CLOCK_MONOTONIC (libuv uv_hrtime), one clock for the
// whole machine, so the parent's pre-spawn reading and this process's readings are comparable:
// coldInitMs = (first run complete) - (parent's reading just before spawn). It covers exec, Node
// bootstrap, loading this script, importing the runner (and its library), setup (toolkit, client,
// agent; for MCP, spawning and handshaking the MCP server) and the first run. Only the runner
// module is imported after the clock starts being split; this script's own imports (three tiny
// local modules and node:fs) are the same for every runner.

const tScript = process.hrtime.bigint()
const bootMs = performance.now() // Node's own view: ms from its time origin (process start) to here

const { statusBytes, descendants, cpuMicrosOf } = await import("./lib/proc.mjs")
const { FINAL_TEXT, SkipRunner, toolCalls } = await import("./lib/scenario.mjs")
const { loadRunner, percentile } = await import("./lib/worker.mjs")

const [runnerName, mode = "measure"] = process.argv.slice(2)
const int = (name, fallback) => {
  const v = Number(process.env[name])
  return Number.isFinite(v) && v >= 0 ? Math.floor(v) : fallback
}
const cfg = {
  baseURL: process.env.BENCH_BASE_URL,
  spawnNs: process.env.BENCH_SPAWN_NS ? BigInt(process.env.BENCH_SPAWN_NS) : null,
  warmup: int("BENCH_WARMUP", 1000),
  runs: int("BENCH_RUNS", 2000),
  tputRuns: int("BENCH_TPUT_RUNS", 2000),
  concurrency: Math.max(1, int("BENCH_CONCURRENCY", 32)),
  leakRuns: int("BENCH_LEAK_RUNS", 20000),
  leakEvery: Math.max(1, int("BENCH_LEAK_EVERY", 1000)),
}

const ms = (a, b) => Number(b - a) / 1e6
const now = () => process.hrtime.bigint()

function emit(result) {
  process.stdout.write("BENCH_RESULT " + JSON.stringify({ runner: runnerName, mode, pid: process.pid, ...result }) + "\n")
}

let runner
let wrongAnswers = 0
let wrongExample = null
/** One run, with its answer checked (a cheap string compare; a wrong answer fails the worker). */
async function run() {
  const text = await runner.run()
  if (text !== FINAL_TEXT) {
    wrongAnswers++
    wrongExample ??= text
  }
}

function checkCorrect(runsSoFar) {
  if (wrongAnswers) throw new Error(`${wrongAnswers} run(s) returned a wrong answer, e.g. ${JSON.stringify(wrongExample)}`)
  // In-process tools only: the MCP runner's tools execute in the MCP server (the endpoint checks those).
  if (toolCalls.count !== 0 && toolCalls.count !== 2 * runsSoFar) {
    throw new Error(`expected ${2 * runsSoFar} tool executions, counted ${toolCalls.count}`)
  }
}

const cpuNow = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}

async function measure() {
  let totalRuns = 1
  // ---- warm-up ----
  for (let i = 0; i < cfg.warmup; i++) await run()
  totalRuns += cfg.warmup
  checkCorrect(totalRuns)

  // Children (e.g. the MCP server) are found once, after setup; their CPU is read from /proc.
  const kids = descendants()
  let sampledMaxRss = process.memoryUsage.rss()
  const sample = () => {
    const rss = process.memoryUsage.rss()
    if (rss > sampledMaxRss) sampledMaxRss = rss
  }

  // ---- sequential runs, each timed ----
  const durations = new Float64Array(cfg.runs)
  const seqCpu0 = cpuNow()
  const seqKidCpu0 = cpuMicrosOf(kids)
  const seqT0 = now()
  for (let i = 0; i < cfg.runs; i++) {
    const t0 = now()
    await run()
    durations[i] = ms(t0, now())
    if (i % 100 === 99) sample()
  }
  const seqWallMs = ms(seqT0, now())
  const seqCpu = cpuNow() - seqCpu0
  const seqKidCpu = cpuMicrosOf(kids) - seqKidCpu0
  totalRuns += cfg.runs
  checkCorrect(totalRuns)

  // ---- throughput: cfg.concurrency runs in flight until cfg.tputRuns are done ----
  let started = 0
  const lane = async () => {
    while (started < cfg.tputRuns) {
      started++
      await run()
    }
  }
  const sampler = setInterval(sample, 50)
  const tputCpu0 = cpuNow()
  const tputKidCpu0 = cpuMicrosOf(kids)
  const tputT0 = now()
  await Promise.all(Array.from({ length: Math.min(cfg.concurrency, cfg.tputRuns) }, lane))
  const tputWallMs = ms(tputT0, now())
  const tputCpu = cpuNow() - tputCpu0
  const tputKidCpu = cpuMicrosOf(kids) - tputKidCpu0
  clearInterval(sampler)
  sample()
  totalRuns += cfg.tputRuns
  checkCorrect(totalRuns)

  // Peak RSS over the process's life (kernel high-water mark), and of its children, read before close.
  const vmHwm = statusBytes("self", "VmHWM")
  const childHwm = kids.length ? kids.reduce((sum, pid) => sum + (statusBytes(pid, "VmHWM") ?? 0), 0) : 0
  await runner.close?.()

  const sorted = Array.from(durations).sort((a, b) => a - b)
  const mean = cfg.runs ? durations.reduce((a, b) => a + b, 0) / cfg.runs : null
  return {
    seq: {
      runs: cfg.runs,
      p50Ms: percentile(sorted, 50),
      p95Ms: percentile(sorted, 95),
      p99Ms: percentile(sorted, 99),
      meanMs: mean,
      minMs: sorted[0] ?? null,
      maxMs: sorted.at(-1) ?? null,
      wallMs: seqWallMs,
      cpuPerRunUs: cfg.runs ? seqCpu / cfg.runs : null,
      childCpuPerRunUs: cfg.runs && kids.length ? seqKidCpu / cfg.runs : 0,
    },
    tput: {
      runs: cfg.tputRuns,
      concurrency: cfg.concurrency,
      wallMs: tputWallMs,
      runsPerSec: tputWallMs > 0 ? cfg.tputRuns / (tputWallMs / 1000) : null,
      cpuPerRunUs: cfg.tputRuns ? tputCpu / cfg.tputRuns : null,
      childCpuPerRunUs: cfg.tputRuns && kids.length ? tputKidCpu / cfg.tputRuns : 0,
    },
    mem: {
      vmHwm,
      sampledMaxRss,
      childPids: kids.length,
      childVmHwm: childHwm,
      peakRss: (vmHwm ?? sampledMaxRss) + childHwm,
    },
    totalRuns,
    toolExecutionsInProcess: toolCalls.count,
  }
}

async function leak() {
  for (let i = 0; i < cfg.warmup; i++) await run()
  checkCorrect(1 + cfg.warmup)
  const gc = globalThis.gc ?? (() => {})
  const take = (runs) => {
    gc()
    const m = process.memoryUsage()
    return { runs, rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }
  }
  const samples = [take(0)]
  const t0 = now()
  for (let i = 1; i <= cfg.leakRuns; i++) {
    await run()
    if (i % cfg.leakEvery === 0) samples.push(take(i))
  }
  const wallMs = ms(t0, now())
  checkCorrect(1 + cfg.warmup + cfg.leakRuns)
  await runner.close?.()
  return { totalRuns: 1 + cfg.warmup + cfg.leakRuns, leak: { runs: cfg.leakRuns, every: cfg.leakEvery, gcBeforeSample: typeof globalThis.gc === "function", wallMs, samples } }
}

try {
  const loaded = await loadRunner(import.meta.url, runnerName, cfg.baseURL)
  const { tImport: tImportStart, tImported, tSetup } = loaded
  runner = loaded.runner
  await run()
  const tFirst = now()
  checkCorrect(1)
  const cold = {
    coldInitMs: cfg.spawnNs !== null ? ms(cfg.spawnNs, tFirst) : null,
    spawnToScriptMs: cfg.spawnNs !== null ? ms(cfg.spawnNs, tScript) : null,
    nodeBootMs: bootMs,
    importMs: ms(tImportStart, tImported),
    setupMs: ms(tImported, tSetup),
    firstRunMs: ms(tSetup, tFirst),
  }
  const body = mode === "leak" ? await leak() : await measure()
  const { spawnNs: _spawnNs, baseURL: _baseURL, ...config } = cfg
  emit({ ok: true, config, cold, ...body })
  process.exit(0)
} catch (e) {
  if (e instanceof SkipRunner) {
    emit({ ok: false, skipped: true, reason: e.message })
    process.exit(0)
  }
  emit({ ok: false, error: e?.stack ?? String(e) })
  process.exit(1)
}
