// The Vercel AI SDK (ai@6 + @ai-sdk/openai), idiomatic use: the chat-completions model from
// createOpenAI({ baseURL, apiKey }).chat(...), tools declared with tool() and zod schemas,
// and generateText's multi-step tool loop (stopWhen: stepCountIs(n); the default is 1 step).
// The model and get_weather are declared in ../lib/ai-sdk.mjs, shared with the stream runner.

import { generateText, stepCountIs, tool } from "ai"
import { z } from "zod"
import { chatModel, weatherTool } from "../lib/ai-sdk.mjs"
import { ADD_DESCRIPTION, PROMPT, add } from "../lib/scenario.mjs"

export async function setup({ baseURL }) {
  const model = chatModel(baseURL)
  const tools = {
    get_weather: weatherTool(),
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
