// The stream bench's figures (how each is read from a worker's result) and stream-results.md.

import { fmt, fmtRatio } from "../lib/metrics.mjs"
import { detailRows, machineLines, metricTable } from "../lib/report.mjs"

const MiB = 1024 * 1024

export const STREAM_METRICS = [
  { key: "ttfe", label: "time to first text", get: (r) => r.seq.ttfeP50Ms, unit: "ms" },
  { key: "wallPerEvent", label: "wall/event", get: (r) => r.seq.wallPerEventUs, unit: "µs" },
  { key: "cpuPerEvent", label: "CPU/event", get: (r) => r.seq.cpuPerEventUs, unit: "µs" },
  { key: "cpu", label: "CPU/run", get: (r) => r.seq.cpuPerRunUs / 1000, unit: "ms" },
  { key: "p50", label: "p50 run", get: (r) => r.seq.p50Ms, unit: "ms" },
  { key: "rss", label: "peak RSS", get: (r) => r.mem.peakRss / MiB, unit: "MiB" },
]

/** The goal line: is toolnexus's per-event cost (wall and CPU) below the floor's? */
export function goalLines(res) {
  const s = res.summary.toolnexus
  if (!s || s.status !== "ok") return [`Goal (toolnexus per-event cost below the floor's): not measured (toolnexus ${s?.status ?? "not run"}).`]
  const verdict = (key, label) => {
    const r = s.metrics[key].ratio
    if (r.median === null) return `${label}: n/a`
    const met = r.median < 1 ? (r.max < 1 ? "met in every round" : "met at the median, not in every round") : "NOT met"
    return `${label} ×${fmtRatio(r.median)} of the floor (${fmtRatio(r.min)}–${fmtRatio(r.max)}): ${met}`
  }
  const paced = res.config.paceMs > 0 ? ` (events paced at ${res.config.paceMs} ms: wall is set by the pace, not the runner)` : ""
  return [
    "Goal: toolnexus per-event cost below the floor's.",
    `- ${verdict("wallPerEvent", "wall per event")}${paced}`,
    `- ${verdict("cpuPerEvent", "CPU per event")}`,
  ]
}

export function renderStreamMarkdown(res) {
  const out = []
  const line = (s = "") => out.push(s)
  line("# toolnexus streaming benchmark results")
  line()
  line(`Generated ${res.generatedAt} by \`npm run bench:stream\` (bench/stream.mjs). Method: [README.md](README.md#streaming-streammjs-npm-run-benchstream).`)
  line()
  if (res.trial) {
    line(`> **Trial settings — these figures are not a measurement.** ${res.trialReasons.join("; ")}.`)
    line()
  }
  const sc = res.scenario
  line(
    `One run = "${sc.prompt}" → turn 1 streams ${sc.deltasPerTurn} text deltas and one tool call (get_weather {"city":"Paris"}) → ` +
      `the tool runs → turn 2 streams ${sc.deltasPerTurn} text deltas of the final answer. ${sc.wireEventsPerRun} SSE events on the wire per run ` +
      `(${sc.textDeltasPerRun} text deltas, the tool call in ${sc.toolCallChunks} chunks, a finish, a usage chunk and [DONE] per turn).`,
  )
  line()
  line(`Endpoint pacing: ${sc.pacing}.`)
  line()
  line(
    `Each cell: the median over ${res.config.rounds} round(s), then the ratio to the plain-Node floor of the same round ` +
      "(median of the per-round ratios, min–max in brackets). Lower is better everywhere.",
  )
  line()
  for (const l of goalLines(res)) line(l)
  line()
  for (const l of metricTable(res, STREAM_METRICS)) line(l)
  line()
  line(
    "Definitions: time to first text = from calling the runner's stream (fetch for the floor) to the first text delta its " +
      "loop sees, p50 over the timed runs; wall/event = the timed runs' wall time ÷ runs ÷ SSE events on the wire " +
      `(${sc.wireEventsPerRun}, the same for every runner); CPU/event = CPU/run ÷ the same count; CPU/run = user+system CPU ` +
      "of the runner process (all threads) and any child, over the timed runs ÷ runs; p50 run = median wall time of one " +
      "whole run; peak RSS = VmHWM of the runner process over its life (+ children).",
  )
  line()
  line("## Details (medians over rounds)")
  line()
  line("| runner | p95 run | p99 run | TTFT p95 | events its loop saw / run | reads / run | cold (import+setup+first run) | endpoint CPU/request | rounds ok |")
  line("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
  const detail = (name, s, d) =>
    `| ${name} | ${fmt(d.p95Ms)} ms | ${fmt(d.p99Ms)} ms | ${fmt(d.ttfeP95Ms)} ms | ${fmt(d.userEventsPerRun)} | ` +
    `${d.readsPerRun === null ? "—" : fmt(d.readsPerRun)} | ${fmt(d.coldMs)} ms | ${fmt(d.endpointCpuPerRequestUs)} µs | ${s.roundsOk}/${res.config.rounds} |`
  for (const l of detailRows(res, detail)) line(l)
  line()
  line(
    "Events its loop saw: what the runner's own loop iterates (toolnexus: text, tool_call, tool_result, usage, done; the AI SDK's " +
      "fullStream adds start/finish parts per step; the floor: the SSE events it parsed). Reads / run: body chunks the floor's " +
      "fetch reader got per run (the other runners don't expose them) — fewer than the events means the endpoint wrote " +
      "faster than the floor took them, so several events arrived per read.",
  )
  line()
  line("## Setup")
  line()
  const c = res.config
  line(`Warm-up ${c.warmup} runs per process, then ${c.runs} timed sequential runs; ${c.rounds} round(s), runner order rotated each round; one fresh process per runner per round.`)
  line()
  for (const l of machineLines(res)) line(l)
  return out.join("\n")
}
