// toolnexus (this package) with the two tools as defineTool JS functions. BENCH_OURS_PKG names
// another build's index.js to load instead (bench/ab.mjs sets it to compare two builds).

import { createRequire } from "node:module"
import path from "node:path"
import { ADD_DESCRIPTION, ADD_SCHEMA, API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, WEATHER_SCHEMA, add, getWeather } from "../lib/scenario.mjs"

const { createClient, createToolkit, defineTool } = createRequire(import.meta.url)(
  process.env.BENCH_OURS_PKG ? path.resolve(process.env.BENCH_OURS_PKG) : "../../index.js",
)

export async function setup({ baseURL }) {
  const toolkit = await createToolkit({
    builtins: false,
    extraTools: [
      defineTool({ name: "get_weather", description: WEATHER_DESCRIPTION, inputSchema: WEATHER_SCHEMA, run: getWeather }),
      defineTool({ name: "add", description: ADD_DESCRIPTION, inputSchema: ADD_SCHEMA, run: add }),
    ],
  })
  const client = createClient({ baseUrl: baseURL, style: "openai", model: MODEL, apiKey: API_KEY })
  return {
    run: async () => (await client.run(PROMPT, { toolkit })).text,
    close: () => toolkit.close(),
  }
}
