// SPEC §11 Single-turn translation: client.translate(), Client.toolCallsJSON and the exported helpers.
// Expected values below were worked out by hand from the reference implementation's rules.
import test from "node:test"
import assert from "node:assert/strict"
import {
  Client, createClient, createToolkit, defineTool,
  finishReasonFor, contentText, argsObject, argsString, toolCallsOf,
  openAIMessagesToAnthropic, openAIToolsToAnthropic, openAIToolChoiceToAnthropic, hasSystemMessage,
} from "../index.js"
import { startLLM } from "./support/llm.mjs"

const addSchema = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } }
const weatherParams = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
const weatherDecl = { type: "function", function: { name: "get_weather", description: "Current weather", parameters: weatherParams } }

/** A toolkit whose one tool records any execution (translate must never run it). */
async function trapToolkit() {
  const ran = []
  const tk = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "add", description: "Add numbers", inputSchema: addSchema, run: (a) => { ran.push(a); return "ran" } })] })
  return { tk, ran }
}

const oaResponse = (message, extra = {}) => ({ id: "chatcmpl-9", object: "chat.completion", model: "upstream-name", choices: [{ index: 0, message: { role: "assistant", ...message }, ...extra }] })

// ---------------------------------------------------------------------------------------------
// OpenAI style
// ---------------------------------------------------------------------------------------------

test("openai translate: near-passthrough body, toolkit declarations first, result in OpenAI shape", async (t) => {
  const reply = {
    ...oaResponse({
      content: null,
      tool_calls: [
        { id: "call_w", type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } },
        { id: "call_x", type: "function", function: { name: "add", arguments: { a: 1, b: 2 } } },
      ],
    }, { finish_reason: "tool_calls" }),
    usage: { prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 },
  }
  const llm = await startLLM([{ body: reply }])
  t.after(() => llm.close())
  const { tk, ran } = await trapToolkit()
  const c = createClient({ baseUrl: llm.url + "/", style: "openai", model: "gpt-t", apiKey: "k", systemPrompt: "House rules." })
  const toolChoice = { type: "function", function: { name: "get_weather" } }
  const res = await c.translate({ messages: [{ role: "user", content: "weather?" }], tools: [weatherDecl], toolkit: tk, toolChoice, maxTokens: 256 })

  assert.equal(llm.requests[0].path, "/chat/completions")
  const body = llm.requests[0].json
  assert.deepStrictEqual(Object.keys(body), ["model", "messages", "tools", "tool_choice", "max_tokens"])
  assert.deepStrictEqual(body, {
    model: "gpt-t",
    messages: [{ role: "system", content: "House rules." }, { role: "user", content: "weather?" }],
    tools: [{ type: "function", function: { name: "add", description: "Add numbers", parameters: addSchema } }, weatherDecl],
    tool_choice: toolChoice,
    max_tokens: 256,
  })
  assert.deepStrictEqual(Object.keys(res), ["text", "toolCalls", "finishReason", "usage", "model", "raw"])
  assert.deepStrictEqual(res, {
    text: "",
    toolCalls: [
      { id: "call_w", name: "get_weather", arguments: '{"city": "Paris"}' },
      { id: "call_x", name: "add", arguments: '{"a":1,"b":2}' },
    ],
    finishReason: "tool_calls",
    usage: { promptTokens: 8, completionTokens: 4, totalTokens: 12 },
    model: "gpt-t",
    raw: reply,
  })
  assert.deepStrictEqual(ran, [], "the toolkit is declared, never executed")
})

test("openai translate: the system prompt is prepended only when the messages carry none", async (t) => {
  const llm = await startLLM([{ body: oaResponse({ content: "ok" }, { finish_reason: "stop" }) }])
  t.after(() => llm.close())
  const c = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", systemPrompt: "Default system." })
  const user = { role: "user", content: "hi" }
  const cases = [
    [{ messages: [user] }, [{ role: "system", content: "Default system." }, user]],
    [{ messages: [user], system: "Override." }, [{ role: "system", content: "Override." }, user]],
    [{ messages: [{ role: "system", content: "Mine." }, user], system: "Override." }, [{ role: "system", content: "Mine." }, user]],
    [{ messages: [user, { role: "developer", content: "Dev rules." }] }, [user, { role: "developer", content: "Dev rules." }]],
  ]
  for (const [req] of cases) await c.translate(req)
  cases.forEach(([, expected], i) => assert.deepStrictEqual(llm.requests[i].json.messages, expected, `case ${i}`))

  const bare = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  await bare.translate({ messages: [user] })
  assert.deepStrictEqual(llm.requests.at(-1).json, { model: "m", messages: [user] }, "no system anywhere: nothing added; no tools key")
})

