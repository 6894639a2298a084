// SPEC §8 Observability: onMetric events and the Prometheus text of client.metrics().
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool, pending } from "../index.js"
import { startLLM, oaText, oaCalls, anReply, text, toolUse, sse, SSE_DONE, oaDeltaText, oaUsageChunk } from "./support/llm.mjs"

const client = (url, extra = {}) => createClient({ baseUrl: url, style: "openai", model: "met-m", apiKey: "k", ...extra })
const u = (prompt_tokens, completion_tokens) => ({ prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens })

/** `ms` varies run to run: check it is a whole, non-negative number and take it out. */
function withoutMs(ev) {
  assert.ok(Number.isInteger(ev.ms) && ev.ms >= 0, `ms should be a whole number of milliseconds, got ${ev.ms}`)
  const { ms, ...rest } = ev
  return rest
}

const addTool = () => defineTool({ name: "add", description: "add two numbers", run: ({ a, b }) => String(a + b) })

const HELP_TYPE = [
  "# HELP toolnexus_llm_requests_total Total LLM requests.",
  "# TYPE toolnexus_llm_requests_total counter",
  "# HELP toolnexus_llm_tokens_total Total tokens, by type.",
  "# TYPE toolnexus_llm_tokens_total counter",
  "# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.",
  "# TYPE toolnexus_llm_request_duration_seconds histogram",
  "# HELP toolnexus_tool_calls_total Total tool calls.",
  "# TYPE toolnexus_tool_calls_total counter",
  "# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.",
  "# TYPE toolnexus_tool_duration_seconds histogram",
  "# HELP toolnexus_run_errors_total Total run errors.",
  "# TYPE toolnexus_run_errors_total counter",
]

// ---------------------------------------------------------------------------------------------
// onMetric
// ---------------------------------------------------------------------------------------------

test("onMetric: a tool run emits llm, tool, llm, run — exact fields in the documented order", async (t) => {
  const llm = await startLLM([oaCalls([{ id: "c1", name: "add", args: { a: 2, b: 3 } }], u(5, 3)), oaText("5", u(9, 1))])
  t.after(() => llm.close())
  const events = []
  const res = await client(llm.url, { onMetric: (ev) => events.push(ev) }).run("2+3", { toolkit: await createToolkit({ extraTools: [addTool()] }) })
  assert.equal(res.text, "5")
  assert.deepStrictEqual(events.map((e) => Object.keys(e)), [
    ["event", "model", "status", "ms", "promptTokens", "completionTokens"],
    ["event", "tool", "source", "isError", "ms"],
    ["event", "model", "status", "ms", "promptTokens", "completionTokens"],
    ["event", "model", "turns", "toolCalls", "totalTokens", "ms"],
  ])
  assert.deepStrictEqual(events.map(withoutMs), [
    { event: "llm", model: "met-m", status: "ok", promptTokens: 5, completionTokens: 3 },
    { event: "tool", tool: "add", source: "native", isError: false },
    { event: "llm", model: "met-m", status: "ok", promptTokens: 9, completionTokens: 1 },
    { event: "run", model: "met-m", turns: 2, toolCalls: 1, totalTokens: 18 },
  ])
})

test("onMetric: a plain answer is llm then run; a reply without usage reports zero tokens", async (t) => {
  const llm = await startLLM([oaText("hi")])
  t.after(() => llm.close())
  const events = []
  await client(llm.url, { onMetric: (ev) => events.push(ev) }).run("hi", { toolkit: await createToolkit({}) })
  assert.deepStrictEqual(events.map(withoutMs), [
    { event: "llm", model: "met-m", status: "ok", promptTokens: 0, completionTokens: 0 },
    { event: "run", model: "met-m", turns: 1, toolCalls: 0, totalTokens: 0 },
  ])
})

test("onMetric: tool source is the tool's own (native, a hand-written source), custom for an unknown name", async (t) => {
  const llm = await startLLM([
    oaCalls([{ id: "1", name: "add", args: { a: 1, b: 1 } }, { id: "2", name: "remote", args: {} }, { id: "3", name: "ghost", args: {} }]),
    oaText("done"),
  ])
  t.after(() => llm.close())
  const remote = { name: "remote", description: "", inputSchema: { type: "object" }, source: "mcp", execute: async () => ({ output: "r", isError: false }) }
  const events = []
  await client(llm.url, { onMetric: (ev) => events.push(ev) }).run("go", { toolkit: await createToolkit({ extraTools: [addTool(), remote] }) })
  const tools = events.filter((e) => e.event === "tool").map(withoutMs).sort((x, y) => x.tool.localeCompare(y.tool))
  assert.deepStrictEqual(tools, [
    { event: "tool", tool: "add", source: "native", isError: false },
    { event: "tool", tool: "ghost", source: "custom", isError: true },
    { event: "tool", tool: "remote", source: "mcp", isError: false },
  ])
})

