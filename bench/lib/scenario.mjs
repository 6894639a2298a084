// The one scenario every runner performs, and the tool functions they all call.
//
// One "run" = the user asks PROMPT; the scripted model answers with two parallel tool calls
// (get_weather {"city":"Paris"} and add {"a":2,"b":2}); the runner executes both tools and sends
// their results back; the model answers FINAL_TEXT. That is 2 LLM requests + 2 tool executions.
//
// This module is imported by the runners, the endpoint (server.mjs, to validate tool results)
// and the MCP server, so all of them agree on the strings. Keep it free of dependencies.

export const PROMPT = "What's the weather in Paris and what is 2+2?"
export const MODEL = "bench-model"
export const API_KEY = "bench-not-a-key"

/** What get_weather returns, whatever the city (a fixed string, per the scenario). */
export const WEATHER_TEXT = "Sunny, 21 C, light wind"
/** The scripted model's final answer; every runner checks its run produced exactly this. */
export const FINAL_TEXT = "In Paris it is sunny, 21 C with a light wind, and 2 + 2 = 4."

export const WEATHER_DESCRIPTION = "Get the current weather for a city"
export const ADD_DESCRIPTION = "Add two numbers"

/** JSON Schemas of the two tools (runners whose idiom is zod declare the same shapes in zod). */
export const WEATHER_SCHEMA = {
  type: "object",
  properties: { city: { type: "string", description: "City name" } },
  required: ["city"],
}
export const ADD_SCHEMA = {
  type: "object",
  properties: { a: { type: "number" }, b: { type: "number" } },
  required: ["a", "b"],
}

/** Tool executions in this process; the worker checks it equals 2 x runs. */
export const toolCalls = { count: 0 }

export function getWeather(_args) {
  toolCalls.count++
  return WEATHER_TEXT
}

export function add({ a, b }) {
  toolCalls.count++
  return a + b
}

/** Thrown by a runner's setup() when it cannot run on this build (e.g. a feature not there yet). */
export class SkipRunner extends Error {
  constructor(reason) {
    super(reason)
    this.name = "SkipRunner"
  }
}
