// Structured output (this package's addition, issue 44) through the public API: `output` on
// run, ask and stream with zod, valibot, arktype and JSON Schema, the error a run rejects with,
// the partial object of a stream, the runtime's agents, and the types under tsc --strict.
// Each wire rule is pinned by the core's tests (crates/core/tests/it/output.rs).
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import path from "node:path"
import { spawn } from "node:child_process"
import { z } from "zod"
import * as v from "valibot"
import { type } from "arktype"
import { createClient, createToolkit, defineTool, agents } from "../index.js"
import { REPO, cleanEnv, startLLM, oaText, oaCalls, anReply, toolUse, sse, SSE_DONE, oaDeltaText } from "./support/llm.mjs"

const client = (llm, extra = {}) => createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", retries: 0, ...extra })
const lookup = () => defineTool({ name: "lookup", description: "look it up", run: () => "18 degrees in Paris" })

test("run: tools first, then an answer that fails validation goes back once, and result.output is zod's output (transforms applied)", async (t) => {
  const llm = await startLLM([
    oaCalls([{ id: "c1", name: "lookup", args: {} }]),
    oaText('{"city":"Paris","temp":"warm"}'),
    oaText('{"city":"Paris","temp":18}'),
  ])
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false, extraTools: [lookup()] })
  const schema = z.object({ city: z.string(), temp: z.number().transform((c) => ({ celsius: c, fahrenheit: c * 1.8 + 32 })) })
  const res = await client(llm).run("weather?", { toolkit, output: schema })
  assert.equal(res.status, "done")
  assert.deepStrictEqual(res.output, { city: "Paris", temp: { celsius: 18, fahrenheit: 64.4 } })
  assert.equal(res.text, '{"city":"Paris","temp":18}')
  assert.deepStrictEqual(res.toolCalls.map((c) => c.name), ["lookup"])
  // The model saw zod's JSON Schema (input side) as response_format, tools alongside.
  const first = llm.requests[0].json
  assert.deepStrictEqual(first.response_format, {
    type: "json_schema",
    json_schema: { name: "final_answer", schema: { type: "object", properties: { city: { type: "string" }, temp: { type: "number" } }, required: ["city", "temp"] } },
  })
  assert.equal(first.tool_choice, "auto")
  // The mismatch went back with zod's issue, named by its path.
  const feedback = llm.requests[2].json.messages.at(-1)
  assert.equal(feedback.role, "user")
  assert.equal(feedback.content, "That answer does not match the required JSON Schema: temp: Invalid input: expected number, received string. Answer again with only the corrected JSON.")
})

test("run: an answer that still fails rejects with an Error carrying code EOUTPUT, the issues and the raw text", async (t) => {
  const llm = await startLLM([oaText("sorry, no JSON today"), oaText('{"n":"one"}')])
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false })
  const err = await client(llm).run("count", { toolkit, output: v.object({ n: v.number() }) }).then(
    () => assert.fail("the run should reject"),
    (e) => e,
  )
  assert.ok(err instanceof Error)
  assert.equal(err.constructor, Error)
  assert.equal(err.code, "EOUTPUT")
  assert.equal(err.text, '{"n":"one"}')
  assert.deepStrictEqual(err.issues, [{ path: "n", message: 'Invalid type: Expected number but received "one"' }])
  assert.equal(err.message, 'the answer does not match the output schema after 2 attempts: n: Invalid type: Expected number but received "one"')
  assert.equal(llm.requests.length, 2)
})

test("run: outputRetries 0 fails on the first mismatch; a JSON Schema is checked by the core and result.output is the parsed JSON", async (t) => {
  const llm = await startLLM([oaText('{"a":"x"}'), oaText('{"a":2}')])
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false })
  const schema = { type: "object", properties: { a: { type: "number" } }, required: ["a"] }
  await assert.rejects(client(llm).run("q", { toolkit, output: schema, outputRetries: 0 }), (e) => e.code === "EOUTPUT" && e.issues[0].path === "a")
  const res = await client(llm).run("q", { toolkit, output: schema })
  assert.deepStrictEqual(res.output, { a: 2 })
})

