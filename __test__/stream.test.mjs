// SPEC §8 Streaming: client.stream() over real event streams (built-in HTTP and a user fetch).
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createInProcessClient, createToolkit, defineTool, pending } from "../index.js"
import {
  startLLM, sse, SSE_DONE, oaChunk, oaDeltaText, oaDeltaTools, oaUsageChunk, deferred, within,
} from "./support/llm.mjs"

const openai = (url, extra = {}) => createClient({ baseUrl: url, style: "openai", model: "stream-m", apiKey: "k-1", ...extra })
const anthropic = (url, extra = {}) => createClient({ baseUrl: url, style: "anthropic", model: "claude-s", apiKey: "k-2", ...extra })

/** Drain a stream into an array of events. */
async function collect(iterable) {
  const out = []
  for await (const ev of iterable) out.push(ev)
  return out
}

const textStream = (...deltas) => ({ sse: [...deltas.map((d) => sse(oaDeltaText(d))), sse(oaUsageChunk(1, 1)), SSE_DONE] })

/** A user fetch answering from a list of SSE frame lists; every body is a ReadableStream of bytes. */
function streamingFetch(turns, calls = []) {
  return async (url, init) => {
    calls.push({ url, init })
    const frames = turns[Math.min(calls.length - 1, turns.length - 1)]
    const bytes = new TextEncoder().encode(frames.join(""))
    // Cut the body at awkward places, including inside multi-byte characters.
    const cuts = [0]
    for (let i = 7; i < bytes.length; i += 13) cuts.push(i)
    cuts.push(bytes.length)
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i + 1 < cuts.length; i++) controller.enqueue(bytes.slice(cuts[i], cuts[i + 1]))
        controller.close()
      },
    })
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } })
  }
}

// ---------------------------------------------------------------------------------------------
// OpenAI style
// ---------------------------------------------------------------------------------------------

test("openai stream: text deltas in order, then usage, then done carrying the RunResult", async (t) => {
  const llm = await startLLM([{
    sse: [
      sse(oaChunk({ role: "assistant" })), // a role-only delta is not text
      ": keep-alive comment line\n\n",
      "event: message\n",
      sse(oaDeltaText("Sun")),
      sse(oaDeltaText("rise at ")),
      sse(oaDeltaText("")), // empty content: no event
      sse(oaDeltaText("06:12")),
      "data: {this is not json}\n\n", // ignored
      sse(oaUsageChunk(7, 3)),
      SSE_DONE,
      sse(oaDeltaText(" (after DONE, never read)")),
    ],
  }])
  t.after(() => llm.close())
  const events = await collect(openai(llm.url).stream("When is sunrise?", { toolkit: await createToolkit({ builtins: false }) }))
  const usage = { promptTokens: 7, completionTokens: 3, totalTokens: 10 }
  assert.deepStrictEqual(events, [
    { type: "text", delta: "Sun" },
    { type: "text", delta: "rise at " },
    { type: "text", delta: "06:12" },
    { type: "usage", usage },
    {
      type: "done",
      result: {
        text: "Sunrise at 06:12",
        messages: [{ role: "user", content: "When is sunrise?" }, { role: "assistant", content: "Sunrise at 06:12" }],
        toolCalls: [],
        toolCallCount: 0,
        turns: 1,
        usage,
        model: "stream-m",
        status: "done",
      },
    },
  ])
  assert.equal(llm.requests.length, 1)
  const body = llm.requests[0].json
  assert.deepStrictEqual(Object.keys(body), ["model", "messages", "stream", "stream_options"])
  assert.equal(body.stream, true)
  assert.deepStrictEqual(body.stream_options, { include_usage: true })
})