test("openai translate: tool_choice is forwarded verbatim even without tools; a zero maxTokens is left out", async (t) => {
  const llm = await startLLM([{ body: oaResponse({ content: "ok" }) }])
  t.after(() => llm.close())
  const c = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const msgs = [{ role: "user", content: "x" }]
  await c.translate({ messages: msgs, toolChoice: "none", maxTokens: 0 })
  await c.translate({ messages: msgs, toolChoice: "required", tools: [weatherDecl] })
  await c.translate({ messages: msgs, toolChoice: null })
  assert.deepStrictEqual(llm.requests[0].json, { model: "m", messages: msgs, tool_choice: "none" })
  assert.deepStrictEqual(llm.requests[1].json, { model: "m", messages: msgs, tools: [weatherDecl], tool_choice: "required" })
  assert.deepStrictEqual(llm.requests[2].json, { model: "m", messages: msgs, tool_choice: null })
})

test("openai translate: finish_reason passes through from the provider, otherwise it is derived", async (t) => {
  const call = { id: "c", type: "function", function: { name: "f", arguments: "{}" } }
  const replies = [
    oaResponse({ content: "cut" }, { finish_reason: "length" }),
    oaResponse({ content: null, tool_calls: [call] }, { finish_reason: "stop" }), // kept as the provider said
    oaResponse({ content: null, tool_calls: [call] }), // none given: derived
    oaResponse({ content: "plain" }, { finish_reason: null }),
    oaResponse({ content: "filtered" }, { finish_reason: "content_filter" }),
  ]
  const llm = await startLLM((req, i) => ({ body: { ...replies[i], usage: i === 0 ? { prompt_tokens: 3, completion_tokens: 2 } : undefined } }))
  t.after(() => llm.close())
  const c = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const out = []
  for (let i = 0; i < replies.length; i++) out.push(await c.translate({ messages: [{ role: "user", content: "q" }] }))
  assert.deepStrictEqual(out.map((r) => [r.finishReason, r.text, r.toolCalls.length]), [
    ["length", "cut", 0],
    ["stop", "", 1],
    ["tool_calls", "", 1],
    ["stop", "plain", 0],
    ["content_filter", "filtered", 0],
  ])
  assert.deepStrictEqual(out[0].usage, { promptTokens: 3, completionTokens: 2, totalTokens: 5 }, "total derived from its parts")
  assert.deepStrictEqual(out[1].usage, { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, "no usage: zeros")
})

test("translate headers are spelled in lower case (content-type, authorization / x-api-key), custom ones after", async () => {
  const seen = []
  const fetch = async (url, init) => {
    seen.push({ url, init })
    const answer = url.endsWith("/messages") ? { content: [{ type: "text", text: "a" }], stop_reason: "end_turn" } : oaResponse({ content: "o" })
    return new Response(JSON.stringify(answer), { status: 200, headers: { "content-type": "application/json" } })
  }
  const msgs = [{ role: "user", content: "x" }]
  await createClient({ baseUrl: "http://o.invalid/v1", style: "openai", model: "m", apiKey: "sk-o", fetch }).translate({ messages: msgs })
  await createClient({ baseUrl: "http://o.invalid/v1", style: "openai", model: "m", apiKey: "sk-o", fetch, headers: { "X-Trace": "t-1" } }).translate({ messages: msgs })
  await createClient({ baseUrl: "http://a.invalid/v1", style: "anthropic", model: "c", apiKey: "sk-a", fetch }).translate({ messages: msgs })
  await createClient({ baseUrl: "http://a.invalid", style: "anthropic", model: "c", apiKey: "sk-a", fetch, headers: { "anthropic-version": "2099-01-01" } }).translate({ messages: msgs })
  assert.deepStrictEqual(seen.map((s) => s.url), [
    "http://o.invalid/v1/chat/completions",
    "http://o.invalid/v1/chat/completions",
    "http://a.invalid/v1/messages",
    "http://a.invalid/v1/messages",
  ])
  const headers = seen.map((s) => s.init.headers)
  assert.deepStrictEqual(headers.map((h) => Object.keys(h)), [
    ["content-type", "authorization"],
    ["content-type", "authorization", "X-Trace"],
    ["content-type", "x-api-key", "anthropic-version"],
    ["content-type", "x-api-key", "anthropic-version"],
  ])
  assert.deepStrictEqual(headers[0], { "content-type": "application/json", authorization: "Bearer sk-o" })
  assert.deepStrictEqual(headers[1], { "content-type": "application/json", authorization: "Bearer sk-o", "X-Trace": "t-1" })
  assert.deepStrictEqual(headers[2], { "content-type": "application/json", "x-api-key": "sk-a", "anthropic-version": "2023-06-01" })
  assert.deepStrictEqual(headers[3], { "content-type": "application/json", "x-api-key": "sk-a", "anthropic-version": "2099-01-01" })
  assert.ok(seen.every((s) => s.init.method === "POST"))
})

// ---------------------------------------------------------------------------------------------
// Anthropic style
// ---------------------------------------------------------------------------------------------

test("anthropic translate: messages converted, system hoisted, tools converted after the toolkit's, tool_choice mapped", async (t) => {
  const reply = {
    id: "msg_1",
    type: "message",
    role: "assistant",
    content: [
      { type: "text", text: "Checking " },
      { type: "tool_use", id: "tu_1", name: "get_weather", input: { city: "Oslo" } },
      { type: "text", text: "now." },
      { type: "tool_use", id: "tu_2", name: "add", input: { a: 1 } },
    ],
    stop_reason: "end_turn",
    usage: { input_tokens: 30, output_tokens: 12 },
  }
  const llm = await startLLM([{ body: reply }])
  t.after(() => llm.close())
  const { tk, ran } = await trapToolkit()
  const c = createClient({ baseUrl: llm.url, style: "anthropic", model: "claude-t", apiKey: "ak" })
  const res = await c.translate({
    messages: [
      { role: "system", content: "Be helpful." },
      { role: "user", content: "Weather?" },
      { role: "assistant", content: null, tool_calls: [{ id: "p1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
      { role: "tool", tool_call_id: "p1", content: "cold" },
      { role: "user", content: "and the sum?" },
    ],
    tools: [weatherDecl],
    toolkit: tk,
    toolChoice: "required",
  })
  assert.equal(llm.requests[0].path, "/v1/messages")
  const body = llm.requests[0].json
  assert.deepStrictEqual(Object.keys(body), ["model", "max_tokens", "messages", "system", "tools", "tool_choice"])
  assert.deepStrictEqual(body, {
    model: "claude-t",
    max_tokens: 4096,
    messages: [
      { role: "user", content: "Weather?" },
      { role: "assistant", content: [{ type: "tool_use", id: "p1", name: "get_weather", input: { city: "Oslo" } }] },
      { role: "user", content: [{ type: "tool_result", content: "cold", tool_use_id: "p1" }] },
      { role: "user", content: "and the sum?" },
    ],
    system: "Be helpful.",
    tools: [
      { name: "add", description: "Add numbers", input_schema: addSchema },
      { name: "get_weather", description: "Current weather", input_schema: weatherParams },
    ],
    tool_choice: { type: "any" },
  })
  assert.deepStrictEqual(res, {
    text: "Checking now.",
    toolCalls: [
      { id: "tu_1", name: "get_weather", arguments: '{"city":"Oslo"}' },
      { id: "tu_2", name: "add", arguments: '{"a":1}' },
    ],
    finishReason: "tool_calls",
    usage: { promptTokens: 30, completionTokens: 12, totalTokens: 42 },
    model: "claude-t",
    raw: reply,
  })
  assert.deepStrictEqual(ran, [])
})

test("anthropic translate: max_tokens default/override, tool_choice shapes, stop reasons, system precedence", async (t) => {
  const replies = [
    { content: [{ type: "text", text: "cut off" }], stop_reason: "max_tokens" },
    { content: [{ type: "text", text: "I can't" }], stop_reason: "refusal" },
    { content: [{ type: "tool_use", id: "t9", name: "add" }], stop_reason: "tool_use" },
    { content: [{ type: "text", text: "a" }, { type: "text", text: "b" }], stop_reason: "end_turn" },
    { content: [], stop_reason: "stop_sequence" },
    { content: [{ type: "text", text: "x" }] },
  ]
  const llm = await startLLM((req, i) => ({ body: replies[i] }))
  t.after(() => llm.close())
  const c = createClient({ baseUrl: llm.url, style: "anthropic", model: "c", apiKey: "k" })
  const withSys = createClient({ baseUrl: llm.url, style: "anthropic", model: "c", apiKey: "k", systemPrompt: "From options." })
  const msgs = [{ role: "developer", content: "From messages." }, { role: "user", content: "q" }]
  const out = [
    await c.translate({ messages: msgs, maxTokens: 512, toolChoice: { type: "function", function: { name: "add" } } }),
    await c.translate({ messages: msgs, maxTokens: 0, toolChoice: "auto", system: "From request." }),
    await withSys.translate({ messages: msgs, maxTokens: -3, toolChoice: "none" }),
    await withSys.translate({ messages: msgs, system: "From request." }),
    await c.translate({ messages: [{ role: "user", content: "q" }] }),
    await c.translate({ messages: [{ role: "user", content: "q" }], toolChoice: { type: "tool", name: "add" } }),
  ]
  const bodies = llm.requests.map((r) => r.json)
  assert.deepStrictEqual(bodies.map((b) => [b.max_tokens, b.tool_choice, b.system]), [
    [512, { type: "tool", name: "add" }, "From messages."],
    [4096, undefined, "From request."],
    [4096, { type: "none" }, "From options."],
    [4096, undefined, "From request."],
    [4096, undefined, undefined],
    [4096, undefined, undefined],
  ])
  assert.ok(!("system" in bodies[4]) && !("tools" in bodies[4]) && !("tool_choice" in bodies[4]))
  assert.deepStrictEqual(out.map((r) => [r.finishReason, r.text, r.toolCalls]), [
    ["length", "cut off", []],
    ["content_filter", "I can't", []],
    ["tool_calls", "", [{ id: "t9", name: "add", arguments: "{}" }]],
    ["stop", "ab", []],
    ["stop", "", []],
    ["stop", "x", []],
  ])
  assert.deepStrictEqual(out[5].usage, { promptTokens: 0, completionTokens: 0, totalTokens: 0 })
})

// ---------------------------------------------------------------------------------------------
// Hooks, metrics, shared infrastructure
// ---------------------------------------------------------------------------------------------

for (const style of ["openai", "anthropic"]) {
  test(`${style} translate: beforeLLM/afterLLM fire once with turn 0, tool hooks never, one llm metric and no run metric`, async (t) => {
    const reply = style === "openai"
      ? { ...oaResponse({ content: null, tool_calls: [{ id: "k", type: "function", function: { name: "add", arguments: '{"a":1,"b":1}' } }] }), usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } }
      : { content: [{ type: "tool_use", id: "k", name: "add", input: { a: 1, b: 1 } }], stop_reason: "tool_use", usage: { input_tokens: 4, output_tokens: 2 } }
    const llm = await startLLM([{ body: reply }])
    t.after(() => llm.close())
    const { tk, ran } = await trapToolkit()
    const calls = []
    const events = []
    const c = createClient({
      baseUrl: llm.url, style, model: "hooked", apiKey: "k",
      onMetric: (ev) => events.push(ev),
      hooks: {
        beforeLLM: (ev) => { calls.push(["beforeLLM", ev]); return { messages: [...ev.messages, { role: "user", content: "added by hook" }] } },
        afterLLM: (ev) => { calls.push(["afterLLM", ev]) },
        beforeTool: () => { calls.push(["beforeTool"]) },
        afterTool: () => { calls.push(["afterTool"]) },
      },
    })
    const res = await c.translate({ messages: [{ role: "user", content: "1+1" }], toolkit: tk })
    assert.deepStrictEqual(calls.map((x) => x[0]), ["beforeLLM", "afterLLM"])
    const before = calls[0][1]
    const tools = style === "openai"
      ? [{ type: "function", function: { name: "add", description: "Add numbers", parameters: addSchema } }]
      : [{ name: "add", description: "Add numbers", input_schema: addSchema }]
    assert.deepStrictEqual(before, { messages: [{ role: "user", content: "1+1" }], tools, model: "hooked", turn: 0 })
    assert.deepStrictEqual(calls[1][1], { response: reply, model: "hooked", turn: 0 })
    assert.deepStrictEqual(llm.requests[0].json.messages, [{ role: "user", content: "1+1" }, { role: "user", content: "added by hook" }])
    assert.deepStrictEqual(res.toolCalls, [{ id: "k", name: "add", arguments: '{"a":1,"b":1}' }])
    assert.deepStrictEqual(ran, [])
    assert.deepStrictEqual(events.map(({ ms, ...rest }) => rest), [{ event: "llm", model: "hooked", status: "ok", promptTokens: 4, completionTokens: 2 }])
    assert.ok(c.metrics().includes('toolnexus_llm_requests_total{model="hooked",status="ok"} 1\n'))
    assert.ok(!c.metrics().includes("toolnexus_tool_calls_total{"))
  })
}

test("translate shares the loop's infrastructure: retries, requestParams, bodyTransform, errors, abort", async (t) => {
  const llm = await startLLM((req, i) => (i === 0 ? { status: 503, body: "busy" } : i === 3 ? { status: 400, body: "bad request" } : { body: oaResponse({ content: `reply ${i}` }) }))
  t.after(() => llm.close())
  const events = []
  const c = createClient({
    baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", retryBaseMs: 1,
    requestParams: { temperature: 0.2, max_tokens: 99 },
    bodyTransform: (body) => ({ ...body, user: "tenant-7" }),
    onMetric: (ev) => events.push(ev),
  })
  const msgs = [{ role: "user", content: "x" }]
  const first = await c.translate({ messages: msgs, maxTokens: 10 })
  assert.equal(first.text, "reply 1")
  assert.equal(llm.requests.length, 2, "the 503 was retried")
  assert.deepStrictEqual(llm.requests[1].json, { model: "m", messages: msgs, max_tokens: 99, temperature: 0.2, user: "tenant-7" })
  assert.equal(events.length, 1)
  assert.equal(events[0].attempts, 2)
  await c.translate({ messages: msgs })
  await assert.rejects(c.translate({ messages: msgs }), (e) => e instanceof Error && e.message === "LLM 400: bad request")
  assert.equal(events.at(-1).status, "error")
  assert.ok(events.every((e) => e.event === "llm"), "translate never emits a run event")

  const reason = new Error("caller aborted")
  const ac = new AbortController()
  ac.abort(reason)
  const before = llm.requests.length
  await assert.rejects(c.translate({ messages: msgs, signal: ac.signal }), (e) => e === reason)
  assert.equal(llm.requests.length, before)
})

test("Client.toolCallsJSON renders a result's calls as an OpenAI tool_calls array", () => {
  const res = {
    text: "",
    toolCalls: [{ id: "a1", name: "lookup", arguments: '{"q":"x"}' }, { id: "a2", name: "noop", arguments: "{}" }],
    finishReason: "tool_calls",
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    model: "m",
  }
  const out = Client.toolCallsJSON(res)
  assert.deepStrictEqual(out, [
    { id: "a1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } },
    { id: "a2", type: "function", function: { name: "noop", arguments: "{}" } },
  ])
  assert.equal(JSON.stringify(out[0]), '{"id":"a1","type":"function","function":{"name":"lookup","arguments":"{\\"q\\":\\"x\\"}"}}')
  assert.deepStrictEqual(Client.toolCallsJSON({ ...res, toolCalls: [] }), [])
})

test("translate output round-trips: toolCallsJSON of a result is what toolCallsOf reads back", async (t) => {
  const llm = await startLLM([{ body: { content: [{ type: "tool_use", id: "r1", name: "get_weather", input: { city: "Rome", days: [1, 2] } }], stop_reason: "tool_use" } }])
  t.after(() => llm.close())
  const res = await createClient({ baseUrl: llm.url, style: "anthropic", model: "c", apiKey: "k" }).translate({ messages: [{ role: "user", content: "Rome?" }] })
  const assistant = { role: "assistant", content: null, tool_calls: Client.toolCallsJSON(res) }
  assert.deepStrictEqual(toolCallsOf(assistant), res.toolCalls)
  assert.deepStrictEqual(openAIMessagesToAnthropic([assistant]).messages, [
    { role: "assistant", content: [{ type: "tool_use", id: "r1", name: "get_weather", input: { city: "Rome", days: [1, 2] } }] },
  ])
})

// ---------------------------------------------------------------------------------------------
// The exported helpers
// ---------------------------------------------------------------------------------------------

test("finishReasonFor: tool calls win; max_tokens/length → length; refusal/content_filter → content_filter; else stop", () => {
  const cases = [
    [[true], "tool_calls"],
    [[true, "max_tokens"], "tool_calls"],
    [[true, "refusal"], "tool_calls"],
    [[false, "max_tokens"], "length"],
    [[false, "length"], "length"],
    [[false, "refusal"], "content_filter"],
    [[false, "content_filter"], "content_filter"],
    [[false, "end_turn"], "stop"],
    [[false, "tool_use"], "stop"],
    [[false, "stop_sequence"], "stop"],
    [[false, ""], "stop"],
    [[false], "stop"],
  ]
  assert.deepStrictEqual(cases.map(([args]) => finishReasonFor(...args)), cases.map(([, want]) => want))
})

test("contentText: strings as they are, parts arrays joined by their text, anything else empty", () => {
  const cases = [
    ["plain words", "plain words"],
    ["", ""],
    [[{ type: "text", text: "a" }, { type: "image_url", image_url: { url: "http://x/y.png" } }, { type: "text", text: "b" }], "ab"],
    [[null, 7, "bare string", { text: 5 }, { type: "text", text: "kept" }, { text: "" }], "kept"],
    [[], ""],
    [null, ""],
    [undefined, ""],
    [42, ""],
    [{ text: "not a list" }, ""],
  ]
  assert.deepStrictEqual(cases.map(([input]) => contentText(input)), cases.map(([, want]) => want))
})

test("argsObject: objects as they are, JSON object/array strings parsed, anything else {}", () => {
  const cases = [
    [{ a: 1, nested: { b: [true] } }, { a: 1, nested: { b: [true] } }],
    [[1, 2], [1, 2]],
    ['{"a":1}', { a: 1 }],
    ['  {"b": [true, null]}  ', { b: [true, null] }],
    ["[3]", [3]],
    ["", {}],
    ["   ", {}],
    ["{broken", {}],
    ["null", {}],
    ['"just a string"', {}],
    ["42", {}],
    ["true", {}],
    [null, {}],
    [undefined, {}],
    [0, {}],
    [true, {}],
  ]
  for (const [input, want] of cases) assert.deepStrictEqual(argsObject(input), want, JSON.stringify(input) ?? "undefined")
  // An object (or array) is handed back as the very same value.
  const given = { a: 1 }
  const list = [1]
  assert.equal(argsObject(given), given)
  assert.equal(argsObject(list), list)
})

test("argsString: strings verbatim (even invalid or empty), objects JSON-encoded in key order, anything else \"{}\"", () => {
  const cases = [
    ['{"city": "Paris"}', '{"city": "Paris"}'],
    ["not json at all", "not json at all"],
    ["", ""],
    [{ z: 1, a: "two", m: [1, { k: null }] }, '{"z":1,"a":"two","m":[1,{"k":null}]}'],
    [{ "clé": "übung", emoji: "🙂" }, '{"clé":"übung","emoji":"🙂"}'],
    [[1, "2"], '[1,"2"]'],
    [{}, "{}"],
    [{ n: 1.5, big: 12345678901234567000, tiny: 0.000001, huge: 1e21, small: 1e-7 }, '{"n":1.5,"big":12345678901234567000,"tiny":0.000001,"huge":1e+21,"small":1e-7}'],
    // Every double keeps its exact value: the shortest digits that read back to the same number.
    [{ p: 0.1 + 0.2, q: 0.9936818606567697, r: 123456789.12345679, s: 92808847884.30011 }, '{"p":0.30000000000000004,"q":0.9936818606567697,"r":123456789.12345679,"s":92808847884.30011}'],
    [null, "{}"],
    [undefined, "{}"],
    [5, "{}"],
    [false, "{}"],
  ]
  assert.deepStrictEqual(cases.map(([input]) => argsString(input)), cases.map(([, want]) => want))
})

test("toolCallsOf: reads tool_calls with a function, stringifying id/name and encoding arguments", () => {
  const message = {
    role: "assistant",
    tool_calls: [
      { id: "a", type: "function", function: { name: "f", arguments: '{"x":1}' } },
      { id: 7, function: { name: "g", arguments: { y: 2 } } },
      { function: {} },
      { id: "no-function" },
      null,
      { id: null, function: { name: null, arguments: "" } },
      { id: true, function: { name: 5 } },
    ],
  }
  assert.deepStrictEqual(toolCallsOf(message), [
    { id: "a", name: "f", arguments: '{"x":1}' },
    { id: "7", name: "g", arguments: '{"y":2}' },
    { id: "", name: "", arguments: "{}" },
    { id: "", name: "", arguments: "" },
    { id: "true", name: "5", arguments: "{}" },
  ])
  assert.deepStrictEqual(Object.keys(toolCallsOf(message)[0]), ["id", "name", "arguments"])
  for (const m of [undefined, null, {}, { tool_calls: "nope" }, { tool_calls: {} }, { role: "assistant", content: "hi" }]) {
    assert.deepStrictEqual(toolCallsOf(m), [])
  }
})

test("openAIMessagesToAnthropic: a full exchange — system/developer hoisted, tool_use blocks, consecutive results merged", () => {
  const out = openAIMessagesToAnthropic([
    { role: "system", content: "Rule one." },
    { role: "developer", content: [{ type: "text", text: "Rule " }, { type: "text", text: "two." }] },
    { role: "user", content: "Plan a trip" },
    {
      role: "assistant",
      content: "Looking up.",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "flights", arguments: '{"to":"NRT"}' } },
        { id: "c2", type: "function", function: { name: "hotels", arguments: { city: "Tokyo" } } },
      ],
    },
    { role: "tool", tool_call_id: "c1", content: "JL5" },
    { role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "Park " }, { type: "text", text: "Hyatt" }] },
    { role: "assistant", content: [{ type: "text", text: "Booked." }] },
    { role: "user", content: [{ type: "text", text: "thanks " }, { type: "image_url", image_url: { url: "u" } }, { type: "text", text: "a lot" }] },
  ])
  assert.deepStrictEqual(out, {
    messages: [
      { role: "user", content: "Plan a trip" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Looking up." },
          { type: "tool_use", id: "c1", name: "flights", input: { to: "NRT" } },
          { type: "tool_use", id: "c2", name: "hotels", input: { city: "Tokyo" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", content: "JL5", tool_use_id: "c1" },
          { type: "tool_result", content: "Park Hyatt", tool_use_id: "c2" },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "Booked." }] },
      { role: "user", content: "thanks a lot" },
    ],
    system: "Rule one.\n\nRule two.",
  })
  assert.deepStrictEqual(Object.keys(out), ["messages", "system"])
  assert.equal(JSON.stringify(out.messages[2].content[0]), '{"type":"tool_result","content":"JL5","tool_use_id":"c1"}')
  assert.equal(JSON.stringify(out.messages[1].content[1]), '{"type":"tool_use","id":"c1","name":"flights","input":{"to":"NRT"}}')
})

