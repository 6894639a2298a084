// What a tool reports while it runs (ctx.progress, ctx.log) in a run of this library's own: the
// duringTool hook and onMetric get it, in order, before the call's result goes on; without
// either listener the tool's ctx is what the reference hands it (none at all).
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool, pending } from "../index.js"
import { startLLM, oaText, oaCalls, sawToolResult, sse, SSE_DONE, oaDeltaText, oaDeltaTools } from "./support/llm.mjs"

const script = (req) => (sawToolResult(req) ? oaText("done") : oaCalls([{ id: "c1", name: "slow", args: { n: 3 } }]))
const client = (llm, extra) => createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", ...extra })

/** A tool that reports three steps and a log entry, awaiting between them. */
function slowTool(seen) {
  return defineTool({
    name: "slow",
    description: "reports as it goes",
    inputSchema: { type: "object", properties: { n: { type: "number" } } },
    run: async ({ n }, ctx) => {
      seen.push(ctx === undefined ? "no ctx" : Object.keys(ctx).sort().join(","))
      for (let i = 1; i <= n; i++) {
        ctx?.progress?.(i, n, `step ${i}`)
        await new Promise((r) => setTimeout(r, 5))
      }
      ctx?.log?.("warning", { note: "almost" }, "slow-logger")
      seen.push("returning")
      return "finished"
    },
  })
}

test("duringTool gets each progress and log report in order, before afterTool and the next LLM call", async (t) => {
  const llm = await startLLM(script)
  t.after(() => llm.close())
  const seen = []
  const tk = await createToolkit({ extraTools: [slowTool(seen)] })
  const hooks = {
    duringTool: (ev) => void seen.push(ev),
    afterTool: (ev) => void seen.push(`afterTool ${ev.result.output}`),
  }
  const res = await client(llm, { hooks }).run("go", { toolkit: tk })
  assert.equal(res.text, "done")
  assert.deepStrictEqual(seen, [
    "closeStream,log,progress,sample,signal",
    { type: "progress", name: "slow", id: "c1", turn: 0, progress: 1, total: 3, message: "step 1" },
    { type: "progress", name: "slow", id: "c1", turn: 0, progress: 2, total: 3, message: "step 2" },
    { type: "progress", name: "slow", id: "c1", turn: 0, progress: 3, total: 3, message: "step 3" },
    "returning",
    { type: "log", name: "slow", id: "c1", turn: 0, level: "warning", data: { note: "almost" }, logger: "slow-logger" },
    "afterTool finished",
  ])
})

test("onMetric gets tool_progress and tool_log events; client.metrics() is unchanged by them", async (t) => {
  const llm = await startLLM(script)
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [slowTool([])] })
  const events = []
  const c = client(llm, { onMetric: (ev) => void events.push(ev) })
  await c.run("go", { toolkit: tk })
  const reports = events.filter((e) => e.event.startsWith("tool_"))
  assert.deepStrictEqual(reports, [
    { event: "tool_progress", tool: "slow", source: "native", progress: 1, total: 3, message: "step 1" },
    { event: "tool_progress", tool: "slow", source: "native", progress: 2, total: 3, message: "step 2" },
    { event: "tool_progress", tool: "slow", source: "native", progress: 3, total: 3, message: "step 3" },
    { event: "tool_log", tool: "slow", source: "native", level: "warning", data: { note: "almost" }, logger: "slow-logger" },
  ])
  // The reports come after the model's call and before the tool call's own metric.
  assert.deepStrictEqual(events.map((e) => e.event).slice(0, 6), ["llm", "tool_progress", "tool_progress", "tool_progress", "tool_log", "tool"])
  assert.doesNotMatch(c.metrics(), /progress|tool_log/)
})

test("without duringTool or onMetric a tool's ctx is none, as the reference hands it", async (t) => {
  const llm = await startLLM(script)
  t.after(() => llm.close())
  const seen = []
  const tk = await createToolkit({ extraTools: [slowTool(seen)] })
  const res = await client(llm, { hooks: { afterTool: () => {} } }).run("go", { toolkit: tk })
  assert.equal(res.text, "done")
  assert.deepStrictEqual(seen, ["no ctx", "returning"])
})

test("a report the listener cannot take is named; a duringTool that throws fails the run after the tool has finished", async (t) => {
  const llm = await startLLM(script)
  t.after(() => llm.close())
  let finished = false
  const bad = defineTool({
    name: "slow",
    description: "reports badly, then asks a model it has none of",
    run: async (_a, ctx) => {
      assert.throws(() => ctx.log("loud", 1), (e) => e instanceof TypeError && /unknown level "loud"/.test(e.message))
      assert.throws(() => ctx.progress("x"), TypeError)
      await assert.rejects(ctx.sample({ messages: ["hi"] }), /sampling\/createMessage: the caller does not offer sampling/)
      ctx.progress(1)
      await new Promise((r) => setTimeout(r, 20))
      finished = true
      return "ok"
    },
  })
  const tk = await createToolkit({ extraTools: [bad] })
  const hooks = {
    duringTool: () => {
      throw new Error("listener broke")
    },
  }
  await assert.rejects(client(llm, { hooks }).run("go", { toolkit: tk }), /listener broke/)
  assert.equal(finished, true)
})

test("a tool answered after waitFor reports too, and the ctx keeps its answer", async (t) => {
  const llm = await startLLM(script)
  t.after(() => llm.close())
  const seen = []
  const asking = defineTool({
    name: "slow",
    description: "asks first",
    run: (_a, ctx) => {
      if (!ctx?.answer) return pending({ kind: "approval", prompt: "ok?" })
      ctx.progress(1, 1, `answered ${ctx.answer.ok}`)
      return "approved"
    },
  })
  const tk = await createToolkit({ extraTools: [asking] })
  const hooks = { duringTool: (ev) => void seen.push(ev.message) }
  const res = await client(llm, { hooks, waitFor: async (req) => ({ id: req.id, ok: true }) }).run("go", { toolkit: tk })
  assert.equal(res.text, "done")
  assert.deepStrictEqual(seen, ["answered true"])
})

test("stream and ask hear a tool's reports as run does", async (t) => {
  const streamed = (req) =>
    sawToolResult(req)
      ? { sse: [sse(oaDeltaText("done")), SSE_DONE] }
      : { sse: [sse(oaDeltaTools([{ index: 0, id: "c1", name: "slow", args: '{"n":2}' }])), SSE_DONE] }
  const llm = await startLLM((req) => (req.json?.stream ? streamed(req) : sawToolResult(req) ? oaText("done") : oaCalls([{ id: "c1", name: "slow", args: { n: 2 } }])))
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [slowTool([])] })
  const heard = []
  const c = client(llm, { hooks: { duringTool: (ev) => void heard.push(`${ev.type} ${ev.progress ?? ev.level}`) } })
  const kinds = []
  for await (const ev of c.stream("go", { toolkit: tk })) kinds.push(ev.type)
  assert.deepStrictEqual(heard, ["progress 1", "progress 2", "log warning"])
  assert.ok(kinds.includes("tool_result") && kinds.at(-1) === "done", kinds.join())
  heard.length = 0
  assert.equal((await c.ask("go", { toolkit: tk, id: "conv" })).text, "done")
  assert.deepStrictEqual(heard, ["progress 1", "progress 2", "log warning"])
})