test("openai stream: two tool calls fragmented over many interleaved deltas are reassembled exactly", async (t) => {
  // Arguments with odd spacing, so any re-encoding would show; each split into 6+ fragments.
  const argsA = '{"city": "Lyon",  "days":3, "units":["metric","kelvin"], "note":"a \\"quoted\\" word"}'
  const argsB = '{ "amount" : 12.5 , "from":"EUR","to":"JPY" }'
  const fa = ['{"city": ', '"Lyon",  ', '"days":3, "un', 'its":["metric","kel', 'vin"], "note":"a \\"quo', 'ted\\" word"}']
  const fb = ['{ "amo', 'unt" : 1', "2.5 , ", '"from":"E', 'UR","to":', '"JPY" }']
  assert.equal(fa.join(""), argsA)
  assert.equal(fb.join(""), argsB)
  const firstTurn = [
    sse(oaDeltaText("Checking")),
    sse(oaDeltaTools([{ index: 0, id: "call_A", name: "look", args: "" }])),
    sse(oaDeltaTools([{ index: 0, name: "up", args: fa[0] }])),
    sse(oaDeltaTools([{ index: 1, id: "call_B", name: "conv", args: fb[0] }])),
    sse(oaDeltaTools([{ index: 0, args: fa[1] }, { index: 1, name: "ert", args: fb[1] }])),
    sse(oaDeltaTools([{ index: 1, args: fb[2] }])),
    sse(oaDeltaTools([{ index: 0, args: fa[2] }])),
    sse(oaDeltaTools([{ index: 1, args: fb[3] }, { index: 0, args: fa[3] }])),
    sse(oaDeltaTools([{ index: 0, args: fa[4] }])),
    sse(oaDeltaTools([{ index: 1, args: fb[4] }])),
    sse(oaDeltaTools([{ index: 0, args: fa[5] }, { index: 1, args: fb[5] }])),
    sse(oaChunk({}, { usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 } })),
    SSE_DONE,
  ]
  const llm = await startLLM((req, i) =>
    i === 0 ? { sse: firstTurn } : { sse: [sse(oaDeltaText("All set.")), sse(oaUsageChunk(40, 2)), SSE_DONE] },
  )
  t.after(() => llm.close())
  const received = []
  const tk = await createToolkit({
    extraTools: [
      defineTool({ name: "lookup", description: "", run: (a) => { received.push(["lookup", a]); return "forecast: mild" } }),
      defineTool({ name: "convert", description: "", run: (a) => { received.push(["convert", a]); return "1987 JPY" } }),
    ],
  })
  const events = await collect(openai(llm.url).stream("Plan my trip", { toolkit: tk }))
  const objA = JSON.parse(argsA)
  const objB = JSON.parse(argsB)
  assert.deepStrictEqual(received.sort((x, y) => x[0].localeCompare(y[0])), [["convert", objB], ["lookup", objA]])
  assert.deepStrictEqual(events.slice(0, -1), [
    { type: "text", delta: "Checking" },
    { type: "tool_call", id: "call_A", name: "lookup", args: objA },
    { type: "tool_call", id: "call_B", name: "convert", args: objB },
    { type: "tool_result", id: "call_A", name: "lookup", output: "forecast: mild", isError: false },
    { type: "tool_result", id: "call_B", name: "convert", output: "1987 JPY", isError: false },
    { type: "text", delta: "All set." },
    { type: "usage", usage: { promptTokens: 60, completionTokens: 11, totalTokens: 71 } },
  ])
  const result = events.at(-1).result
  const assistant = {
    role: "assistant",
    content: "Checking",
    tool_calls: [
      { id: "call_A", type: "function", function: { name: "lookup", arguments: argsA } },
      { id: "call_B", type: "function", function: { name: "convert", arguments: argsB } },
    ],
  }
  assert.deepStrictEqual(result.messages, [
    { role: "user", content: "Plan my trip" },
    assistant,
    { role: "tool", tool_call_id: "call_A", content: "forecast: mild" },
    { role: "tool", tool_call_id: "call_B", content: "1987 JPY" },
    { role: "assistant", content: "All set." },
  ])
  assert.equal(result.messages[1].tool_calls[0].function.arguments, argsA, "the exact concatenated string is kept")
  assert.deepStrictEqual(result.toolCalls, [
    { name: "lookup", args: objA, output: "forecast: mild", isError: false, metadata: undefined },
    { name: "convert", args: objB, output: "1987 JPY", isError: false, metadata: undefined },
  ])
  assert.equal(result.turns, 2)
  assert.equal(result.text, "All set.")
  // The second request carries the reassembled assistant turn byte-for-byte.
  assert.deepStrictEqual(llm.requests[1].json.messages.slice(1, 2), [assistant])
})

