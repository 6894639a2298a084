// The cost of a run's trips between JS and the core, without HTTP.
//
//   node bench/crossings.mjs [runs]
//
// An in-process client whose model answers at once and a toolkit with no tools: one run is the
// native call that starts it, one call of the JS model, and the Promise settled, plus a few
// microseconds of JSON. Runs are polled on the JS thread, so none of these is a wake-up of
// another thread any more (each was, before: 130-165 us per run on the 2-vCPU VM). Reported:
// wall and CPU per run, next to the same JSON work done in plain JS. Nothing is asserted; see
// README.md, "Where the time goes".

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
  wallUsPerRun: +wall.toFixed(1),
  cpuUsPerRun: +((cpu.user + cpu.system) / runs).toFixed(1),
  plainJsUsPerRun: +js.toFixed(1),
}))
