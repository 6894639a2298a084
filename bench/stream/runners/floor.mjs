// The plain-Node floor of the stream bench: global fetch, the response body read as a stream,
// SSE events split by hand, JSON.parse per event, text and tool-call arguments accumulated, the
// tool run, the second request. No framework. Every other runner's figures are a ratio to this.

import { API_KEY, MODEL, PROMPT, WEATHER_DESCRIPTION, WEATHER_SCHEMA, getWeather } from "../scenario.mjs"

export async function setup({ baseURL }) {
  const url = `${baseURL}/chat/completions`
  const headers = { "content-type": "application/json", authorization: `Bearer ${API_KEY}` }
  const tools = [{ type: "function", function: { name: "get_weather", description: WEATHER_DESCRIPTION, parameters: WEATHER_SCHEMA } }]
  const impl = { get_weather: getWeather }

  /** One streamed turn: calls onText per text delta; the turn's text and tool calls. */
  async function turn(messages, onText, seen) {
    const res = await fetch(url, { method: "POST", headers, body: JSON.stringify({ model: MODEL, messages, tools, stream: true }) })
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`)
    const decoder = new TextDecoder()
    const calls = []
    let content = ""
    let pending = ""
    let done = false
    for await (const bytes of res.body) {
      seen.reads++
      pending += decoder.decode(bytes, { stream: true })
      let start = 0
      let end
      while ((end = pending.indexOf("\n\n", start)) !== -1) {
        const event = pending.slice(start, end)
        start = end + 2
        if (!event.startsWith("data: ")) continue
        const data = event.slice(6)
        seen.events++
        if (data === "[DONE]") {
          done = true
          continue
        }
        const delta = JSON.parse(data).choices[0]?.delta
        if (!delta) continue // the usage chunk
        if (delta.content) {
          content += delta.content
          onText(delta.content)
        }
        if (delta.tool_calls) {
          for (const tc of delta.tool_calls) {
            const call = (calls[tc.index] ??= { id: "", name: "", args: "" })
            if (tc.id) call.id = tc.id
            if (tc.function?.name) call.name += tc.function.name
            if (tc.function?.arguments) call.args += tc.function.arguments
          }
        }
      }
      pending = pending.slice(start)
    }
    if (!done) throw new Error("the stream ended without [DONE]")
    return { content, calls }
  }

  async function run() {
    const out = { finalText: "", streamed: "", deltas: 0, toolCalls: 0, firstTextAt: 0n, events: 0, reads: 0 }
    const onText = (delta) => {
      if (out.deltas++ === 0) out.firstTextAt = process.hrtime.bigint()
      out.streamed += delta
    }
    const messages = [{ role: "user", content: PROMPT }]
    for (;;) {
      const { content, calls } = await turn(messages, onText, out)
      if (!calls.length) {
        out.finalText = content
        return out
      }
      messages.push({
        role: "assistant",
        content: content || null,
        tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.args } })),
      })
      for (const c of calls) {
        out.toolCalls++
        const result = impl[c.name](JSON.parse(c.args))
        messages.push({ role: "tool", tool_call_id: c.id, content: typeof result === "string" ? result : JSON.stringify(result) })
      }
    }
  }

  return { run }
}