test("openai stream: a tool turn with no text records content null", async (t) => {
  const llm = await startLLM((req, i) =>
    i === 0
      ? { sse: [sse(oaDeltaTools([{ index: 0, id: "t1", name: "ping", args: "{}" }])), SSE_DONE] }
      : textStream("pong"),
  )
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "ping", description: "", run: () => "pong!" })] })
  const events = await collect(openai(llm.url).stream("ping it", { toolkit: tk }))
  assert.deepStrictEqual(events.at(-1).result.messages[1], {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "t1", type: "function", function: { name: "ping", arguments: "{}" } }],
  })
})

// ---------------------------------------------------------------------------------------------
// Anthropic style
// ---------------------------------------------------------------------------------------------

const an = {
  start: (input, output = 1) => sse({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], usage: { input_tokens: input, output_tokens: output } } }),
  textBlock: (index) => sse({ type: "content_block_start", index, content_block: { type: "text", text: "" } }),
  toolBlock: (index, id, name) => sse({ type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } }),
  text: (index, text) => sse({ type: "content_block_delta", index, delta: { type: "text_delta", text } }),
  json: (index, partial_json) => sse({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } }),
  stop: (index) => sse({ type: "content_block_stop", index }),
  delta: (stop_reason, output_tokens) => sse({ type: "message_delta", delta: { stop_reason, stop_sequence: null }, usage: { output_tokens } }),
  end: () => sse({ type: "message_stop" }),
  ping: () => "event: ping\n" + sse({ type: "ping" }),
}

test("anthropic stream: text turn — message_start usage, text deltas, message_delta usage", async (t) => {
  const llm = await startLLM([{
    sse: [an.start(11), an.ping(), an.textBlock(0), an.text(0, "Bon"), an.text(0, "jour"), an.text(0, " !"), an.stop(0), an.delta("end_turn", 5), an.end()],
  }])
  t.after(() => llm.close())
  const events = await collect(anthropic(llm.url).stream("Say hello in French", { toolkit: await createToolkit({ builtins: false }) }))
  const usage = { promptTokens: 11, completionTokens: 6, totalTokens: 17 }
  assert.deepStrictEqual(events, [
    { type: "text", delta: "Bon" },
    { type: "text", delta: "jour" },
    { type: "text", delta: " !" },
    { type: "usage", usage },
    {
      type: "done",
      result: {
        text: "Bonjour !",
        messages: [{ role: "user", content: "Say hello in French" }, { role: "assistant", content: [{ type: "text", text: "Bonjour !" }] }],
        toolCalls: [],
        toolCallCount: 0,
        turns: 1,
        usage,
        model: "claude-s",
        status: "done",
      },
    },
  ])
  assert.equal(llm.requests[0].path, "/v1/messages")
  assert.deepStrictEqual(llm.requests[0].json, {
    model: "claude-s",
    max_tokens: 4096,
    system: "",
    messages: [{ role: "user", content: "Say hello in French" }],
    stream: true,
  })
})

