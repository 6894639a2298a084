// What the worker processes (worker.mjs, stream/worker.mjs) share: loading the runner under the
// cold-init clock, and percentiles of timings. Kept free of dependencies, as it is imported before
// that clock starts.

/**
 * Import `runners/<name>.mjs` beside `base` (the worker's import.meta.url) and set it up against
 * `baseURL`: the runner, with process.hrtime.bigint() read before the import, after it and after setup.
 */
export async function loadRunner(base, name, baseURL) {
  if (!baseURL) throw new Error("BENCH_BASE_URL is not set")
  const tImport = process.hrtime.bigint()
  const mod = await import(new URL(`./runners/${name}.mjs`, base).href)
  const tImported = process.hrtime.bigint()
  const runner = await mod.setup({ baseURL })
  const tSetup = process.hrtime.bigint()
  return { runner, tImport, tImported, tSetup }
}

/** The p-th percentile (0-100) of ascending `sorted`, interpolated between neighbours; null when empty. */
export function percentile(sorted, p) {
  if (!sorted.length) return null
  const rank = (p / 100) * (sorted.length - 1)
  const lo = Math.floor(rank)
  const hi = Math.ceil(rank)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo)
}