test("run: Anthropic ends with the final tool; arktype validates; the transcript ends with the answer as text", async (t) => {
  const llm = await startLLM([
    anReply([toolUse("t1", "lookup", {})]),
    anReply([toolUse("t2", "final_answer", { city: "Oslo", temp: -2 })]),
  ])
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false, extraTools: [lookup()] })
  const c = createClient({ baseUrl: llm.url, style: "anthropic", model: "claude", apiKey: "k", retries: 0 })
  const res = await c.run("weather?", { toolkit, output: type({ city: "string", temp: "number" }) })
  assert.deepStrictEqual(res.output, { city: "Oslo", temp: -2 })
  const first = llm.requests[0].json
  assert.deepStrictEqual(first.tools.map((x) => x.name), ["lookup", "final_answer"])
  assert.deepStrictEqual(first.tool_choice, { type: "any" })
  assert.deepStrictEqual(res.messages.at(-1), { role: "assistant", content: [{ type: "text", text: '{"city":"Oslo","temp":-2}' }] })
})

test("ask: the conversation goes on from a structured answer", async (t) => {
  const llm = await startLLM([oaText('{"n":1}'), oaText("plain words")])
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false })
  const c = client(llm)
  const one = await c.ask("first", { toolkit, id: "conv", output: z.object({ n: z.number() }) })
  assert.deepStrictEqual(one.output, { n: 1 })
  const two = await c.ask("second", { toolkit, id: "conv" })
  assert.equal(two.text, "plain words")
  assert.equal("output" in two, false, "a run without output has no output key")
  assert.deepStrictEqual(llm.requests[1].json.messages.slice(0, 2), [
    { role: "user", content: "first" },
    { role: "assistant", content: '{"n":1}' },
  ])
})

test("stream: output events carry the partial object; done carries the checked one", async (t) => {
  const frames = ['{"items":[{"na', 'me":"a"},{"name"', ':"b"}]}'].map((p) => sse(oaDeltaText(p)))
  const llm = await startLLM([{ sse: [...frames, SSE_DONE] }])
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false })
  const partials = []
  let done
  for await (const ev of client(llm).stream("list", { toolkit, output: z.object({ items: z.array(z.object({ name: z.string() })) }) })) {
    if (ev.type === "output") partials.push(ev.partial)
    if (ev.type === "done") done = ev.result
  }
  assert.deepStrictEqual(partials, [{ items: [{}] }, { items: [{ name: "a" }, {}] }, { items: [{ name: "a" }, { name: "b" }] }])
  assert.deepStrictEqual(done.output, { items: [{ name: "a" }, { name: "b" }] })
})

test("stream: an answer that goes back is marked by output_retry with its issues; the corrected attempt's text and partials follow afresh (both styles)", async (t) => {
  const schema = z.object({ city: z.string(), celsius: z.number() })
  const collect = async (llm, style) => {
    const toolkit = await createToolkit({ builtins: false })
    const events = []
    for await (const ev of client(llm, { style }).stream("weather", { toolkit, output: schema })) events.push(ev)
    return events
  }
  // OpenAI style: the answer comes as text (response_format).
  const oa = (...parts) => ({ sse: [...parts.map((p) => sse(oaDeltaText(p))), SSE_DONE] })
  const llm = await startLLM([oa('{"city":"Paris",', '"celsius":"eighteen"}'), oa('{"city":"Pa', 'ris","celsius":18}')])
  t.after(() => llm.close())
  const events = await collect(llm, "openai")
  const retry = events.findIndex((e) => e.type === "output_retry")
  assert.ok(retry > 0, "an output_retry event")
  assert.deepStrictEqual(events[retry], {
    type: "output_retry",
    attempt: 1,
    issues: [{ path: "celsius", message: "Invalid input: expected number, received string" }],
    text: '{"city":"Paris","celsius":"eighteen"}',
  })
  const texts = (from, to) => events.slice(from, to).filter((e) => e.type === "text").map((e) => e.delta).join("")
  assert.equal(texts(0, retry), '{"city":"Paris","celsius":"eighteen"}')
  assert.equal(texts(retry), '{"city":"Paris","celsius":18}')
  const partials = (from, to) => events.slice(from, to).filter((e) => e.type === "output").map((e) => e.partial)
  assert.deepStrictEqual(partials(0, retry), [{ city: "Paris" }, { city: "Paris", celsius: "eighteen" }])
  assert.deepStrictEqual(partials(retry), [{ city: "Pa" }, { city: "Paris", celsius: 18 }])
  assert.deepStrictEqual(events.at(-1).result.output, { city: "Paris", celsius: 18 })

  // Anthropic style: the answer comes as the final tool's arguments.
  const an = (id, ...parts) => ({
    sse: [
      sse({ type: "message_start", message: { id: "msg", type: "message", role: "assistant", content: [], usage: { input_tokens: 1, output_tokens: 1 } } }),
      sse({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id, name: "final_answer", input: {} } }),
      ...parts.map((p) => sse({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: p } })),
      sse({ type: "content_block_stop", index: 0 }),
      sse({ type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 1 } }),
      sse({ type: "message_stop" }),
    ],
  })
  const anLlm = await startLLM([an("t1", '{"city":"Ber', 'lin","celsius":"cold"}'), an("t2", '{"city":"Ber', 'lin","celsius":4}')])
  t.after(() => anLlm.close())
  const anEvents = await collect(anLlm, "anthropic")
  assert.deepStrictEqual(anEvents.map((e) => e.type), ["output", "output", "output_retry", "output", "output", "usage", "done"])
  assert.deepStrictEqual(anEvents[2].issues, [{ path: "celsius", message: "Invalid input: expected number, received string" }])
  assert.deepStrictEqual(anEvents[3].partial, { city: "Ber" })
  assert.deepStrictEqual(anEvents.at(-1).result.output, { city: "Berlin", celsius: 4 })
})

