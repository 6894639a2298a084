// The Vercel AI SDK (ai@6 + @ai-sdk/openai), idiomatic use: the chat-completions model from
// createOpenAI({ baseURL, apiKey }).chat(...), tools declared with tool() and zod schemas,
// and generateText's multi-step tool loop (stopWhen: stepCountIs(n); the default is 1 step).

import { createOpenAI } from "@ai-sdk/openai"
import { generateText, stepCountIs, tool } from "ai"
import { z } from "zod"
import { ADD_DESCRIPTION, API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, add, getWeather } from "../lib/scenario.mjs"

export async function setup({ baseURL }) {
  const model = createOpenAI({ baseURL, apiKey: API_KEY }).chat(MODEL)
  const tools = {
    get_weather: tool({
      description: WEATHER_DESCRIPTION,
      inputSchema: z.object({ city: z.string().describe("City name") }),
      execute: async (args) => getWeather(args),
    }),
    add: tool({
      description: ADD_DESCRIPTION,
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: async (args) => add(args),
    }),
  }
  return {
    run: async () => (await generateText({ model, tools, prompt: PROMPT, stopWhen: stepCountIs(5) })).text,
  }
}
