// The figures reported per runner, how each is read from a worker's result, and how it prints.
// Every figure is also reported as a ratio to the plain-Node floor measured in the same round.

const MiB = 1024 * 1024

export const METRICS = [
  { key: "p50", label: "p50", get: (r) => r.seq.p50Ms, unit: "ms", better: "lower" },
  { key: "p95", label: "p95", get: (r) => r.seq.p95Ms, unit: "ms", better: "lower" },
  { key: "mean", label: "mean", get: (r) => r.seq.meanMs, unit: "ms", better: "lower" },
  {
    key: "cpu",
    label: "CPU/run",
    // The runner process plus any child it spawned (the MCP server), per sequential run.
    get: (r) => (r.seq.cpuPerRunUs + (r.seq.childCpuPerRunUs ?? 0)) / 1000,
    unit: "ms",
    better: "lower",
  },
  { key: "rss", label: "peak RSS", get: (r) => r.mem.peakRss / MiB, unit: "MiB", better: "lower" },
  { key: "tput", label: "throughput@32", get: (r) => r.tput.runsPerSec, unit: "runs/s", better: "higher" },
  { key: "cold", label: "cold init", get: (r) => r.cold.importMs + r.cold.setupMs + r.cold.firstRunMs, unit: "ms", better: "lower" },
]

/** A number with about three significant digits (no exponent notation). */
export function fmt(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "n/a"
  const a = Math.abs(x)
  if (a >= 100) return x.toFixed(0)
  if (a >= 10) return x.toFixed(1)
  if (a >= 1) return x.toFixed(2)
  return x.toFixed(3)
}

export const fmtRatio = (x) => (x === null || x === undefined || !Number.isFinite(x) ? "n/a" : x.toFixed(2))
