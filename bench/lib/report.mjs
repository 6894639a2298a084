// Renders results.json into results.md (tables) and chart.svg (hand-written bars).

import { METRICS, fmt, fmtRatio } from "./metrics.mjs"

const MiB = 1024 * 1024

// ---------------------------------------------------------------------------------------------
// Markdown

/** A main-table cell: the median value, then its ratio to the floor (min–max over rounds). */
function cell(summary, metric, isFloor) {
  const m = summary.metrics[metric.key]
  if (!m || m.value.median === null) return "n/a"
  const abs = `${fmt(m.value.median)} ${metric.unit}`
  if (isFloor) return `${abs}<br>×1 (floor)`
  if (m.ratio.median === null) return `${abs}<br>× n/a`
  const spread = m.ratio.n > 1 ? ` (${fmtRatio(m.ratio.min)}–${fmtRatio(m.ratio.max)})` : ""
  return `${abs}<br>×${fmtRatio(m.ratio.median)}${spread}`
}

/** The main table's lines: a column per metric, a row per runner (its cells, or its status and why). */
export function metricTable(res, metrics) {
  const rows = [`| runner | ${metrics.map((m) => m.label).join(" | ")} |`, `|---|${metrics.map(() => "---:").join("|")}|`]
  for (const name of res.runners) {
    const s = res.summary[name]
    if (s.status !== "ok") rows.push(`| ${name} | ${s.status}: ${escapeMd(s.reason ?? "")} ${"| ".repeat(metrics.length - 1)}|`)
    else rows.push(`| ${name} | ${metrics.map((m) => cell(s, m, name === res.floor)).join(" | ")} |`)
  }
  return rows
}

/** The setup section's last lines: the machine, its load average at start and end, the versions. */
export function machineLines(res) {
  const m = res.machine
  return [
    `Machine: ${m.cpuModel} × ${m.cpus}, ${fmt(m.totalMemBytes / 1024 ** 3)} GiB, ${m.platform} ${m.release}; Node ${m.node}.`,
    `Load average at start ${m.loadavgStart.map(fmt).join(" / ")}, at end ${m.loadavgEnd.map(fmt).join(" / ")}.`,
    "",
    `Versions: ${Object.entries(res.versions).map(([k, v]) => `${k} ${v}`).join(", ")}.`,
    "",
  ]
}

/** A details-table line per runner that ran ok: row(name, its summary, its details). */
export function detailRows(res, row) {
  const ok = res.runners.filter((name) => res.summary[name].status === "ok")
  return ok.map((name) => row(name, res.summary[name], res.summary[name].details))
}

/**
 * A cell of a cost row: the ratio, its range, and the goal with whether it is met. A goal is
 * `{ atMost }` (times, CPU) or `{ atLeast }` (throughput, runs/s); a bare number is read as atMost.
 */
function costCell(c) {
  if (!c) return "—"
  const r = c.ratio
  if (r.median === null) return "n/a"
  const spread = r.n > 1 ? ` (${fmtRatio(r.min)}–${fmtRatio(r.max)})` : ""
  const g = typeof c.goal === "number" ? { atMost: c.goal } : c.goal
  let goal = ""
  if (g?.atMost) goal = `<br>goal ≤ ${g.atMost}×: ${r.median <= g.atMost ? "met" : "not met"}`
  else if (g?.atLeast) goal = `<br>goal ≥ ${g.atLeast}×: ${r.median >= g.atLeast ? "met" : "not met"}`
  return `×${fmtRatio(r.median)}${spread}${goal}`
}

