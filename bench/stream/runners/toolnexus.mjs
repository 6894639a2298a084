// toolnexus (this package): createClient({ style: "openai" }) and client.stream(prompt, { toolkit }),
// every event taken with for await, as the Client.stream reference page shows; the tool is a
// defineTool JS function in a createToolkit({ builtins: false }) toolkit.

import { createRequire } from "node:module"
import { API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, WEATHER_SCHEMA, getWeather } from "../scenario.mjs"

const pkg = process.env.BENCH_OURS_PKG ?? "../../../index.js"
const { createClient, createToolkit, defineTool } = createRequire(import.meta.url)(pkg)

export async function setup({ baseURL }) {
  const toolkit = await createToolkit({
    builtins: false,
    extraTools: [defineTool({ name: "get_weather", description: WEATHER_DESCRIPTION, inputSchema: WEATHER_SCHEMA, run: getWeather })],
  })
  const client = createClient({ baseUrl: baseURL, style: "openai", model: MODEL, apiKey: API_KEY })

  async function run() {
    const out = { finalText: undefined, streamed: "", deltas: 0, toolCalls: 0, firstTextAt: 0n, events: 0 }
    for await (const ev of client.stream(PROMPT, { toolkit })) {
      out.events++
      switch (ev.type) {
        case "text":
          if (out.deltas++ === 0) out.firstTextAt = process.hrtime.bigint()
          out.streamed += ev.delta
          break
        case "tool_call":
          if (ev.name !== "get_weather" || ev.args?.city !== "Paris") throw new Error(`unexpected tool call ${JSON.stringify(ev)}`)
          out.toolCalls++
          break
        case "done":
          out.finalText = ev.result.text
          break
      }
    }
    return out
  }

  return { run, close: () => toolkit.close() }
}
