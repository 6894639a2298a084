// The toolnexus side of the serve bench: one toolkit with the scenario's two tools, served with
// the profile named on the command line. Prints {"url":...} once listening.
//   node peer-toolnexus.mjs mcp
//   node peer-toolnexus.mjs a2a <llm base url>
import { createRequire } from "node:module"
import { ADD_DESCRIPTION, ADD_SCHEMA, API_KEY, MODEL, WEATHER_DESCRIPTION, WEATHER_SCHEMA, add, getWeather } from "../lib/scenario.mjs"

const { createClient, createToolkit, defineTool } = createRequire(import.meta.url)("../../index.js")
const [profile, llm] = process.argv.slice(2)
const tk = await createToolkit({
  builtins: false,
  extraTools: [
    defineTool({ name: "get_weather", description: WEATHER_DESCRIPTION, inputSchema: WEATHER_SCHEMA, run: getWeather }),
    defineTool({ name: "add", description: ADD_DESCRIPTION, inputSchema: ADD_SCHEMA, run: (a) => String(add(a)) }),
  ],
})
const opts =
  profile === "a2a"
    ? { client: createClient({ baseUrl: llm, style: "openai", model: MODEL, apiKey: API_KEY }), a2a: { name: "bench" } }
    : { mcp: { name: "bench" } }
const srv = await tk.serve("127.0.0.1:0", opts)
console.log(JSON.stringify({ url: srv.url }))
process.stdin.resume()
process.stdin.on("end", async () => {
  await srv.stop()
  await tk.close()
  process.exit(0)
})
