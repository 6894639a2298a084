// The cost of crossing between the JS thread and the core's runtime thread, without HTTP.
//
//   node bench/crossings.mjs [runs]
//
// An in-process client whose model answers at once and a toolkit with no tools: one run is
// exactly four crossings (JS -> core to start, core -> JS to ask the model, JS -> core with the
// answer, core -> JS to settle) plus a few microseconds of JSON. Reported: wall and CPU per run,
// next to the same JSON work done in plain JS. Nothing is asserted; it is a probe for the
// crossing cost that dominates toolnexus's latency (see README.md, "Where the time goes").

import { createRequire } from "node:module"

const { createInProcessClient, createToolkit } = createRequire(import.meta.url)("../index.js")

const runs = Number(process.argv[2] ?? 20000)
const toolkit = await createToolkit({ builtins: false })
const client = createInProcessClient({ model: "m", generate: () => ({ content: "done" }) })

for (let i = 0; i < 3000; i++) await client.run("hi", { toolkit })
const cpu0 = process.cpuUsage()
const t0 = performance.now()
for (let i = 0; i < runs; i++) await client.run("hi", { toolkit })
const wall = ((performance.now() - t0) / runs) * 1000
const cpu = process.cpuUsage(cpu0)

const same = async () => JSON.parse(JSON.stringify({ text: "done", messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "done" }] }))
const t1 = performance.now()
for (let i = 0; i < runs; i++) await same()
const js = ((performance.now() - t1) / runs) * 1000

console.log(JSON.stringify({
  runs,
  crossingsPerRun: 4,
  wallUsPerRun: +wall.toFixed(1),
  cpuUsPerRun: +((cpu.user + cpu.system) / runs).toFixed(1),
  plainJsUsPerRun: +js.toFixed(1),
}))
