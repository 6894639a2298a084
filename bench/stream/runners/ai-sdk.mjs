// The Vercel AI SDK (ai@6 + @ai-sdk/openai), as documented: the chat-completions model from
// createOpenAI({ baseURL, apiKey }).chat(...), the tool declared with tool() and zod, and
// streamText's multi-step loop (stopWhen: stepCountIs(5)), every part of fullStream consumed.

import { createOpenAI } from "@ai-sdk/openai"
import { stepCountIs, streamText, tool } from "ai"
import { z } from "zod"
import { API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, getWeather } from "../scenario.mjs"

export async function setup({ baseURL }) {
  const model = createOpenAI({ baseURL, apiKey: API_KEY }).chat(MODEL)
  const tools = {
    get_weather: tool({
      description: WEATHER_DESCRIPTION,
      inputSchema: z.object({ city: z.string().describe("City name") }),
      execute: async (args) => getWeather(args),
    }),
  }

  async function run() {
    const out = { finalText: undefined, streamed: "", deltas: 0, toolCalls: 0, firstTextAt: 0n, events: 0 }
    const result = streamText({ model, tools, prompt: PROMPT, stopWhen: stepCountIs(5) })
    for await (const part of result.fullStream) {
      out.events++
      switch (part.type) {
        case "text-delta":
          if (out.deltas++ === 0) out.firstTextAt = process.hrtime.bigint()
          out.streamed += part.text
          break
        case "tool-call":
          if (part.toolName !== "get_weather" || part.input?.city !== "Paris") throw new Error(`unexpected tool call ${JSON.stringify(part)}`)
          out.toolCalls++
          break
        case "error":
          throw part.error instanceof Error ? part.error : new Error(String(part.error?.message ?? part.error))
      }
    }
    out.finalText = await result.text
    return out
  }

  return { run }
}
