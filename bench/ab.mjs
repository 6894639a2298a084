#!/usr/bin/env node
// Two builds of this package side by side in one run: the `toolnexus` runner of the main
// benchmark, one fresh process per build per round, the order swapped every round, against one
// scripted endpoint.
//
//   node bench/ab.mjs <A: a build's index.js> <B: another build's index.js>
//
// Prints, per round and as medians, p50 of a sequential run, CPU per run, and runs/s at
// CONCURRENCY in flight, with B ÷ A per round (median, min–max). The worker's settings apply
// (WARMUP, RUNS, TPUT_RUNS, CONCURRENCY, WORKER_TIMEOUT_S, as BENCH_<NAME> or <NAME>); ROUNDS
// (default 6) and BENCH_AB_OUT (a file for the JSON) are this script's own.
import { spawn } from "node:child_process"
import { existsSync, writeFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { num, spawnEndpoint, workerEnv, workerResult } from "./lib/orchestrator.mjs"

const BENCH = path.dirname(fileURLToPath(import.meta.url))

const builds = process.argv.slice(2, 4).map((p) => path.resolve(p))
if (builds.length !== 2 || !builds.every((p) => existsSync(p))) {
  console.error("usage: node bench/ab.mjs <A index.js> <B index.js> (both must exist)")
  process.exit(2)
}
const rounds = Math.max(1, num("ROUNDS", 6))
const settings = { WARMUP: num("WARMUP", 1000), RUNS: num("RUNS", 2000), TPUT_RUNS: num("TPUT_RUNS", 2000), CONCURRENCY: num("CONCURRENCY", 32) }
const timeoutS = num("WORKER_TIMEOUT_S", 600)

/** One worker process of the toolnexus runner on build `pkg`: its figures. */
async function measure(pkg, baseURL) {
  const env = workerEnv({
    ...Object.fromEntries(Object.entries(settings).map(([k, v]) => [`BENCH_${k}`, String(v)])),
    BENCH_LEAK_RUNS: "0",
    BENCH_OURS_PKG: pkg,
    BENCH_BASE_URL: baseURL,
    BENCH_SPAWN_NS: String(process.hrtime.bigint()),
  })
  const child = spawn(process.execPath, [path.join(BENCH, "worker.mjs"), "toolnexus", "measure"], { env, stdio: ["ignore", "pipe", "pipe"] })
  const { result: r, code } = await workerResult(child, `[${path.basename(path.dirname(pkg))}]`, timeoutS)
  if (!r?.ok) throw new Error(`worker for ${pkg} ended ${code}: ${r?.error ?? "no result"}`)
  return { p50Ms: r.seq.p50Ms, cpuUs: r.seq.cpuPerRunUs, runsPerSec: r.tput?.runsPerSec ?? null }
}

const median = (xs) => {
  const s = xs.filter((x) => x != null).sort((a, b) => a - b)
  if (!s.length) return null
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const spread = (xs) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`

const { child, origin } = await spawnEndpoint([path.join(BENCH, "server.mjs"), "--port", "0"], "endpoint")
const baseURL = `${origin}/v1`
const rows = []
try {
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 ? [0, 1] : [1, 0]
    const got = []
    for (const i of order) {
      got[i] = await measure(builds[i], baseURL)
      await new Promise((r) => setTimeout(r, 300))
    }
    rows.push({ round, a: got[0], b: got[1] })
    const [a, b] = got
    console.log(
      `round ${round}: p50 ${a.p50Ms.toFixed(3)} / ${b.p50Ms.toFixed(3)} ms, CPU ${a.cpuUs.toFixed(0)} / ${b.cpuUs.toFixed(0)} µs, ` +
        `runs/s ${a.runsPerSec?.toFixed(0)} / ${b.runsPerSec?.toFixed(0)} (A / B)`,
    )
  }
} finally {
  child.kill()
}

const fig = (k) => ({ a: median(rows.map((r) => r.a[k])), b: median(rows.map((r) => r.b[k])), ratio: rows.map((r) => r.b[k] / r.a[k]) })
const summary = { p50Ms: fig("p50Ms"), cpuUs: fig("cpuUs"), runsPerSec: fig("runsPerSec") }
console.log(`\nA = ${builds[0]}\nB = ${builds[1]}\n`)
console.log("| figure | A (median) | B (median) | B ÷ A per round: median (min–max) |\n|---|---:|---:|---:|")
for (const [name, f] of Object.entries(summary)) {
  console.log(`| ${name} | ${f.a?.toFixed(3)} | ${f.b?.toFixed(3)} | ×${spread(f.ratio)} |`)
}
const out = process.env.BENCH_AB_OUT
if (out) writeFileSync(out, JSON.stringify({ generatedAt: new Date().toISOString(), builds, settings, rows, summary }, null, 2))