test("onMetric: a suspension is a tool event with isError false and pending true; its resolved retry is a plain one", async (t) => {
  const approve = () => defineTool({ name: "approve", description: "", run: (_a, ctx) => (ctx?.answer ? "approved" : pending({ kind: "approval", prompt: "OK?" })) })
  // Without waitFor: the run halts.
  const halt = await startLLM([oaCalls([{ id: "p1", name: "approve", args: {} }], u(1, 1))])
  t.after(() => halt.close())
  const halted = []
  const res = await client(halt.url, { onMetric: (ev) => halted.push(ev) }).run("go", { toolkit: await createToolkit({ extraTools: [approve()] }) })
  assert.equal(res.status, "pending")
  assert.deepStrictEqual(halted.map(withoutMs), [
    { event: "llm", model: "met-m", status: "ok", promptTokens: 1, completionTokens: 1 },
    { event: "tool", tool: "approve", source: "native", isError: false, pending: true },
    { event: "run", model: "met-m", turns: 1, toolCalls: 1, totalTokens: 2 },
  ])
  assert.deepStrictEqual(Object.keys(halted[1]), ["event", "tool", "source", "isError", "ms", "pending"])

  // With waitFor: the suspension, then the retry.
  const resume = await startLLM([oaCalls([{ id: "p1", name: "approve", args: {} }], u(1, 1)), oaText("ok", u(2, 1))])
  t.after(() => resume.close())
  const resumed = []
  await client(resume.url, { waitFor: async (r) => ({ id: r.id, ok: true }), onMetric: (ev) => resumed.push(ev) })
    .run("go", { toolkit: await createToolkit({ extraTools: [approve()] }) })
  assert.deepStrictEqual(resumed.map(withoutMs), [
    { event: "llm", model: "met-m", status: "ok", promptTokens: 1, completionTokens: 1 },
    { event: "tool", tool: "approve", source: "native", isError: false, pending: true },
    { event: "tool", tool: "approve", source: "native", isError: false },
    { event: "llm", model: "met-m", status: "ok", promptTokens: 2, completionTokens: 1 },
    { event: "run", model: "met-m", turns: 2, toolCalls: 1, totalTokens: 5 },
  ])
})

test("onMetric: a failed run emits an llm error event and a run event carrying the error", async (t) => {
  const llm = await startLLM([oaCalls([{ id: "c1", name: "add", args: { a: 1, b: 2 } }], u(5, 3)), { status: 500, body: "boom" }])
  t.after(() => llm.close())
  const events = []
  await assert.rejects(
    client(llm.url, { retries: 0, onMetric: (ev) => events.push(ev) }).run("go", { toolkit: await createToolkit({ extraTools: [addTool()] }) }),
    (e) => e.message === "LLM 500: boom",
  )
  assert.deepStrictEqual(events.map(withoutMs), [
    { event: "llm", model: "met-m", status: "ok", promptTokens: 5, completionTokens: 3 },
    { event: "tool", tool: "add", source: "native", isError: false },
    { event: "llm", model: "met-m", status: "error", promptTokens: 0, completionTokens: 0 },
    { event: "run", model: "met-m", turns: 2, toolCalls: 1, totalTokens: 8, error: "LLM 500: boom" },
  ])
  assert.deepStrictEqual(Object.keys(events[3]), ["event", "model", "turns", "toolCalls", "totalTokens", "ms", "error"])
})

test("onMetric: anthropic and streamed calls report each call's own tokens", async (t) => {
  const an = await startLLM([anReply([toolUse("t1", "add", { a: 1, b: 2 })], { input_tokens: 12, output_tokens: 4 }), anReply([text("3")], { input_tokens: 20, output_tokens: 1 })])
  t.after(() => an.close())
  const events = []
  await createClient({ baseUrl: an.url, style: "anthropic", model: "claude-met", apiKey: "k", onMetric: (ev) => events.push(ev) })
    .run("1+2", { toolkit: await createToolkit({ extraTools: [addTool()] }) })
  assert.deepStrictEqual(events.filter((e) => e.event !== "tool").map(withoutMs), [
    { event: "llm", model: "claude-met", status: "ok", promptTokens: 12, completionTokens: 4 },
    { event: "llm", model: "claude-met", status: "ok", promptTokens: 20, completionTokens: 1 },
    { event: "run", model: "claude-met", turns: 2, toolCalls: 1, totalTokens: 37 },
  ])

  const oa = await startLLM((req, i) => ({ sse: [sse(oaDeltaText(`part ${i}`)), sse(oaUsageChunk(7 + i, 2)), SSE_DONE] }))
  t.after(() => oa.close())
  const streamed = []
  const c = client(oa.url, { onMetric: (ev) => streamed.push(ev) })
  for await (const ev of c.stream("s", { toolkit: await createToolkit({}) })) void ev
  assert.deepStrictEqual(streamed.map(withoutMs), [
    { event: "llm", model: "met-m", status: "ok", promptTokens: 7, completionTokens: 2 },
    { event: "run", model: "met-m", turns: 1, toolCalls: 0, totalTokens: 9 },
  ])
})