test("openAIMessagesToAnthropic: odd entries — skipped junk, orphan results, empty turns, non-text user parts, default role", () => {
  const out = openAIMessagesToAnthropic([
    null,
    "junk",
    5,
    { role: "tool", content: "orphan result" },
    { role: "function", tool_call_id: "f1", content: "legacy" },
    { role: "system", content: "" },
    { role: "assistant", content: "" },
    { role: "assistant", content: null, tool_calls: [] },
    { role: "user", content: "" },
    { role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] },
    { role: "user", content: [] },
    { content: "no role given" },
    { role: "assistant", tool_calls: [{ id: "z", function: { name: "zap", arguments: "{broken" } }] },
    { role: "tool", tool_call_id: 7, content: null },
  ])
  assert.deepStrictEqual(out, {
    messages: [
      { role: "user", content: [{ type: "tool_result", content: "orphan result" }, { type: "tool_result", content: "legacy", tool_use_id: "f1" }] },
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] },
      { role: "user", content: "no role given" },
      { role: "assistant", content: [{ type: "tool_use", id: "z", name: "zap", input: {} }] },
      { role: "user", content: [{ type: "tool_result", content: "", tool_use_id: "7" }] },
    ],
    system: "",
  })
})

test("openAIMessagesToAnthropic: results before a user turn are their own turn; empty input gives nothing", () => {
  assert.deepStrictEqual(
    openAIMessagesToAnthropic([{ role: "tool", tool_call_id: "a", content: "1" }, { role: "user", content: "next" }, { role: "tool", tool_call_id: "b", content: "2" }]),
    {
      messages: [
        { role: "user", content: [{ type: "tool_result", content: "1", tool_use_id: "a" }] },
        { role: "user", content: "next" },
        { role: "user", content: [{ type: "tool_result", content: "2", tool_use_id: "b" }] },
      ],
      system: "",
    },
  )
  assert.deepStrictEqual(openAIMessagesToAnthropic([]), { messages: [], system: "" })
  assert.deepStrictEqual(openAIMessagesToAnthropic(undefined), { messages: [], system: "" })
  assert.deepStrictEqual(openAIMessagesToAnthropic([{ role: "system", content: "only" }]), { messages: [], system: "only" })
})