test("anthropic stream: tool turn — input_json_delta fragments reassembled, stop_reason tool_use runs the tool", async (t) => {
  const input = '{"city": "Oslo", "hours": [6, 12, 18], "detail": {"wind": true}}'
  const frags = ['{"ci', 'ty": "Os', 'lo", "hours": [6', ", 12, 1", '8], "detail": {"wi', 'nd": true}}']
  assert.equal(frags.join(""), input)
  const first = [
    an.start(30),
    an.textBlock(0), an.text(0, "Let me "), an.text(0, "check."), an.stop(0),
    an.toolBlock(1, "toolu_9", "forecast"),
    ...frags.map((f) => an.json(1, f)),
    an.stop(1),
    an.delta("tool_use", 12),
    an.end(),
  ]
  const second = [an.start(50, 0), an.textBlock(0), an.text(0, "Windy in Oslo."), an.stop(0), an.delta("end_turn", 4), an.end()]
  const llm = await startLLM((req, i) => ({ sse: i === 0 ? first : second }))
  t.after(() => llm.close())
  const got = []
  const tk = await createToolkit({ extraTools: [defineTool({ name: "forecast", description: "", run: (a) => { got.push(a); return "wind 40km/h" } })] })
  const events = await collect(anthropic(llm.url).stream("Weather?", { toolkit: tk }))
  const args = JSON.parse(input)
  assert.deepStrictEqual(got, [args])
  assert.deepStrictEqual(events.slice(0, -1), [
    { type: "text", delta: "Let me " },
    { type: "text", delta: "check." },
    { type: "tool_call", id: "toolu_9", name: "forecast", args },
    { type: "tool_result", id: "toolu_9", name: "forecast", output: "wind 40km/h", isError: false },
    { type: "text", delta: "Windy in Oslo." },
    { type: "usage", usage: { promptTokens: 80, completionTokens: 17, totalTokens: 97 } },
  ])
  const result = events.at(-1).result
  assert.deepStrictEqual(result.messages, [
    { role: "user", content: "Weather?" },
    { role: "assistant", content: [{ type: "text", text: "Let me check." }, { type: "tool_use", id: "toolu_9", name: "forecast", input: args }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_9", content: "wind 40km/h", is_error: false }] },
    { role: "assistant", content: [{ type: "text", text: "Windy in Oslo." }] },
  ])
  assert.equal(result.text, "Windy in Oslo.")
  assert.deepStrictEqual(llm.requests[1].json.messages, result.messages.slice(0, 3))
})

test("anthropic stream: a tool_use block without stop_reason tool_use ends the run without running it", async (t) => {
  const llm = await startLLM([{
    sse: [an.start(3), an.textBlock(0), an.text(0, "partial"), an.toolBlock(1, "toolu_x", "never"), an.json(1, '{"a":'), an.delta("max_tokens", 2), an.end()],
  }])
  t.after(() => llm.close())
  let ran = false
  const tk = await createToolkit({ extraTools: [defineTool({ name: "never", description: "", run: () => { ran = true; return "" } })] })
  const events = await collect(anthropic(llm.url).stream("go", { toolkit: tk }))
  assert.equal(ran, false)
  assert.deepStrictEqual(events.map((e) => e.type), ["text", "usage", "done"])
  const result = events.at(-1).result
  assert.equal(result.status, "done")
  assert.equal(result.text, "partial")
  // The unfinished JSON becomes an empty input.
  assert.deepStrictEqual(result.messages[1].content, [{ type: "text", text: "partial" }, { type: "tool_use", id: "toolu_x", name: "never", input: {} }])
  assert.equal(llm.requests.length, 1)
})

// ---------------------------------------------------------------------------------------------
// Suspension
// ---------------------------------------------------------------------------------------------

const suspendingTurn = { sse: [sse(oaDeltaTools([{ index: 0, id: "c-1", name: "deploy", args: '{"env":"prod"}' }])), sse(oaUsageChunk(2, 1)), SSE_DONE] }

test("stream: the pending event reaches the consumer before waitFor runs; tool_result follows", async (t) => {
  const llm = await startLLM((req, i) => (i === 0 ? suspendingTurn : textStream("Deployed.")))
  t.after(() => llm.close())
  const log = []
  const deploy = defineTool({
    name: "deploy",
    description: "",
    run: (args, ctx) => {
      if (ctx?.answer) {
        log.push("tool:retry")
        return `deployed to ${args.env} by ${ctx.answer.data.by}`
      }
      log.push("tool:first")
      return pending({ id: "req-7", kind: "approval", prompt: "Deploy to prod?", data: { env: args.env } })
    },
  })
  let asked
  const c = openai(llm.url, {
    waitFor: async (request) => {
      log.push("waitFor")
      asked = request
      return { id: request.id, ok: true, data: { by: "ops" } }
    },
  })
  const events = []
  for await (const ev of c.stream("ship it", { toolkit: await createToolkit({ extraTools: [deploy] }) })) {
    events.push(ev)
    log.push(`saw:${ev.type}`)
    if (ev.type === "pending") {
      // The consumer takes its time; waitFor must not start before it asks for the next event.
      await new Promise((r) => setTimeout(r, 40))
      log.push("consumer:handled-pending")
    }
  }
  assert.deepStrictEqual(log, [
    "saw:tool_call", "tool:first", "saw:pending", "consumer:handled-pending", "waitFor", "tool:retry",
    "saw:tool_result", "saw:text", "saw:usage", "saw:done",
  ])
  const request = { kind: "approval", prompt: "Deploy to prod?", data: { env: "prod" }, id: "req-7" }
  assert.deepStrictEqual(events.find((e) => e.type === "pending"), { type: "pending", request })
  assert.deepStrictEqual(asked, request)
  assert.deepStrictEqual(events.find((e) => e.type === "tool_result"), {
    type: "tool_result", id: "c-1", name: "deploy", output: "deployed to prod by ops", isError: false,
  })
  const result = events.at(-1).result
  assert.equal(result.status, "done")
  assert.equal(result.text, "Deployed.")
})

test("stream without waitFor: pending, then done with status pending — no tool_result, no second request", async (t) => {
  const llm = await startLLM((req, i) => (i === 0 ? suspendingTurn : textStream("unexpected")))
  t.after(() => llm.close())
  const tool = defineTool({ name: "deploy", description: "", run: () => pending({ id: "req-8", kind: "approval", prompt: "Deploy to prod?" }) })
  const events = await collect(openai(llm.url).stream("ship it", { toolkit: await createToolkit({ extraTools: [tool] }) }))
  const request = { kind: "approval", prompt: "Deploy to prod?", id: "req-8" }
  assert.deepStrictEqual(events.map((e) => e.type), ["tool_call", "pending", "done"])
  assert.deepStrictEqual(events[1], { type: "pending", request })
  const result = events[2].result
  assert.equal(result.status, "pending")
  assert.deepStrictEqual(result.pending, request)
  assert.equal(result.text, "Deploy to prod?")
  assert.deepStrictEqual(result.toolCalls, [{ name: "deploy", args: { env: "prod" }, output: "Deploy to prod?", isError: true, metadata: undefined }])
  assert.deepStrictEqual(result.messages.at(-1), { role: "tool", tool_call_id: "c-1", content: "Deploy to prod?" })
  assert.equal(llm.requests.length, 1)
})

// ---------------------------------------------------------------------------------------------
// A user fetch whose Response body is a ReadableStream
// ---------------------------------------------------------------------------------------------

test("stream through a user fetch: a ReadableStream body, cut mid-character, with a fragmented tool call", async () => {
  const calls = []
  const fetch = streamingFetch([
    [
      sse(oaDeltaText("Café ")),
      sse(oaDeltaTools([{ index: 0, id: "f1", name: "men", args: '{"dish":' }])),
      sse(oaDeltaTools([{ index: 0, name: "u", args: ' "crème ' }])),
      sse(oaDeltaTools([{ index: 0, args: 'brûlée"}' }])),
      sse(oaUsageChunk(4, 2)),
      SSE_DONE,
    ],
    [sse(oaDeltaText("Voilà — ")), sse(oaDeltaText("served ☕")), sse(oaUsageChunk(6, 3)), SSE_DONE],
  ], calls)
  const got = []
  const tk = await createToolkit({ extraTools: [defineTool({ name: "menu", description: "", run: (a) => { got.push(a); return "in stock" } })] })
  const c = createClient({ baseUrl: "http://llm.invalid/v1", style: "openai", model: "f-m", apiKey: "k", fetch })
  const events = await collect(c.stream("dessert?", { toolkit: tk }))
  assert.deepStrictEqual(got, [{ dish: "crème brûlée" }])
  assert.deepStrictEqual(events.slice(0, -1), [
    { type: "text", delta: "Café " },
    { type: "tool_call", id: "f1", name: "menu", args: { dish: "crème brûlée" } },
    { type: "tool_result", id: "f1", name: "menu", output: "in stock", isError: false },
    { type: "text", delta: "Voilà — " },
    { type: "text", delta: "served ☕" },
    { type: "usage", usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 } },
  ])
  const result = events.at(-1).result
  assert.equal(result.text, "Voilà — served ☕")
  assert.equal(result.messages[1].tool_calls[0].function.arguments, '{"dish": "crème brûlée"}')
  assert.equal(calls.length, 2)
  assert.equal(calls[0].url, "http://llm.invalid/v1/chat/completions")
  assert.equal(calls[0].init.method, "POST")
  assert.equal(JSON.parse(calls[0].init.body).stream, true)
})

// ---------------------------------------------------------------------------------------------
// Liveness: events reach the consumer while the endpoint is still writing
// ---------------------------------------------------------------------------------------------

test("liveness (built-in HTTP): the first text event arrives while the endpoint is still holding the stream open", { timeout: 5000 }, async (t) => {
  const gate = deferred()
  const llm = await startLLM([{
    respond: async (res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(sse(oaDeltaText("first")))
      // The rest is only written once the consumer has seen "first": a client that buffers the
      // whole body before emitting anything can never get here.
      await gate.promise
      res.write(sse(oaDeltaText(" second")))
      res.write(sse(oaUsageChunk(1, 2)))
      res.end(SSE_DONE)
    },
  }])
  t.after(async () => {
    gate.resolve()
    await llm.close()
  })
  const texts = []
  let done
  for await (const ev of openai(llm.url).stream("go", { toolkit: await createToolkit({}) })) {
    if (ev.type === "text") {
      texts.push(ev.delta)
      gate.resolve()
    }
    if (ev.type === "done") done = ev.result
  }
  assert.deepStrictEqual(texts, ["first", " second"])
  assert.equal(done.text, "first second")
})

test("liveness (user fetch): the first text event arrives before the ReadableStream is finished", { timeout: 5000 }, async (t) => {
  const gate = deferred()
  t.after(() => gate.resolve())
  const enc = new TextEncoder()
  const fetch = async () =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(enc.encode(sse(oaDeltaText("early"))))
          gate.promise.then(() => {
            controller.enqueue(enc.encode(sse(oaDeltaText(" late"))))
            controller.enqueue(enc.encode(SSE_DONE))
            controller.close()
          })
        },
      }),
      { status: 200, headers: { "content-type": "text/event-stream" } },
    )
  const c = createClient({ baseUrl: "http://llm.invalid", style: "openai", model: "m", apiKey: "k", fetch })
  const texts = []
  let done
  for await (const ev of c.stream("go", { toolkit: await createToolkit({}) })) {
    if (ev.type === "text") {
      texts.push(ev.delta)
      gate.resolve()
    }
    if (ev.type === "done") done = ev.result
  }
  assert.deepStrictEqual(texts, ["early", " late"])
  assert.equal(done.text, "early late")
})

