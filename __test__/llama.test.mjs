// Against a real local model: SmolLM2-135M behind llama-cpp-python 0.3.36's OpenAI-compatible
// server (`bash scripts/llama.sh` installs and starts it and runs this file with
// TOOLNEXUS_LLAMA_URL set; without it every test here is skipped, saying so). What is checked is
// what the server decides, not what a 135M model says: a tool run's second request is accepted
// (the server refused an assistant turn whose content is null with HTTP 500), a stream ends, and
// structured output in `auto` mode steps down from the `response_format` the server refuses to
// the final tool, whose arguments the server's grammar keeps to the schema.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool } from "../index.js"

const url = process.env.TOOLNEXUS_LLAMA_URL
const skip = url ? false : "no llama-cpp-python server (run: bash scripts/llama.sh)"
const client = () => createClient({ baseUrl: url ?? "", style: "openai", model: "smollm2", apiKey: "none", retries: 0, maxTurns: 3, requestParams: { max_tokens: 60, temperature: 0 } })

test("a tool run: every request after the tool's result is accepted", { skip, timeout: 120_000 }, async () => {
  const seen = []
  const clock = defineTool({ name: "get_time", description: "The current time", run: () => "It is 12:00" })
  const toolkit = await createToolkit({ builtins: false, extraTools: [clock] })
  // The tool is forced (a 135M model may not choose it), so each turn calls it again.
  const tool_choice = { type: "function", function: { name: "get_time" } }
  const c = createClient({ baseUrl: url ?? "", style: "openai", model: "smollm2", apiKey: "none", retries: 0, maxTurns: 3, requestParams: { max_tokens: 60, temperature: 0, tool_choice }, onMetric: (e) => e.event === "llm" && seen.push(e.status) })
  const r = await c.run("What time is it? Call get_time.", { toolkit })
  assert.ok(r.toolCalls.length >= 1, "the model called the tool")
  assert.equal(seen.length, 3, "every turn's request went out")
  assert.ok(seen.every((s) => s === "ok"), JSON.stringify(seen))
  assert.ok(r.messages.some((m) => m.role === "assistant" && m.tool_calls && m.content === null), "the transcript keeps null")
})

test("a stream ends with its result", { skip, timeout: 120_000 }, async () => {
  const toolkit = await createToolkit({ builtins: false })
  const types = []
  for await (const ev of client().stream("Say hello.", { toolkit })) types.push(ev.type)
  assert.equal(types.at(-1), "done")
})

test("structured output in auto mode: the refused response_format gives way to the final tool", { skip, timeout: 120_000 }, async () => {
  const toolkit = await createToolkit({ builtins: false })
  const schema = { type: "object", properties: { city: { type: "string" }, country: { type: "string" } }, required: ["city", "country"] }
  const r = await client().run("Name a city and its country.", { toolkit, output: schema })
  assert.equal(typeof r.output.city, "string")
  assert.equal(typeof r.output.country, "string")
})