export function renderMarkdown(res) {
  const out = []
  const line = (s = "") => out.push(s)
  line("# toolnexus benchmark results")
  line()
  line(`Generated ${res.generatedAt} by \`npm run bench\` (bench/run.mjs). Method and how to read this: [README.md](README.md).`)
  line()
  if (res.trial) {
    line(`> **Trial settings — these figures are not a measurement.** ${res.trialReasons.join("; ")}.`)
    line()
  }
  line(
    `One run = the question "${res.scenario.prompt}" → two parallel tool calls → both tools executed → final answer ` +
      "(2 LLM requests + 2 tool executions) against a scripted local endpoint.",
  )
  line()
  line(
    `Each cell: the median over ${res.config.rounds} round(s) of the runner's figure, then its ratio to the plain-Node ` +
      "floor measured in the same round (median of the per-round ratios, min–max over rounds in brackets). " +
      "Lower is better except throughput, where the ratio is runs/s relative to the floor (higher is better).",
  )
  line()
  for (const l of metricTable(res, METRICS)) line(l)
  if (res.jsCost) line(`| **JS cost** (toolnexus ÷ limit) | ${METRICS.map((m) => costCell(res.jsCost[m.key])).join(" | ")} |`)
  if (res.coreCost) line(`| **core cost** (limit ÷ floor-hyper) | ${METRICS.map((m) => costCell(res.coreCost[m.key])).join(" | ")} |`)
  line()
  if (res.jsCost) {
    line(
      "JS cost: toolnexus's figure divided by the limit's (the same core driven from Rust, no JavaScript) from the same " +
        "round; median of the per-round ratios, min–max in brackets. It is what Node, the binding and the JS layer add " +
        "to a run. Throughput is runs/s, so below 1 means fewer runs per second than the limit.",
    )
    line()
  }
  if (res.coreCost) {
    line(
      "Core cost: the limit's figure divided by floor-hyper's (the same two requests and two tools with hyper and serde_json " +
        "alone, no toolnexus) from the same round. It is what the toolnexus core adds to the least a program can do for this run.",
    )
    line()
  }
  line("Definitions: p50/p95/mean = wall time of one sequential run; CPU/run = user+system CPU of the runner process")
  line("(all its threads) plus any child it spawned (the MCP server), over the sequential runs, divided by their count;")
  line("peak RSS = the kernel's high-water mark (VmHWM) of the runner process, plus its children's; throughput@32 =")
  line(`runs completed per second with ${res.config.concurrency} runs in flight; cold init = import + setup + first run`)
  line("(the issue's definition; the same for every runner, since Node's own bootstrap is shared — it is in the details table).")
  line()

  line("## Details (medians over rounds)")
  line()
  line("| runner | p99 | Node boot | import | setup | first run | child peak RSS | endpoint CPU/request | rounds ok |")
  line("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
  const detail = (name, s, d) =>
    `| ${name} | ${fmt(d.p99Ms)} ms | ${d.nodeBootMs == null ? "— (no Node)" : `${fmt(d.nodeBootMs)} ms`} | ${fmt(d.importMs)} ms | ${fmt(d.setupMs)} ms | ` +
    `${fmt(d.firstRunMs)} ms | ${d.childVmHwm ? `${fmt(d.childVmHwm / MiB)} MiB` : "—"} | ` +
    `${fmt(d.serverCpuPerRequestUs)} µs | ${s.roundsOk}/${res.config.rounds} |`
  for (const l of detailRows(res, detail)) line(l)
  line()
  line("Endpoint CPU/request is the scripted server's own CPU (its process), over everything that runner sent.")
  line()

  if (res.leak) {
    const l = res.leak
    line(`## Leak check (${l.runner})`)
    line()
    if (!l.ok) {
      line(`${l.skipped ? "Skipped" : "Failed"}: ${escapeMd(l.reason ?? l.error ?? "")}`)
    } else {
      line(
        `${l.runs} sequential runs after ${res.config.warmup} warm-up runs, one process; memory sampled every ${l.every} runs` +
          `${l.gcBeforeSample ? " right after a forced full GC (--expose-gc)" : ""}. ±% is against the first sample ` +
          "(taken after warm-up, before the counted runs).",
      )
      line()
      line("| figure | first | last | max | last vs first | max vs first | 2nd half (last vs middle) |")
      line("|---|---:|---:|---:|---:|---:|---:|")
      for (const [label, f] of [
        ["RSS", l.rss],
        ["JS heap used", l.heapUsed],
        ["external", l.external],
      ]) {
        line(
          `| ${label} | ${fmt(f.first / MiB)} MiB | ${fmt(f.last / MiB)} MiB | ${fmt(f.max / MiB)} MiB | ` +
            `${pct(f.lastVsFirstPct)} | ${pct(f.maxVsFirstPct)} | ${pct(f.secondHalfPct)} |`,
        )
      }
      line()
      line(`RSS samples (MiB): ${l.samples.map((s) => fmt(s.rss / MiB)).join(", ")}`)
    }
    line()
  }

  if (res.others?.length) {
    line("## The other scenarios of this run")
    line()
    for (const o of res.others) {
      line(`- ${o.name}: ${o.ok ? `[${o.results}](${o.results})` : "failed (see the run's log)"}`)
    }
    line()
  }

  line("## Setup")
  line()
  const c = res.config
  line(
    `Warm-up ${c.warmup} runs per process; ${c.runs} timed sequential runs; ${c.tputRuns} runs at ${c.concurrency} in flight; ` +
      `${c.rounds} round(s), runner order rotated each round; one fresh process per runner per round.`,
  )
  line()
  for (const l of machineLines(res)) line(l)
  return out.join("\n")
}

const pct = (x) => (x === null || x === undefined || !Number.isFinite(x) ? "n/a" : `${x >= 0 ? "+" : ""}${x.toFixed(1)}%`)
const escapeMd = (s) => String(s).replace(/\|/g, "\\|").replace(/\n/g, " ")

// ---------------------------------------------------------------------------------------------
// SVG

const escapeXml = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

function colorOf(name, floor) {
  if (name === floor) return "#9aa0a6"
  if (name === "limit") return "#34a853"
  if (name === "floor-hyper") return "#0b8043"
  if (name.startsWith("toolnexus")) return "#e8710a"
  return "#4285f4"
}

/** Two panels of horizontal bars: p50 per run and peak RSS, one bar per runner that ran. */
export function renderSvg(res) {
  const rows = res.runners.filter((n) => res.summary[n].status === "ok")
  const panels = [
    { title: "p50 wall time per run (ms) — lower is better", key: "p50", unit: "ms" },
    { title: "peak RSS (MiB) — lower is better", key: "rss", unit: "MiB" },
  ]
  const W = 860
  const labelW = 150
  const barX = labelW + 10
  const barMax = W - barX - 190
  const rowH = 28
  const panelH = 40 + rows.length * rowH + 16
  const H = 50 + panels.length * panelH + 36
  const parts = []
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="13">`,
  )
  parts.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`)
  parts.push(
    `<text x="16" y="26" font-size="16" font-weight="600">toolnexus benchmark — medians over ${res.config.rounds} round(s)${res.trial ? " (TRIAL settings, not a measurement)" : ""}</text>`,
  )
  panels.forEach((p, pi) => {
    const y0 = 50 + pi * panelH
    parts.push(`<text x="16" y="${y0 + 18}" font-weight="600">${escapeXml(p.title)}</text>`)
    const values = rows.map((n) => res.summary[n].metrics[p.key]?.value.median ?? 0)
    const max = Math.max(...values, 1e-9)
    rows.forEach((name, i) => {
      const y = y0 + 34 + i * rowH
      const v = values[i]
      const w = Math.max(1, (v / max) * barMax)
      const ratio = res.summary[name].metrics[p.key]?.ratio.median
      const label = `${fmt(v)} ${p.unit}${name === res.floor ? " (floor)" : ratio != null ? `  ×${fmtRatio(ratio)}` : ""}`
      parts.push(`<text x="${labelW}" y="${y + 14}" text-anchor="end">${escapeXml(name)}</text>`)
      parts.push(`<rect x="${barX}" y="${y}" width="${w.toFixed(1)}" height="${rowH - 8}" rx="2" fill="${colorOf(name, res.floor)}"/>`)
      parts.push(`<text x="${(barX + w + 6).toFixed(1)}" y="${y + 14}" fill="#333">${escapeXml(label)}</text>`)
    })
  })
  const notRun = res.runners.filter((n) => res.summary[n].status !== "ok").map((n) => `${n} (${res.summary[n].status})`)
  if (notRun.length) {
    parts.push(`<text x="16" y="${H - 24}" font-size="11" fill="#666">not shown: ${escapeXml(notRun.join(", "))}</text>`)
  }
  parts.push(
    `<text x="16" y="${H - 8}" font-size="11" fill="#666">ratio = median of per-round ratios to the plain-Node floor; see bench/results.md for p95, CPU, throughput, cold init and ranges</text>`,
  )
  parts.push("</svg>")
  return parts.join("\n") + "\n"
}