// ---------------------------------------------------------------------------------------------
// Stopping, memory and errors
// ---------------------------------------------------------------------------------------------

test("breaking out of for-await stops the run: the tool never runs and no further request is made", { timeout: 5000 }, async (t) => {
  const llm = await startLLM((req, i) =>
    i === 0
      ? { sse: [sse(oaDeltaText("thinking")), sse(oaDeltaTools([{ index: 0, id: "x1", name: "side_effect", args: "{}" }])), SSE_DONE] }
      : textStream("should never be asked"),
  )
  t.after(() => llm.close())
  let ran = 0
  const tk = await createToolkit({ extraTools: [defineTool({ name: "side_effect", description: "", run: () => { ran++; return "did it" } })] })
  const seen = []
  for await (const ev of openai(llm.url).stream("go", { toolkit: tk })) {
    seen.push(ev)
    break
  }
  assert.deepStrictEqual(seen, [{ type: "text", delta: "thinking" }])
  await new Promise((r) => setTimeout(r, 200))
  assert.equal(ran, 0, "the tool must not run after the consumer stopped")
  assert.equal(llm.requests.length, 1)
})

test("stream with an id loads the thread first and saves it before done is yielded", async (t) => {
  const llm = await startLLM((req, i) => textStream(`reply ${i + 1}`))
  t.after(() => llm.close())
  const log = []
  const backing = new Map()
  const store = {
    async get(id) { log.push(`get:${id}`); return backing.get(id) },
    async save(id, messages) { log.push(`save:${id}:${messages.length}`); backing.set(id, messages) },
  }
  const c = openai(llm.url, { store })
  const tk = await createToolkit({})
  for await (const ev of c.stream("one", { toolkit: tk, id: "th-1" })) {
    log.push(`saw:${ev.type}`)
    if (ev.type === "done") assert.deepStrictEqual(backing.get("th-1"), ev.result.messages, "already saved when done arrives")
  }
  assert.deepStrictEqual(log, ["get:th-1", "saw:text", "saw:usage", "save:th-1:2", "saw:done"])
  const second = await collect(c.stream("two", { toolkit: tk, id: "th-1" }))
  assert.deepStrictEqual(llm.requests[1].json.messages, [
    { role: "user", content: "one" },
    { role: "assistant", content: "reply 1" },
    { role: "user", content: "two" },
  ])
  assert.equal(second.at(-1).result.messages.length, 4)

  // The default store: readable through conversationStore() by the time done is seen.
  const plain = openai(llm.url)
  for await (const ev of plain.stream("three", { toolkit: tk, id: "th-2" })) {
    if (ev.type === "done") assert.deepStrictEqual(await plain.conversationStore().get("th-2"), ev.result.messages)
  }
  // Without an id nothing is loaded or saved.
  const before = log.length
  await collect(c.stream("anon", { toolkit: tk }))
  assert.equal(log.length, before)
})

