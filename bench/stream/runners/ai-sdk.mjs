// The Vercel AI SDK (ai@6 + @ai-sdk/openai), as documented: the chat-completions model from
// createOpenAI({ baseURL, apiKey }).chat(...), the tool declared with tool() and zod, and
// streamText's multi-step loop (stopWhen: stepCountIs(5)), every part of fullStream consumed.
// The model and get_weather are declared in ../../lib/ai-sdk.mjs, shared with the main runner.

import { stepCountIs, streamText } from "ai"
import { chatModel, weatherTool } from "../../lib/ai-sdk.mjs"
import { PROMPT } from "../scenario.mjs"

export async function setup({ baseURL }) {
  const model = chatModel(baseURL)
  const tools = { get_weather: weatherTool() }

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
