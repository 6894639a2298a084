// The Vercel AI SDK pieces both AI SDK runners (runners/ai-sdk.mjs, stream/runners/ai-sdk.mjs)
// declare alike, as its documentation shows: the chat-completions model and the get_weather tool.

import { createOpenAI } from "@ai-sdk/openai"
import { tool } from "ai"
import { z } from "zod"
import { API_KEY, MODEL, WEATHER_DESCRIPTION, getWeather } from "./scenario.mjs"

/** The chat-completions model at `baseURL`: createOpenAI({ baseURL, apiKey }).chat(model). */
export function chatModel(baseURL) {
  return createOpenAI({ baseURL, apiKey: API_KEY }).chat(MODEL)
}

/** get_weather as an AI SDK tool(): a zod input schema and the scenario's getWeather. */
export function weatherTool() {
  return tool({
    description: WEATHER_DESCRIPTION,
    inputSchema: z.object({ city: z.string().describe("City name") }),
    execute: async (args) => getWeather(args),
  })
}