test("stream: a 500 with retries: 0 makes the iterator throw LLM 500: <body>", async (t) => {
  const llm = await startLLM([{ status: 500, body: "upstream exploded" }])
  t.after(() => llm.close())
  const seen = []
  await assert.rejects(
    (async () => { for await (const ev of openai(llm.url, { retries: 0 }).stream("hi", { toolkit: await createToolkit({}) })) seen.push(ev) })(),
    (e) => e instanceof Error && e.message === "LLM 500: upstream exploded",
  )
  assert.deepStrictEqual(seen, [])
  assert.equal(llm.requests.length, 1)
})

test("stream: an already-aborted signal throws its reason before any request", async (t) => {
  const llm = await startLLM([textStream("never")])
  t.after(() => llm.close())
  const reason = new Error("caller gave up")
  const ac = new AbortController()
  ac.abort(reason)
  await assert.rejects(collect(openai(llm.url).stream("hi", { toolkit: await createToolkit({}), signal: ac.signal })), (e) => e === reason)
  assert.equal(llm.requests.length, 0)
})

test("stream: aborting while the request is in flight makes the iterator throw signal.reason", { timeout: 5000 }, async (t) => {
  const llm = await startLLM(() => ({ hang: true }))
  t.after(() => llm.close())
  const ac = new AbortController()
  const reason = new RangeError("user pressed stop")
  const consumed = collect(openai(llm.url).stream("hi", { toolkit: await createToolkit({}), signal: ac.signal }))
  while (llm.requests.length === 0) await new Promise((r) => setTimeout(r, 5))
  ac.abort(reason)
  await within(4000, assert.rejects(consumed, (e) => e === reason), "the aborted stream")
  await within(4000, llm.requests[0].closed, "closing the aborted request")
  assert.equal(llm.requests.length, 1, "an abort is not retried")
})

