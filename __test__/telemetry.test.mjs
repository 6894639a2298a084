// The `telemetry` option, against the official OpenTelemetry JS SDK: which spans a run records
// (the GenAI semantic conventions' names and attributes), how they nest under the caller's
// span, the W3C trace context on the requests a run makes, and what it costs to leave it off.

import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"

import { context, propagation, trace, SpanKind, SpanStatusCode } from "@opentelemetry/api"
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks"
import { W3CTraceContextPropagator } from "@opentelemetry/core"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"

import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { agent, agents, createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls, sse, oaDeltaText, oaUsageChunk, SSE_DONE, anReply, toolUse, text, runChild, sawToolResult } from "./support/llm.mjs"

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
trace.setGlobalTracerProvider(provider)
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
propagation.setGlobalPropagator(new W3CTraceContextPropagator())

const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }
const add = defineTool({
  name: "add",
  description: "Add two numbers",
  inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
  run: ({ a, b }) => String(a + b),
})

/** @param {import("@opentelemetry/sdk-trace-base").ReadableSpan} s */
const parentOf = (s) => s.parentSpanContext?.spanId
const byName = (spans, name) => spans.filter((s) => s.name === name)
const traceparentOf = (s) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`

test("a run records invoke_agent, a chat span per model call and an execute_tool span per tool call", async () => {
  exporter.reset()
  const llm = await startLLM([oaCalls([{ id: "c1", name: "add", args: { a: 2, b: 3 } }], usage), oaText("5", usage)])
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m-1", apiKey: "k", telemetry: true })
    const r = await client.run("2+3?", { toolkit: await createToolkit({ extraTools: [add], builtins: false }) })
    assert.equal(r.text, "5")
    const spans = exporter.getFinishedSpans()
    assert.deepEqual(spans.map((s) => s.name).sort(), ["chat m-1", "chat m-1", "execute_tool add", "invoke_agent m-1"])
    const [run] = byName(spans, "invoke_agent m-1")
    const chats = byName(spans, "chat m-1")
    const [tool] = byName(spans, "execute_tool add")
    for (const s of [...chats, tool]) {
      assert.equal(parentOf(s), run.spanContext().spanId, `${s.name} is a child of the run`)
      assert.equal(s.spanContext().traceId, run.spanContext().traceId)
    }
    assert.equal(run.parentSpanContext, undefined, "the run is a root without a caller span")
    assert.equal(chats[0].kind, SpanKind.CLIENT)
    assert.equal(tool.kind, SpanKind.INTERNAL)
    assert.deepEqual(
      { ...chats[0].attributes },
      {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "m-1",
        "server.address": "127.0.0.1",
        "server.port": llm.port,
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 7,
      },
    )
    assert.deepEqual(
      { ...tool.attributes },
      { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.type": "function", "gen_ai.tool.call.id": "c1", "toolnexus.tool.source": "native" },
    )
    assert.equal(run.attributes["gen_ai.usage.input_tokens"], 22)
    assert.equal(run.attributes["gen_ai.usage.output_tokens"], 14)
    assert.equal(run.attributes["toolnexus.run.status"], "done")
    assert.equal(run.attributes["toolnexus.run.tool_calls"], 1)
    // Each model request carries its own chat span as the W3C parent.
    const sent = llm.requests.map((q) => q.headers.traceparent)
    assert.deepEqual(sent, chats.map(traceparentOf))
  } finally {
    await llm.close()
  }
})

test("spans carry the times the run began and ended them, however late the recorder hears of them", async () => {
  exporter.reset()
  const llm = await startLLM([oaCalls([{ id: "s1", name: "slow", args: {} }], usage), oaText("done", usage)])
  // The tool's span starts and ends between two model calls: the recorder is told of both
  // with the second call's batch, yet the span must last as long as the tool ran.
  const slow = defineTool({ name: "slow", description: "waits", run: () => new Promise((r) => setTimeout(() => r("ok"), 120)) })
  const toolkit = await createToolkit({ extraTools: [slow], builtins: false })
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
    const before = Date.now()
    await client.run("go", { toolkit })
    const after = Date.now()
    const ms = ([s, ns]) => s * 1e3 + ns / 1e6
    const spans = exporter.getFinishedSpans()
    const [tool] = byName(spans, "execute_tool slow")
    const [run] = byName(spans, "invoke_agent m")
    const [first, second] = byName(spans, "chat m").sort((a, b) => ms(a.startTime) - ms(b.startTime))
    assert.ok(ms(tool.duration) >= 110, `the tool span lasts as the tool ran (${ms(tool.duration)} ms)`)
    assert.ok(ms(first.endTime) <= ms(tool.startTime) && ms(tool.endTime) <= ms(second.startTime), "in the order they happened")
    assert.ok(ms(run.startTime) >= before - 5 && ms(run.endTime) <= after + 5, "within the run's wall-clock time")
    assert.ok(ms(run.startTime) <= ms(first.startTime) && ms(second.endTime) <= ms(run.endTime), "the run spans its children")
  } finally {
    await toolkit.close()
    await llm.close()
  }
})

test("a run started inside the caller's span is its child", async () => {
  exporter.reset()
  const llm = await startLLM([oaText("hi")])
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
    const tracer = trace.getTracer("test")
    await tracer.startActiveSpan("request", async (outer) => {
      await client.run("hi", { toolkit: await createToolkit({ builtins: false }) })
      outer.end()
    })
    const spans = exporter.getFinishedSpans()
    const [outer] = byName(spans, "request")
    const [run] = byName(spans, "invoke_agent m")
    assert.equal(parentOf(run), outer.spanContext().spanId)
    assert.equal(run.spanContext().traceId, outer.spanContext().traceId)
  } finally {
    await llm.close()
  }
})

test("runs started at once inside different spans each hang under their own", async () => {
  exporter.reset()
  const llm = await startLLM([oaText("hi")])
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
    const toolkit = await createToolkit({ builtins: false })
    const tracer = trace.getTracer("test")
    const under = (name) =>
      tracer.startActiveSpan(name, async (outer) => {
        await Promise.all([client.run("a", { toolkit }), client.ask("b", { toolkit, id: name })])
        outer.end()
        return outer.spanContext().spanId
      })
    const [one, two] = await Promise.all([under("one"), under("two")])
    const runs = byName(exporter.getFinishedSpans(), "invoke_agent m")
    assert.equal(runs.length, 4)
    assert.deepEqual(runs.map(parentOf).sort(), [one, one, two, two].sort())
  } finally {
    await llm.close()
  }
})

test("a failed model call marks the chat span and the run as errors", async () => {
  exporter.reset()
  const llm = await startLLM([{ status: 400, body: { error: "bad request" } }])
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
    await assert.rejects(client.run("x", { toolkit: await createToolkit({ builtins: false }) }), /LLM 400/)
    const spans = exporter.getFinishedSpans()
    const [chat] = byName(spans, "chat m")
    const [run] = byName(spans, "invoke_agent m")
    assert.equal(chat.status.code, SpanStatusCode.ERROR)
    assert.equal(chat.attributes["error.type"], "400")
    assert.match(chat.status.message, /LLM 400/)
    assert.equal(run.status.code, SpanStatusCode.ERROR)
  } finally {
    await llm.close()
  }
})

test("a tool that fails records an error on its span; the run goes on", async () => {
  exporter.reset()
  const boom = defineTool({ name: "boom", description: "fails", run: () => { throw new Error("it broke") } })
  const llm = await startLLM([oaCalls([{ id: "b", name: "boom", args: {} }]), oaText("sorry")])
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
    const r = await client.run("x", { toolkit: await createToolkit({ extraTools: [boom], builtins: false }) })
    assert.equal(r.text, "sorry")
    const [tool] = byName(exporter.getFinishedSpans(), "execute_tool boom")
    assert.equal(tool.status.code, SpanStatusCode.ERROR)
    assert.equal(tool.status.message, "it broke")
    assert.equal(tool.attributes["error.type"], "tool_error")
  } finally {
    await llm.close()
  }
})

test("stream and ask record the same spans; the Anthropic style names its provider and stop reason", async () => {
  exporter.reset()
  const streamed = await startLLM([{ sse: [sse(oaDeltaText("he")), sse(oaDeltaText("y")), sse(oaUsageChunk(3, 2)), SSE_DONE] }])
  const anthropic = await startLLM([anReply([toolUse("t1", "add", { a: 1, b: 1 })]), anReply([text("2")])])
  try {
    const client = createClient({ baseUrl: streamed.url, style: "openai", model: "s", apiKey: "k", telemetry: true })
    const events = []
    for await (const ev of client.stream("x", { toolkit: await createToolkit({ builtins: false }) })) events.push(ev.type)
    assert.ok(events.includes("done"))
    const spans = exporter.getFinishedSpans()
    const [chat] = byName(spans, "chat s")
    assert.equal(chat.attributes["gen_ai.usage.output_tokens"], 2)
    assert.equal(streamed.requests[0].headers.traceparent, traceparentOf(chat))

    exporter.reset()
    const an = createClient({ baseUrl: anthropic.url, style: "anthropic", model: "claude-x", apiKey: "k", telemetry: true })
    const r = await an.ask("1+1", { toolkit: await createToolkit({ extraTools: [add], builtins: false }), id: "conv" })
    assert.equal(r.text, "2")
    const chats = byName(exporter.getFinishedSpans(), "chat claude-x")
    assert.equal(chats.length, 2)
    assert.equal(chats[0].attributes["gen_ai.provider.name"], "anthropic")
    assert.deepEqual(chats[0].attributes["gen_ai.response.finish_reasons"], ["end_turn"])
    assert.equal(byName(exporter.getFinishedSpans(), "execute_tool add").length, 1)
  } finally {
    await streamed.close()
    await anthropic.close()
  }
})

test("an A2A agent's requests carry the execute_tool span that called it", async () => {
  exporter.reset()
  const seen = []
  const peer = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" })
      if (req.method === "GET") return res.end(JSON.stringify({ name: "desk", url: `http://127.0.0.1:${peer.address().port}/`, skills: [{ id: "look", description: "Look it up" }] }))
      seen.push(req.headers.traceparent)
      const rpc = JSON.parse(body)
      res.end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result: { id: "t1", status: { state: "completed" }, artifacts: [{ parts: [{ kind: "text", text: "found it" }] }] } }))
    })
  })
  await new Promise((r) => peer.listen(0, "127.0.0.1", r))
  const llm = await startLLM([oaCalls([{ id: "a", name: "desk_look", args: { task: "find" } }]), oaText("ok")])
  try {
    const toolkit = await createToolkit({ builtins: false, agents: [agent({ card: `http://127.0.0.1:${peer.address().port}/.well-known/agent-card.json` })] })
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
    const r = await client.run("look", { toolkit })
    assert.equal(r.toolCalls[0].output, "found it")
    const [tool] = byName(exporter.getFinishedSpans(), "execute_tool desk_look")
    assert.equal(tool.attributes["toolnexus.tool.source"], "a2a")
    assert.ok(seen.length >= 1)
    for (const h of seen) assert.equal(h, traceparentOf(tool))
  } finally {
    await llm.close()
    peer.closeAllConnections()
    peer.close()
  }
})

