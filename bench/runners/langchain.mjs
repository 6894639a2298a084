// LangChain.js v1, idiomatic use: createAgent from `langchain` (the v1 agent, on LangGraph) with a
// ChatOpenAI model from @langchain/openai pointed at the endpoint (chat completions, not the
// Responses API), tools declared with tool() and zod schemas, one agent.invoke per run.
// LangSmith tracing is off: the harness removes LANGSMITH_* / LANGCHAIN_* variables from the
// runner's environment.

import { ChatOpenAI } from "@langchain/openai"
import { createAgent, tool } from "langchain"
import { z } from "zod"
import { ADD_DESCRIPTION, API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, add, getWeather } from "../lib/scenario.mjs"

export async function setup({ baseURL }) {
  const model = new ChatOpenAI({ model: MODEL, apiKey: API_KEY, configuration: { baseURL }, useResponsesApi: false })
  const tools = [
    tool(async (args) => getWeather(args), {
      name: "get_weather",
      description: WEATHER_DESCRIPTION,
      schema: z.object({ city: z.string().describe("City name") }),
    }),
    tool(async (args) => add(args), {
      name: "add",
      description: ADD_DESCRIPTION,
      schema: z.object({ a: z.number(), b: z.number() }),
    }),
  ]
  const agent = createAgent({ model, tools })
  return {
    run: async () => {
      const { messages } = await agent.invoke({ messages: [{ role: "user", content: PROMPT }] })
      const last = messages.at(-1)
      return typeof last.content === "string" ? last.content : last.text
    },
  }
}
