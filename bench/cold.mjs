#!/usr/bin/env node
// Cold start: what importing the package, making a toolkit and a client and the first run cost in a
// fresh process, above Node's own boot (`npm run bench:cold`).
//
//   node bench/cold.mjs [package folder ...]     (default: this package)
//
// Each round spawns one bare Node process (bench/cold/worker.mjs with COLD_MODE=node) and one per
// build named, in an order rotated each round, all against one scripted endpoint (server.mjs).
// Every step is read inside the process from performance.now(); the parent also times each process
// from spawn to exit, so the whole cost, exit included, shows against the bare process's.
// Settings: BENCH_PROCS (rounds, default 21), BENCH_COLD_OUT (where the JSON results go; default
// bench/cold-results.json). `npm run bench` runs it after the main scenario (BENCH_OTHERS: cold).

import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { firstJsonLine, num, spawnEndpoint, toolnexusVersion, workerEnv } from "./lib/orchestrator.mjs"
import { percentile } from "./lib/worker.mjs"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.dirname(here)
const worker = path.join(here, "cold", "worker.mjs")
const rounds = num("PROCS", 21)
const builds = (process.argv.length > 2 ? process.argv.slice(2) : [root]).map((p) => path.resolve(p))

/** One fresh worker process: its JSON line and the wall time from spawn to exit, in ms. */
async function once(env) {
  const t0 = process.hrtime.bigint()
  const child = spawn(process.execPath, [worker], { env, stdio: ["ignore", "pipe", "inherit"] })
  const line = firstJsonLine(child, (code) => new Error(`cold worker exited with code ${code} before its result`))
  const exited = new Promise((resolve) => child.once("close", (code, sig) => resolve(sig ?? code)))
  const result = await line
  const code = await exited
  if (code !== 0) throw new Error(`cold worker exited with ${code}`)
  return { ...result, wall: Number(process.hrtime.bigint() - t0) / 1e6 }
}

/** The q-th quantile (0-1) of `values`, in any order. */
const quantile = (values, q) => percentile([...values].sort((a, b) => a - b), q * 100)

const { child: endpoint, origin } = await spawnEndpoint([path.join(here, "server.mjs")], "the scripted endpoint")
const baseURL = `${origin}/v1`
const sides = [{ name: "node", env: workerEnv({ COLD_MODE: "node" }) }].concat(
  builds.map((pkg, i) => ({ name: builds.length > 1 ? `build ${i + 1}` : "toolnexus", pkg, env: workerEnv({ COLD_PKG: pkg, COLD_BASE_URL: baseURL }) })),
)
const samples = new Map(sides.map((s) => [s.name, []]))
try {
  for (let r = 0; r < rounds; r++) {
    const order = sides.map((_, i) => sides[(i + r) % sides.length])
    for (const side of order) samples.get(side.name).push(await once(side.env))
  }
} finally {
  endpoint.kill()
}

const STEPS = ["import", "toolkit", "client", "firstRun", "aboveBoot", "warmRun"]
const bareWall = quantile(samples.get("node").map((s) => s.wall), 0.5)
const report = { when: new Date().toISOString(), rounds, node: process.version, bootMs: quantile(samples.get("node").map((s) => s.boot), 0.5), bareWallMs: bareWall, builds: [] }
console.log(`cold start, ${rounds} fresh processes each (median, quartiles in brackets), Node ${process.version}`)
console.log(`bare Node: boot ${report.bootMs.toFixed(1)} ms, spawn to exit ${bareWall.toFixed(1)} ms`)
for (const side of sides.slice(1)) {
  const s = samples.get(side.name)
  const row = { name: side.name, pkg: side.pkg, version: toolnexusVersion(side.pkg) }
  const parts = []
  for (const step of STEPS.concat(["wall"])) {
    const v = s.map((x) => x[step])
    row[step] = { p50: quantile(v, 0.5), p25: quantile(v, 0.25), p75: quantile(v, 0.75) }
    parts.push(`${step} ${row[step].p50.toFixed(2)} [${row[step].p25.toFixed(2)}–${row[step].p75.toFixed(2)}]`)
  }
  row.wallAboveBare = row.wall.p50 - bareWall
  report.builds.push(row)
  console.log(`${side.name} (${row.version}, ${side.pkg}):`)
  console.log(`  ${parts.join("; ")} ms`)
  console.log(`  above Node's boot: ${row.aboveBoot.p50.toFixed(2)} ms in the process (import to first run), ${row.wallAboveBare.toFixed(2)} ms spawn to exit`)
}
writeFileSync(process.env.BENCH_COLD_OUT || path.join(here, "cold-results.json"), JSON.stringify(report, null, 2) + "\n")