test("an MCP server over HTTP sees the execute_tool span as a header and in the call's _meta", async () => {
  exporter.reset()
  const calls = []
  const mcpServer = () => {
    const server = new Server({ name: "traced", version: "1.0.0" }, { capabilities: { tools: {} } })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "echo", inputSchema: { type: "object", properties: { text: { type: "string" } } } }] }))
    server.setRequestHandler(CallToolRequestSchema, async (req) => {
      calls.push({ meta: req.params._meta?.traceparent })
      return { content: [{ type: "text", text: `echo: ${req.params.arguments?.text}` }] }
    })
    return server
  }
  const posted = []
  const web = http.createServer(async (req, res) => {
    let body = ""
    for await (const c of req) body += c
    if (req.method !== "POST") return res.writeHead(405).end()
    const msg = JSON.parse(body)
    posted.push({ method: msg.method, traceparent: req.headers.traceparent })
    // Stateless: a fresh server and transport for each request, as the SDK's own example does.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    await mcpServer().connect(transport)
    await transport.handleRequest(req, res, msg)
  })
  await new Promise((r) => web.listen(0, "127.0.0.1", r))
  const llm = await startLLM([oaCalls([{ id: "e", name: "web_echo", args: { text: "hi" } }]), oaText("ok")])
  const toolkit = await createToolkit({ builtins: false, mcpConfig: { mcpServers: { web: { type: "remote", url: `http://127.0.0.1:${web.address().port}/mcp` } } } })
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
    const r = await client.run("echo", { toolkit })
    assert.equal(r.toolCalls[0].output, "echo: hi")
    const [tool] = byName(exporter.getFinishedSpans(), "execute_tool web_echo")
    assert.equal(tool.attributes["toolnexus.tool.source"], "mcp")
    const call = posted.find((p) => p.method === "tools/call")
    assert.equal(call.traceparent, traceparentOf(tool))
    assert.deepEqual(calls, [{ meta: traceparentOf(tool) }])
    // Only the traced call carries it: the handshake and the listing were made outside any span.
    assert.ok(posted.filter((p) => p.method !== "tools/call").every((p) => p.traceparent === undefined))
  } finally {
    await toolkit.close()
    await llm.close()
    web.closeAllConnections()
    web.close()
  }
})

