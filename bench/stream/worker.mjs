// One stream runner in one fresh process; started by bench/stream.mjs.
//
//   node bench/stream/worker.mjs <runner>
//
// Environment: BENCH_BASE_URL (the endpoint, ".../v1"), BENCH_WARMUP, BENCH_RUNS, BENCH_CLK_TCK.
// Phases: import + setup, one cold run, WARMUP runs, RUNS timed sequential runs. Every run is
// checked (400 text deltas whose concatenation is the scripted text, one tool call, the final text);
// a wrong run fails the worker. The result is one stdout line, "BENCH_RESULT <json>".

const { statusBytes, descendants, cpuMicrosOf } = await import("../lib/proc.mjs")
const S = await import("./scenario.mjs")
const { loadRunner, percentile } = await import("../lib/worker.mjs")

const runnerName = process.argv[2]
const int = (name, fallback) => {
  const v = Number(process.env[name])
  return process.env[name] && Number.isFinite(v) && v >= 0 ? Math.floor(v) : fallback
}
const cfg = { baseURL: process.env.BENCH_BASE_URL, warmup: int("BENCH_WARMUP", 200), runs: int("BENCH_RUNS", 500) }

const now = () => process.hrtime.bigint()
const ms = (a, b) => Number(b - a) / 1e6
const cpuNow = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}
const emit = (result) => process.stdout.write("BENCH_RESULT " + JSON.stringify({ runner: runnerName, pid: process.pid, ...result }) + "\n")

const sortedOf = (xs) => Array.from(xs).sort((a, b) => a - b)

let runner
let runsDone = 0
/** One run, checked; returns [wall ms, time to first text delta ms, the runner's output]. */
async function run() {
  const t0 = now()
  const out = await runner.run()
  const t1 = now()
  runsDone++
  const problem =
    out.deltas !== S.TEXT_DELTAS_PER_RUN
      ? `saw ${out.deltas} text deltas, expected ${S.TEXT_DELTAS_PER_RUN}`
      : out.streamed !== S.ALL_TEXT
        ? `the streamed text differs from the scripted one: ${JSON.stringify(out.streamed.slice(0, 120))}…`
        : out.toolCalls !== 1
          ? `saw ${out.toolCalls} tool calls, expected 1`
          : out.finalText !== S.FINAL_TEXT
            ? `final text ${JSON.stringify(String(out.finalText).slice(0, 120))}… is not the scripted answer`
            : S.toolCalls.count !== runsDone
              ? `the tool ran ${S.toolCalls.count} times in ${runsDone} runs`
              : !(out.firstTextAt > t0)
                ? "no time for the first text delta"
                : null
  if (problem) throw new Error(`run ${runsDone}: ${problem}`)
  return [ms(t0, t1), ms(t0, out.firstTextAt), out]
}

try {
  const loaded = await loadRunner(import.meta.url, runnerName, cfg.baseURL)
  const { tImport, tImported, tSetup } = loaded
  runner = loaded.runner
  const [firstRunMs, firstTtfeMs, firstOut] = await run()
  const cold = { importMs: ms(tImport, tImported), setupMs: ms(tImported, tSetup), firstRunMs, firstTtfeMs }

  for (let i = 0; i < cfg.warmup; i++) await run()

  const kids = descendants()
  const wall = new Float64Array(cfg.runs)
  const ttfe = new Float64Array(cfg.runs)
  let reads = 0
  const cpu0 = cpuNow()
  const kidCpu0 = cpuMicrosOf(kids)
  const t0 = now()
  for (let i = 0; i < cfg.runs; i++) {
    const [w, f, out] = await run()
    wall[i] = w
    ttfe[i] = f
    reads += out.reads ?? 0
  }
  const wallMs = ms(t0, now())
  const cpuUs = cpuNow() - cpu0
  const kidCpuUs = cpuMicrosOf(kids) - kidCpu0
  const vmHwm = statusBytes("self", "VmHWM")
  const kidHwm = kids.reduce((sum, pid) => sum + (statusBytes(pid, "VmHWM") ?? 0), 0)
  await runner.close?.()

  const n = cfg.runs
  const w = sortedOf(wall)
  const f = sortedOf(ttfe)
  const cpuPerRunUs = n ? (cpuUs + kidCpuUs) / n : null
  emit({
    ok: true,
    config: { warmup: cfg.warmup, runs: n },
    cold,
    totalRuns: runsDone,
    toolExecutions: S.toolCalls.count,
    seq: {
      runs: n,
      wallMs,
      p50Ms: percentile(w, 50),
      p95Ms: percentile(w, 95),
      p99Ms: percentile(w, 99),
      meanMs: n ? wallMs / n : null,
      ttfeP50Ms: percentile(f, 50),
      ttfeP95Ms: percentile(f, 95),
      wireEventsPerRun: S.WIRE_EVENTS_PER_RUN,
      wallPerEventUs: n ? (wallMs * 1000) / n / S.WIRE_EVENTS_PER_RUN : null,
      cpuPerRunUs,
      childCpuPerRunUs: n ? kidCpuUs / n : 0,
      cpuPerEventUs: n ? cpuPerRunUs / S.WIRE_EVENTS_PER_RUN : null,
      userEventsPerRun: firstOut.events,
      readsPerRun: n && reads ? reads / n : null,
    },
    mem: { vmHwm, childVmHwm: kidHwm, childPids: kids.length, peakRss: (vmHwm ?? process.memoryUsage.rss()) + kidHwm },
  })
  process.exit(0)
} catch (e) {
  emit({ ok: false, totalRuns: runsDone, error: e?.stack ?? String(e) })
  process.exit(1)
}