test("stream: aborting mid-stream (after a text event) makes the iterator throw signal.reason", { timeout: 5000 }, async (t) => {
  const release = deferred()
  t.after(() => release.resolve())
  const enc = new TextEncoder()
  const fetch = async () =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(enc.encode(sse(oaDeltaText("partial"))))
          release.promise.then(() => {
            // The client cancels the body when the run is aborted; a cancelled stream takes no more data.
            if (cancelled) return
            controller.enqueue(enc.encode(SSE_DONE))
            controller.close()
          })
        },
        cancel() {
          cancelled = true
        },
      }),
      { status: 200 },
    )
  let cancelled = false
  const c = createClient({ baseUrl: "http://llm.invalid", style: "openai", model: "m", apiKey: "k", fetch })
  const ac = new AbortController()
  const reason = new RangeError("user pressed stop")
  const seen = []
  await within(4000, assert.rejects(
    (async () => {
      for await (const ev of c.stream("hi", { toolkit: await createToolkit({}), signal: ac.signal })) {
        seen.push(ev.type)
        if (ev.type === "text") ac.abort(reason)
      }
    })(),
    (e) => e === reason,
  ), "the aborted stream")
  assert.deepStrictEqual(seen, ["text"])
  await within(4000, (async () => { while (!cancelled) await new Promise((r) => setTimeout(r, 5)) })(), "the body being cancelled")
})

test("createInProcessClient(...).stream() throws the documented refusal; generate is never called", async () => {
  let calls = 0
  const c = createInProcessClient({ model: "local", generate: () => { calls++; return { content: "x" } } })
  await assert.rejects(
    collect(c.stream("hi", { toolkit: await createToolkit({}) })),
    (e) =>
      e instanceof Error &&
      e.message ===
        "toolnexus: createInProcessClient does not support streaming — `generate` returns a complete answer. Use the non-streaming run, or supply a `fetch`/transport that streams.",
  )
  assert.equal(calls, 0)
})