test("a served request continues the caller's trace, and the Task's run is its child", async () => {
  exporter.reset()
  const llm = await startLLM([oaText("served")])
  const tk = await createToolkit({ builtins: false })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: true })
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: {}, telemetry: true })
  try {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const callerSpan = "00f067aa0ba902b7"
    const res = await fetch(srv.url.replace(/\/$/, "") + "/", {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { kind: "message", role: "user", messageId: "m1", parts: [{ kind: "text", text: "hi" }] } } }),
    })
    const reply = await res.json()
    assert.equal(reply.result.status.state, "completed")
    // The run may finish a moment after the answer: wait for its span.
    for (let i = 0; i < 100 && !byName(exporter.getFinishedSpans(), "invoke_agent m").length; i++) await new Promise((r) => setTimeout(r, 10))
    const spans = exporter.getFinishedSpans()
    const [served] = byName(spans, "POST /")
    assert.equal(served.kind, SpanKind.SERVER)
    assert.equal(served.spanContext().traceId, traceId)
    assert.equal(parentOf(served), callerSpan)
    assert.equal(served.attributes["http.response.status_code"], 200)
    const [run] = byName(spans, "invoke_agent m")
    assert.equal(run.spanContext().traceId, traceId)
    assert.equal(parentOf(run), served.spanContext().spanId)
    const [chat] = byName(spans, "chat m")
    assert.equal(llm.requests[0].headers.traceparent, traceparentOf(chat))
  } finally {
    await srv.stop()
    await llm.close()
  }
})

