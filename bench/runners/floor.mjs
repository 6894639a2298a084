// The plain-Node floor: the least work JavaScript can do for one run. A hand-written loop over
// global fetch and JSON.parse: ask, call the two tools the reply names, send the results, read
// the answer. No framework, no validation beyond what the loop needs. Every other runner's
// figures are reported as a ratio to this one, measured in the same round.

import { ADD_DESCRIPTION, ADD_SCHEMA, API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, WEATHER_SCHEMA, add, getWeather } from "../lib/scenario.mjs"

export async function setup({ baseURL }) {
  const url = `${baseURL}/chat/completions`
  const headers = { "content-type": "application/json", authorization: `Bearer ${API_KEY}` }
  const tools = [
    { type: "function", function: { name: "get_weather", description: WEATHER_DESCRIPTION, parameters: WEATHER_SCHEMA } },
    { type: "function", function: { name: "add", description: ADD_DESCRIPTION, parameters: ADD_SCHEMA } },
  ]
  const impl = { get_weather: getWeather, add }

  async function complete(messages) {
    const res = await fetch(url, { method: "POST", headers, body: JSON.stringify({ model: MODEL, messages, tools }) })
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`)
    return (await res.json()).choices[0].message
  }

  async function run() {
    const messages = [{ role: "user", content: PROMPT }]
    for (;;) {
      const message = await complete(messages)
      if (!message.tool_calls?.length) return message.content
      messages.push(message)
      for (const call of message.tool_calls) {
        const out = impl[call.function.name](JSON.parse(call.function.arguments))
        messages.push({ role: "tool", tool_call_id: call.id, content: typeof out === "string" ? out : JSON.stringify(out) })
      }
    }
  }

  return { run }
}