test("onMetric is called with the client options as this", async (t) => {
  const llm = await startLLM([oaText("x")])
  t.after(() => llm.close())
  const receivers = []
  const opts = { baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", onMetric() { receivers.push(this) } }
  await createClient(opts).run("hi", { toolkit: await createToolkit({}) })
  assert.equal(receivers.length, 2)
  assert.ok(receivers.every((r) => r === opts))
})

test("an onMetric that throws makes the run reject with that very error", async (t) => {
  const llm = await startLLM([oaText("x")])
  t.after(() => llm.close())
  const sinkDown = new Error("metrics sink unavailable")
  await assert.rejects(
    client(llm.url, { onMetric: () => { throw sinkDown } }).run("hi", { toolkit: await createToolkit({}) }),
    (e) => e === sinkDown,
  )
})

// ---------------------------------------------------------------------------------------------
// client.metrics()
// ---------------------------------------------------------------------------------------------

test("metrics() before any activity: only the 12 HELP/TYPE lines and a trailing newline", () => {
  const c = client("http://127.0.0.1:9")
  assert.equal(c.metrics(), HELP_TYPE.join("\n") + "\n")
})

/** Cumulative bucket counts (le 0.05 … 60) for durations given in ms, as the fixed buckets define them. */
function buckets(msList) {
  const bounds = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
  return bounds.map((b) => msList.filter((ms) => ms / 1000 <= b).length)
}
const LE = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60"]
const sumOf = (msList) => msList.reduce((acc, ms) => acc + ms / 1000, 0)

function histogramLines(name, label, msList) {
  const counts = buckets(msList)
  return [
    ...LE.map((le, i) => `${name}_bucket{${label},le="${le}"} ${counts[i]}`),
    `${name}_bucket{${label},le="+Inf"} ${msList.length}`,
    `${name}_sum{${label}} ${sumOf(msList)}`,
    `${name}_count{${label}} ${msList.length}`,
  ]
}

test("metrics(): the exact Prometheus text for a tool run followed by a failed run", async (t) => {
  // The stub answers at once, so every duration sits in the first bucket.
  const llm = await startLLM([oaCalls([{ id: "c1", name: "add", args: { a: 2, b: 3 } }], u(5, 3)), oaText("5", u(9, 1)), { status: 500, body: "boom" }])
  t.after(() => llm.close())
  const events = []
  const c = client(llm.url, { retries: 0, onMetric: (ev) => events.push(ev) })
  const tk = await createToolkit({ extraTools: [addTool()] })
  await c.run("2+3", { toolkit: tk })
  await assert.rejects(c.run("again", { toolkit: tk }))

  const llmMs = events.filter((e) => e.event === "llm").map((e) => e.ms)
  const toolMs = events.filter((e) => e.event === "tool").map((e) => e.ms)
  assert.equal(llmMs.length, 3)
  assert.equal(toolMs.length, 1)
  const expected = [
    HELP_TYPE[0], HELP_TYPE[1],
    'toolnexus_llm_requests_total{model="met-m",status="error"} 1',
    'toolnexus_llm_requests_total{model="met-m",status="ok"} 2',
    HELP_TYPE[2], HELP_TYPE[3],
    'toolnexus_llm_tokens_total{type="completion"} 4',
    'toolnexus_llm_tokens_total{type="prompt"} 14',
    HELP_TYPE[4], HELP_TYPE[5],
    ...histogramLines("toolnexus_llm_request_duration_seconds", 'model="met-m"', llmMs),
    HELP_TYPE[6], HELP_TYPE[7],
    'toolnexus_tool_calls_total{tool="add",source="native",is_error="false",pending="false"} 1',
    HELP_TYPE[8], HELP_TYPE[9],
    ...histogramLines("toolnexus_tool_duration_seconds", 'tool="add"', toolMs),
    HELP_TYPE[10], HELP_TYPE[11],
    'toolnexus_run_errors_total{model="met-m"} 1',
  ]
  const actual = c.metrics()
  assert.ok(actual.endsWith("\n") && !actual.endsWith("\n\n"))
  assert.deepStrictEqual(actual.split("\n").slice(0, -1), expected)
  // The _sum lines are plain JavaScript numbers of seconds.
  assert.match(actual, /^toolnexus_llm_request_duration_seconds_sum\{model="met-m"\} \d+(\.\d+)?(e-\d+)?$/m)
  assert.match(actual, /^toolnexus_tool_duration_seconds_sum\{tool="add"\} \d+(\.\d+)?(e-\d+)?$/m)
  // A stub that answers at once and a tool that returns at once: everything is in the first bucket.
  assert.ok(actual.includes('\ntoolnexus_llm_request_duration_seconds_bucket{model="met-m",le="0.05"} 3\n'), `llm durations ${llmMs}`)
  assert.ok(actual.includes('\ntoolnexus_tool_duration_seconds_bucket{tool="add",le="0.05"} 1\n'), `tool durations ${toolMs}`)
})

test("metrics(): label values escape quote, backslash and newline; series sort by label string", async (t) => {
  const odd = 'say "hi"\\now\nplease'
  const weird = { name: odd, description: "", inputSchema: { type: "object" }, source: "http", execute: async () => ({ output: "x", isError: false }) }
  const llm = await startLLM([
    oaCalls([{ id: "1", name: "zeta", args: {} }, { id: "2", name: odd, args: {} }, { id: "3", name: "alpha", args: {} }, { id: "4", name: "nobody", args: {} }]),
    oaText("ok"),
  ])
  t.after(() => llm.close())
  const tk = await createToolkit({
    extraTools: [weird, defineTool({ name: "zeta", description: "", run: () => "z" }), defineTool({ name: "alpha", description: "", run: () => { throw new Error("a failed") } })],
  })
  const c = client(llm.url)
  await c.run("go", { toolkit: tk })
  const lines = c.metrics().split("\n")
  const calls = lines.filter((l) => l.startsWith("toolnexus_tool_calls_total{"))
  assert.deepStrictEqual(calls, [
    'toolnexus_tool_calls_total{tool="alpha",source="native",is_error="true",pending="false"} 1',
    'toolnexus_tool_calls_total{tool="nobody",source="custom",is_error="true",pending="false"} 1',
    String.raw`toolnexus_tool_calls_total{tool="say \"hi\"\\now\nplease",source="http",is_error="false",pending="false"} 1`,
    'toolnexus_tool_calls_total{tool="zeta",source="native",is_error="false",pending="false"} 1',
  ])
  assert.deepStrictEqual(
    lines.filter((l) => l.startsWith("toolnexus_tool_duration_seconds_count")),
    [
      'toolnexus_tool_duration_seconds_count{tool="alpha"} 1',
      'toolnexus_tool_duration_seconds_count{tool="nobody"} 1',
      String.raw`toolnexus_tool_duration_seconds_count{tool="say \"hi\"\\now\nplease"} 1`,
      'toolnexus_tool_duration_seconds_count{tool="zeta"} 1',
    ],
  )
  assert.ok(lines.includes(String.raw`toolnexus_tool_duration_seconds_bucket{tool="say \"hi\"\\now\nplease",le="+Inf"} 1`))
})

test("metrics(): a suspension counts as pending=\"true\", never as an error", async (t) => {
  const llm = await startLLM([oaCalls([{ id: "p", name: "gate", args: {} }])])
  t.after(() => llm.close())
  const c = client(llm.url)
  await c.run("go", { toolkit: await createToolkit({ extraTools: [defineTool({ name: "gate", description: "", run: () => pending({ kind: "input", prompt: "?" }) })] }) })
  const text = c.metrics()
  assert.ok(text.includes('toolnexus_tool_calls_total{tool="gate",source="native",is_error="false",pending="true"} 1\n'))
  assert.ok(!text.includes("toolnexus_run_errors_total{"), "a pending run is not an error")
})

test("metrics() are per client and cumulative across runs", async (t) => {
  const llm = await startLLM([oaText("a", u(1, 2))])
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const a = client(llm.url)
  const b = client(llm.url)
  await a.run("1", { toolkit: tk })
  await a.run("2", { toolkit: tk })
  assert.ok(a.metrics().includes('toolnexus_llm_requests_total{model="met-m",status="ok"} 2\n'))
  assert.ok(a.metrics().includes('toolnexus_llm_tokens_total{type="completion"} 4\ntoolnexus_llm_tokens_total{type="prompt"} 2\n'))
  assert.equal(b.metrics(), HELP_TYPE.join("\n") + "\n")
})