test("an agent runtime records its handles as a tree: a spawned handle's turn under the task call that spawned it", async () => {
  exporter.reset()
  // The lead delegates once, the helper answers, the lead finishes.
  const llm = await startLLM((req) => {
    const model = req.json?.model
    if (model === "m-helper") return oaText("helped")
    return sawToolResult(req) ? oaText("all done") : oaCalls([{ id: "t1", name: "task", args: { agent: "helper", prompt: "help" } }])
  })
  try {
    const rt = new agents.AgentRuntime({
      llm: { baseUrl: llm.url, style: "openai", apiKey: "k", model: "m-lead" },
      registry: {
        lead: { name: "lead", does: "leads", model: "m-lead", team: ["helper"] },
        helper: { name: "helper", does: "helps", model: "m-helper" },
      },
      telemetry: true,
    })
    const lead = rt.spawn(rt.root, "lead")
    rt.wake(lead, "go")
    const r = await rt.wait(lead)
    assert.equal(r.text, "all done")
    await rt.shutdown?.()
    const spans = exporter.getFinishedSpans()
    const [leadTurn] = byName(spans, "invoke_agent lead")
    const [helperTurn] = byName(spans, "invoke_agent helper")
    const [task] = byName(spans, "execute_tool task")
    assert.equal(leadTurn.attributes["gen_ai.agent.name"], "lead")
    assert.equal(parentOf(task), byName(spans, "invoke_agent m-lead")[0].spanContext().spanId)
    assert.equal(parentOf(helperTurn), task.spanContext().spanId, "the helper's turn hangs under the task call")
    assert.equal(helperTurn.spanContext().traceId, leadTurn.spanContext().traceId)
    const [helperRun] = byName(spans, "invoke_agent m-helper")
    assert.equal(parentOf(helperRun), helperTurn.spanContext().spanId)
  } finally {
    await llm.close()
  }
})

