// One runner of the agents bench in one fresh process; started by bench/agents.mjs.
//
//   node bench/agents/worker.mjs <runner>
//
// Environment: BENCH_BASE_URL (the endpoint, ".../v1"), BENCH_PKG (the package to load),
// BENCH_WARMUP (trees before the timed ones), BENCH_RUNS (timed trees).
// Order: import the package + setup -> one cold tree -> warm-up trees -> timed trees, each with
// its wall time (process.hrtime.bigint()) and the process's CPU (process.cpuUsage(): user +
// system, every thread, so the Rust core's threads count). Peak RSS is the kernel's high-water
// mark for the whole process life, process.resourceUsage().maxRSS.
// Every tree is checked: final text, status, and FANOUT more `lookup` executions; a wrong tree
// fails the worker. The result is one stdout line, "BENCH_RESULT <json>".

import { pathToFileURL } from "node:url"
import { FANOUT, FINAL_TEXT, lookups } from "./scenario.mjs"
import { RUNNERS } from "./runners/index.mjs"

const name = process.argv[2]
const int = (k, fallback) => {
  const v = Number(process.env[k])
  return Number.isFinite(v) && v >= 0 ? Math.floor(v) : fallback
}
const cfg = { baseURL: process.env.BENCH_BASE_URL, pkg: process.env.BENCH_PKG, warmup: int("BENCH_WARMUP", 3), runs: int("BENCH_RUNS", 10) }
const now = () => process.hrtime.bigint()
const ms = (a, b) => Number(b - a) / 1e6
const cpuUs = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}
const emit = (r) => process.stdout.write("BENCH_RESULT " + JSON.stringify({ runner: name, pid: process.pid, ...r }) + "\n")

let runner
let trees = 0
async function tree() {
  const before = lookups.count
  const r = await runner.runTree()
  trees++
  if (r.text !== FINAL_TEXT || r.status !== "done") {
    throw new Error(`tree ${trees}: status ${JSON.stringify(r.status)}, text ${JSON.stringify(String(r.text).slice(0, 300))}`)
  }
  if (lookups.count - before !== FANOUT) throw new Error(`tree ${trees}: ${lookups.count - before} lookup executions, expected ${FANOUT}`)
  return r
}

async function main() {
  const spec = RUNNERS[name]
  if (!spec) throw new Error(`unknown runner ${JSON.stringify(name)}`)
  const t0 = now()
  const m = await import(pathToFileURL(cfg.pkg).href)
  const mod = m.createClient ? m : (m.default ?? m)
  const { setup } = await import(`./runners/${spec.file}`)
  const t1 = now()
  runner = await setup({ baseURL: cfg.baseURL, mod, variant: spec.variant })
  const t2 = now()
  const rssAfterSetup = process.memoryUsage.rss()
  const cold = await tree()
  const t3 = now()
  for (let i = 0; i < cfg.warmup; i++) await tree()
  const wallMs = []
  const cpuMs = []
  let last = cold
  for (let i = 0; i < cfg.runs; i++) {
    const c0 = cpuUs()
    const w0 = now()
    last = await tree()
    wallMs.push(ms(w0, now()))
    cpuMs.push((cpuUs() - c0) / 1000)
  }
  const maxRss = process.resourceUsage().maxRSS * 1024
  const mem = process.memoryUsage()
  await runner.close?.()
  emit({
    ok: true,
    trees,
    importMs: ms(t0, t1),
    setupMs: ms(t1, t2),
    coldTreeMs: ms(t2, t3),
    wallMs,
    cpuMs,
    maxRss,
    rssAfterSetup,
    rssEnd: mem.rss,
    heapUsedEnd: mem.heapUsed,
    externalEnd: mem.external,
    handlesPerTree: last.handles ?? null,
    info: runner.info?.() ?? null,
  })
}

main().then(
  () => process.exit(0),
  (e) => {
    emit({ ok: false, trees, error: e instanceof Error ? e.message : String(e) })
    process.exit(0)
  },
)
