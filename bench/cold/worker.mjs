// One fresh process of the cold-start bench (bench/cold.mjs): the package imported as a user's
// ES module imports it, a toolkit of the scenario's two JS tools, a client, the first run and a
// second (warm) one, each step's end read from performance.now() (ms since Node's time origin,
// the process's start). With COLD_MODE=node it imports nothing and runs nothing: Node's own boot,
// the baseline the others are measured above.
//
//   node bench/cold/worker.mjs   (COLD_BASE_URL, COLD_PKG: the package folder; COLD_MODE)
//
// The package is imported by the file its package.json names for `import` (what Node resolves
// `import ... from "toolnexus"` to), found before the clock starts.
//
// The result is one stdout line of JSON.

const boot = performance.now()

if (process.env.COLD_MODE === "node") {
  process.stdout.write(JSON.stringify({ boot }) + "\n")
} else {
  const { pathToFileURL } = await import("node:url")
  const { readFileSync } = await import("node:fs")
  const { join } = await import("node:path")
  const scenario = await import("../lib/scenario.mjs")
  const dir = process.env.COLD_PKG
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
  const dot = manifest.exports?.["."] ?? manifest.exports
  const entry = typeof dot === "string" ? dot : (dot?.import?.default ?? dot?.import ?? dot?.default ?? manifest.main)
  const url = pathToFileURL(join(dir, entry)).href
  const start = performance.now()
  const pkg = await import(url)
  const imported = performance.now()
  const toolkit = await pkg.createToolkit({
    builtins: false,
    extraTools: [
      pkg.defineTool({ name: "get_weather", description: scenario.WEATHER_DESCRIPTION, inputSchema: scenario.WEATHER_SCHEMA, run: scenario.getWeather }),
      pkg.defineTool({ name: "add", description: scenario.ADD_DESCRIPTION, inputSchema: scenario.ADD_SCHEMA, run: scenario.add }),
    ],
  })
  const toolkitMade = performance.now()
  const client = pkg.createClient({ baseUrl: process.env.COLD_BASE_URL, style: "openai", model: scenario.MODEL, apiKey: scenario.API_KEY })
  const clientMade = performance.now()
  const first = await client.run(scenario.PROMPT, { toolkit })
  const firstRun = performance.now()
  const second = await client.run(scenario.PROMPT, { toolkit })
  const secondRun = performance.now()
  for (const r of [first, second]) {
    if (r.text !== scenario.FINAL_TEXT) throw new Error(`unexpected answer: ${JSON.stringify(r.text)}`)
  }
  await toolkit.close()
  process.stdout.write(
    JSON.stringify({
      boot,
      start,
      import: imported - start,
      toolkit: toolkitMade - imported,
      client: clientMade - toolkitMade,
      firstRun: firstRun - clientMade,
      warmRun: secondRun - firstRun,
      aboveBoot: firstRun - start,
    }) + "\n",
  )
}