test("openAIToolsToAnthropic: function tools converted, native ones kept, unusable ones skipped", () => {
  const params = { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
  const native = { name: "native_tool", description: "already anthropic", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } }
  const out = openAIToolsToAnthropic([
    { type: "function", function: { name: "search", description: "Search the web", parameters: params } },
    { type: "function", function: { name: "bare" } },
    { type: "function", function: { name: "quiet", description: "", parameters: { type: "object" } } },
    { type: "function", function: { description: "nameless" } },
    native,
    { type: "function" },
    null,
    "string entry",
  ])
  assert.deepStrictEqual(out, [
    { name: "search", description: "Search the web", input_schema: params },
    { name: "bare", input_schema: { type: "object", properties: {} } },
    { name: "quiet", input_schema: { type: "object" } },
    native,
  ])
  assert.deepStrictEqual(Object.keys(out[0]), ["name", "description", "input_schema"])
  assert.deepStrictEqual(openAIToolsToAnthropic(undefined), [])
  assert.deepStrictEqual(openAIToolsToAnthropic([]), [])
})

test("openAIToolChoiceToAnthropic: required/any → any, none → none, a named function → tool, the rest undefined", () => {
  const cases = [
    ["required", { type: "any" }],
    ["any", { type: "any" }],
    ["none", { type: "none" }],
    ["auto", undefined],
    ["something else", undefined],
    [{ type: "function", function: { name: "pick" } }, { type: "tool", name: "pick" }],
    [{ function: { name: "" } }, undefined],
    [{ type: "tool", name: "already_native" }, undefined],
    [{}, undefined],
    [undefined, undefined],
    [null, undefined],
    [3, undefined],
  ]
  assert.deepStrictEqual(cases.map(([input]) => openAIToolChoiceToAnthropic(input)), cases.map(([, want]) => want))
})

test("hasSystemMessage: true only for a system or developer role", () => {
  const cases = [
    [[], false],
    [undefined, false],
    [[{ role: "user", content: "x" }], false],
    [[{ role: "user" }, { role: "system", content: "s" }], true],
    [[{ role: "developer", content: "d" }], true],
    [[null, { role: "assistant" }], false],
    [[{ role: "System" }], false],
  ]
  assert.deepStrictEqual(cases.map(([input]) => hasSystemMessage(input)), cases.map(([, want]) => want))
})