test("a tracer of the caller's own is used; a tracer that throws never breaks a run", async () => {
  const own = new InMemorySpanExporter()
  const mine = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(own)] })
  const llm = await startLLM([oaText("a")])
  try {
    exporter.reset()
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: { tracer: mine.getTracer("x") } })
    await client.run("x", { toolkit: await createToolkit({ builtins: false }) })
    assert.deepEqual(own.getFinishedSpans().map((s) => s.name).sort(), ["chat m", "invoke_agent m"])
    assert.equal(exporter.getFinishedSpans().length, 0)

    const broken = { startSpan() { throw new Error("tracer down") } }
    const b = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: { tracer: broken } })
    assert.equal((await b.run("x", { toolkit: await createToolkit({ builtins: false }) })).text, "a")
    assert.throws(() => createClient({ baseUrl: llm.url, style: "openai", model: "m", telemetry: { tracer: {} } }), TypeError)
  } finally {
    await llm.close()
  }
})

test("off by default: no spans, no trace headers, and the OpenTelemetry API is never loaded", async () => {
  const llm = await startLLM([oaText("plain")])
  try {
    const out = await runChild(
      `
      const { createClient, createToolkit } = await import(${JSON.stringify(new URL("../index.js", import.meta.url).href)})
      const c = createClient({ baseUrl: process.env.LLM, style: "openai", model: "m", apiKey: "k" })
      const r = await c.run("x", { toolkit: await createToolkit({ builtins: false }) })
      const { createRequire } = await import("node:module")
      const loaded = Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes("@opentelemetry"))
      console.log(JSON.stringify({ text: r.text, loaded }))
      `,
      { env: { ...process.env, LLM: llm.url } },
    )
    assert.equal(out.code, 0, out.stderr)
    assert.deepEqual(JSON.parse(out.stdout.trim()), { text: "plain", loaded: false })
    assert.equal(llm.requests[0].headers.traceparent, undefined)
  } finally {
    await llm.close()
  }
})

test("spans reach a collector through the OTLP/HTTP exporter", async () => {
  const bodies = []
  const collector = http.createServer((req, res) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      bodies.push({ path: req.url, type: req.headers["content-type"], body: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{}")
    })
  })
  await new Promise((r) => collector.listen(0, "127.0.0.1", r))
  const otlp = new OTLPTraceExporter({ url: `http://127.0.0.1:${collector.address().port}/v1/traces` })
  const shipping = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(otlp)] })
  const llm = await startLLM([oaCalls([{ id: "c", name: "add", args: { a: 1, b: 2 } }], usage), oaText("3", usage)])
  try {
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", telemetry: { tracerProvider: shipping } })
    await client.run("x", { toolkit: await createToolkit({ extraTools: [add], builtins: false }) })
    await shipping.forceFlush()
    await shipping.shutdown()
    assert.ok(bodies.length > 0, "the collector was sent spans")
    assert.ok(bodies.every((b) => b.path === "/v1/traces" && /json/.test(b.type)))
    const names = bodies.flatMap((b) => JSON.parse(b.body).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((sp) => sp.name))))
    assert.deepEqual(names.sort(), ["chat m", "chat m", "execute_tool add", "invoke_agent m"])
    const scopes = bodies.flatMap((b) => JSON.parse(b.body).resourceSpans.flatMap((r) => r.scopeSpans.map((s) => s.scope.name)))
    assert.ok(scopes.every((n) => n === "toolnexus"))
  } finally {
    await llm.close()
    collector.close()
  }
})

test("without @opentelemetry/api installed, telemetry: true says what to install", async () => {
  const out = await runChild(`
    const { default: Module } = await import("node:module")
    const resolve = Module._resolveFilename
    Module._resolveFilename = function (request, ...rest) {
      if (request === "@opentelemetry/api") throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: "MODULE_NOT_FOUND" })
      return resolve.call(this, request, ...rest)
    }
    const { createClient } = await import(${JSON.stringify(new URL("../index.js", import.meta.url).href)})
    createClient({ baseUrl: "http://127.0.0.1:1", style: "openai", model: "m" })
    try {
      createClient({ baseUrl: "http://127.0.0.1:1", style: "openai", model: "m", telemetry: true })
      console.log("no error")
    } catch (e) {
      console.log(JSON.stringify({ message: e.message, cause: e.cause?.code }))
    }
  `)
  assert.equal(out.code, 0, out.stderr)
  const seen = JSON.parse(out.stdout.trim())
  assert.match(seen.message, /needs @opentelemetry\/api \(npm install @opentelemetry\/api\)/)
  assert.equal(seen.cause, "MODULE_NOT_FOUND")
})