test("output that is not a schema, or a Standard Schema with no JSON Schema, rejects the run with a TypeError naming it", async (t) => {
  const llm = await startLLM([oaText("{}")])
  t.after(() => llm.close())
  const toolkit = await createToolkit({ builtins: false })
  await assert.rejects(client(llm).run("q", { toolkit, output: "a string" }), { name: "TypeError", message: "run: `output` must be a Standard Schema or a JSON Schema object (got string)" })
  const foreign = { "~standard": { version: 1, vendor: "acme", validate: (x) => ({ value: x }) } }
  await assert.rejects(client(llm).run("q", { toolkit, output: foreign }), (e) => e instanceof TypeError && e.message.startsWith('run: `output` is a acme Standard Schema that cannot be sent as JSON Schema:'))
  assert.equal(llm.requests.length, 0)
})

test("runtime: an agent with output ends each turn with a checked answer, in the TaskResult as JSON", async (t) => {
  const llm = await startLLM([oaText('{"verdict":"yes"}'), oaText('{"verdict":"no","score":0.2}')])
  t.after(() => llm.close())
  const rt = new agents.AgentRuntime({
    llm: { baseUrl: llm.url, style: "openai", apiKey: "k", model: "m" },
    registry: { judge: { name: "judge", does: "judges", output: z.object({ verdict: z.enum(["yes", "no"]), score: z.number() }) } },
  })
  const h = rt.spawn(rt.root, "judge")
  rt.wake(h, "judge this")
  const r = await rt.wait(h)
  assert.equal(r.status, "done", JSON.stringify(r))
  assert.deepStrictEqual(r.output, { verdict: "no", score: 0.2 })
  assert.ok(llm.requests[0].json.response_format)
  await rt.close(rt.root)
})

test("tsc --strict: result.output and a stream's partial object take each library's output type", { timeout: 120_000 }, async () => {
  const dir = path.join(REPO, "__test__", "types")
  const tsc = path.join(REPO, "node_modules", ".bin", "tsc")
  const args = ["--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom", "--types", "node", "output-libraries.mts"]
  assert.ok(fs.existsSync(path.join(dir, "output-libraries.mts")))
  const out = await new Promise((resolve) => {
    const child = spawn(tsc, args, { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let text = ""
    child.stdout.on("data", (d) => (text += d))
    child.stderr.on("data", (d) => (text += d))
    child.on("close", (code) => resolve({ code, text }))
  })
  // The file's @ts-expect-error lines fail the compile if a wrong use were accepted.
  assert.equal(out.code, 0, out.text)
})
