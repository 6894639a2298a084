// Small statistics helpers for run.mjs, stream.mjs and agents.mjs.

export function median(values) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b)
  if (!v.length) return null
  const mid = v.length >> 1
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2
}

export function range(values) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x))
  return v.length ? { min: Math.min(...v), max: Math.max(...v) } : { min: null, max: null }
}

/** Median, min and max of a list of per-round numbers (nulls ignored), with how many there were. */
export function summarize(values) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x))
  return { median: median(v), ...range(v), n: v.length }
}

/** One metric of runner `name` over rounds: its values' summary and that of its ratios to `floor`'s value in the same round. */
export function metricOverRounds(rounds, name, floor, metric) {
  const values = []
  const ratios = []
  for (const r of rounds) {
    const mine = r.results[name]
    const base = r.results[floor]
    if (!mine?.ok) continue
    const v = metric.get(mine)
    values.push(v)
    if (base?.ok) {
      const f = metric.get(base)
      if (f > 0) ratios.push(v / f)
    }
  }
  return { value: summarize(values), ratio: summarize(ratios) }
}

/** metricOverRounds for each of `metrics`, by its key. */
export function metricsOverRounds(rounds, name, floor, metrics) {
  return Object.fromEntries(metrics.map((m) => [m.key, metricOverRounds(rounds, name, floor, m)]))
}
