// toolnexus as the `toolnexus` runner, with `telemetry` on: every run's spans (the run, two
// model calls, two tool calls) go through the OpenTelemetry SDK's batch processor to an
// exporter that drops them, so what is measured is recording, not shipping.

import { createRequire } from "node:module"
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { ADD_DESCRIPTION, ADD_SCHEMA, API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, WEATHER_SCHEMA, add, getWeather } from "../lib/scenario.mjs"

const { createClient, createToolkit, defineTool } = createRequire(import.meta.url)("../../index.js")

/** An exporter that takes every batch and keeps nothing. */
const dropping = {
  exported: 0,
  export(spans, done) {
    this.exported += spans.length
    done({ code: 0 })
  },
  shutdown: async () => {},
  forceFlush: async () => {},
}

export async function setup({ baseURL }) {
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] })
  const toolkit = await createToolkit({
    builtins: false,
    extraTools: [
      defineTool({ name: "get_weather", description: WEATHER_DESCRIPTION, inputSchema: WEATHER_SCHEMA, run: getWeather }),
      defineTool({ name: "add", description: ADD_DESCRIPTION, inputSchema: ADD_SCHEMA, run: add }),
    ],
  })
  const client = createClient({ baseUrl: baseURL, style: "openai", model: MODEL, apiKey: API_KEY, telemetry: { tracerProvider: provider } })
  return {
    run: async () => (await client.run(PROMPT, { toolkit })).text,
    close: async () => {
      await provider.shutdown()
      await toolkit.close()
    },
  }
}
