// Small statistics helpers for run.mjs.

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
