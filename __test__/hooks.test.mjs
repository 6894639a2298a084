// SPEC §8 hooks: beforeLLM / afterLLM / beforeTool / afterTool.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls, sawToolResult, anReply, text } from "./support/llm.mjs"

const client = (llm, hooks, extra = {}) => createClient({ baseUrl: llm.url, style: "openai", model: "hook-model", apiKey: "k", hooks, ...extra })

test("beforeLLM sees messages/tools/model/turn and can replace messages and tools on the wire", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("final") : oaCalls([{ id: "c1", name: "visible", args: {} }])))
  t.after(() => llm.close())
  const visible = defineTool({ name: "visible", description: "shown", run: () => "v" })
  const hidden = defineTool({ name: "hidden", description: "not shown", run: () => "h" })
  const tk = await createToolkit({ extraTools: [visible, hidden] })
  const events = []
  const hooks = {
    beforeLLM(ev) {
      events.push(structuredClone(ev))
      if (ev.turn === 0) {
        return {
          messages: [{ role: "system", content: "injected" }, ...ev.messages],
          tools: ev.tools.filter((x) => x.function.name === "visible"),
        }
      }
    },
  }
  const res = await client(llm, hooks).run("hello", { toolkit: tk })
  assert.equal(res.text, "final")
  assert.equal(events.length, 2)
  assert.deepStrictEqual(events[0], { messages: [{ role: "user", content: "hello" }], tools: tk.toOpenAI(), model: "hook-model", turn: 0 })
  assert.equal(events[1].turn, 1)
  // The replacement transcript persists into the next turn; the replaced tools stay replaced.
  assert.deepStrictEqual(events[1].messages[0], { role: "system", content: "injected" })
  assert.deepStrictEqual(events[1].tools.map((x) => x.function.name), ["visible"])

  const wire0 = llm.requests[0].json
  assert.deepStrictEqual(wire0.messages, [{ role: "system", content: "injected" }, { role: "user", content: "hello" }])
  assert.deepStrictEqual(wire0.tools.map((x) => x.function.name), ["visible"])
  assert.deepStrictEqual(llm.requests[1].json.tools.map((x) => x.function.name), ["visible"])
  assert.equal(res.messages[0].content, "injected")
})

test("a run's first beforeLLM is called inside run() itself, before it returns its Promise (as the reference's async run)", async (t) => {
  const llm = await startLLM([oaText("one"), oaText("outer"), oaText("two")])
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const seen = []
  const c = client(llm, { beforeLLM: (ev) => void seen.push(`beforeLLM ${ev.turn}`) })
  const first = c.run("hi", { toolkit: tk })
  seen.push("run returned")
  assert.equal((await first).text, "one")
  // So does a run started from inside a hook of another run: its first hook comes first.
  const nested = []
  const outer = client(llm, {
    afterLLM: () => {
      nested.push(c.run("again", { toolkit: tk }))
      seen.push("hook returned")
    },
  })
  assert.equal((await outer.run("outer", { toolkit: tk })).text, "outer")
  assert.equal((await nested[0]).text, "two")
  assert.deepStrictEqual(seen, ["beforeLLM 0", "run returned", "beforeLLM 0", "hook returned"])
})

test("beforeLLM returning an empty tools list drops tools and tool_choice from the body", async (t) => {
  const llm = await startLLM([oaText("no tools")])
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "x", description: "", run: () => "" })] })
  await client(llm, { beforeLLM: () => ({ tools: [] }) }).run("hi", { toolkit: tk })
  assert.deepStrictEqual(Object.keys(llm.requests[0].json), ["model", "messages"])
})

test("an async beforeLLM works and returning nothing changes nothing", async (t) => {
  const llm = await startLLM([oaText("same")])
  t.after(() => llm.close())
  let called = 0
  const tk = await createToolkit({})
  await client(llm, { beforeLLM: async () => { called++; await new Promise((r) => setImmediate(r)) } }).run("hi", { toolkit: tk })
  assert.equal(called, 1)
  assert.deepStrictEqual(llm.requests[0].json.messages, [{ role: "user", content: "hi" }])
})

test("afterLLM sees the raw provider response each turn", async (t) => {
  let llmTurns = 0
  const llm = await startLLM((req) => {
    const r = sawToolResult(req) ? oaText("second", { prompt_tokens: 2, completion_tokens: 2 }) : oaCalls([{ id: "c", name: "t", args: {} }])
    r.body.provider_extra = { served_by: "node-a", turn_marker: llmTurns++ }
    return r
  })
  t.after(() => llm.close())
  const seen = []
  const tk = await createToolkit({ extraTools: [defineTool({ name: "t", description: "", run: () => "" })] })
  await client(llm, { afterLLM: (ev) => { seen.push(ev) } }).run("go", { toolkit: tk })
  assert.equal(seen.length, 2)
  assert.deepStrictEqual(seen.map((e) => [e.turn, e.model, e.response.provider_extra.turn_marker]), [[0, "hook-model", 0], [1, "hook-model", 1]])
  assert.deepStrictEqual(seen[1].response.usage, { prompt_tokens: 2, completion_tokens: 2 })
  assert.equal(seen[1].response.choices[0].message.content, "second")
})

test("afterLLM sees the raw anthropic response too", async (t) => {
  const llm = await startLLM([anReply([text("hey")], { input_tokens: 1, output_tokens: 1 })])
  t.after(() => llm.close())
  let raw
  const c = createClient({ baseUrl: llm.url, style: "anthropic", model: "c", apiKey: "k", hooks: { afterLLM: ({ response }) => { raw = response } } })
  await c.run("hi", { toolkit: await createToolkit({}) })
  assert.equal(raw.id, "msg_x")
  assert.deepStrictEqual(raw.content, [{ type: "text", text: "hey" }])
})

test("beforeTool rewrites args: the tool and the record see the rewritten ones", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("ok") : oaCalls([{ id: "c9", name: "search", args: { q: "CATS" } }])))
  t.after(() => llm.close())
  const got = []
  const search = defineTool({ name: "search", description: "", run: (args) => { got.push(args); return `results for ${args.q}` } })
  const events = []
  const hooks = { beforeTool: (ev) => { events.push(ev); return { args: { q: ev.args.q.toLowerCase(), limit: 5 } } } }
  const res = await client(llm, hooks).run("find cats", { toolkit: await createToolkit({ extraTools: [search] }) })
  assert.deepStrictEqual(events, [{ name: "search", args: { q: "CATS" }, id: "c9", turn: 0 }])
  assert.deepStrictEqual(got, [{ q: "cats", limit: 5 }])
  assert.deepStrictEqual(res.toolCalls, [{ name: "search", args: { q: "cats", limit: 5 }, output: "results for cats", isError: false, metadata: undefined }])
})

test("beforeTool returning a result short-circuits: the real tool never runs", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("denied, ok") : oaCalls([{ id: "d", name: "drop_table", args: { table: "users" } }])))
  t.after(() => llm.close())
  let ran = 0
  const drop = defineTool({ name: "drop_table", description: "", run: () => { ran++; return "dropped" } })
  const hooks = { beforeTool: ({ name }) => (name === "drop_table" ? { result: { output: "blocked by policy", isError: true, metadata: { rule: "no-ddl" } } } : undefined) }
  const res = await client(llm, hooks).run("drop users", { toolkit: await createToolkit({ extraTools: [drop] }) })
  assert.equal(ran, 0)
  assert.deepStrictEqual(res.toolCalls, [{ name: "drop_table", args: { table: "users" }, output: "blocked by policy", isError: true, metadata: { rule: "no-ddl" } }])
  assert.deepStrictEqual(llm.requests[1].json.messages.at(-1), { role: "tool", tool_call_id: "d", content: "blocked by policy" })
})

test("a short-circuited result does not go through afterTool", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("ok") : oaCalls([{ id: "d", name: "x", args: {} }])))
  t.after(() => llm.close())
  let after = 0
  const hooks = { beforeTool: () => ({ result: { output: "cached", isError: false } }), afterTool: () => { after++ } }
  const res = await client(llm, hooks).run("go", { toolkit: await createToolkit({ extraTools: [defineTool({ name: "x", description: "", run: () => "live" })] }) })
  assert.equal(after, 0)
  assert.equal(res.toolCalls[0].output, "cached")
})

test("afterTool replaces the result; returning nothing keeps it", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("ok") : oaCalls([{ id: "s", name: "secret", args: {} }, { id: "p", name: "public", args: {} }])))
  t.after(() => llm.close())
  const secret = defineTool({ name: "secret", description: "", run: () => "token=abc123" })
  const pub = defineTool({ name: "public", description: "", run: () => "hello" })
  const seen = []
  const hooks = {
    afterTool: (ev) => {
      seen.push(ev)
      if (ev.result.output.includes("token=")) return { result: { output: "[redacted]", isError: false, metadata: { redacted: true } } }
    },
  }
  const res = await client(llm, hooks).run("go", { toolkit: await createToolkit({ extraTools: [secret, pub] }) })
  assert.deepStrictEqual(seen.map((e) => [e.name, e.result.output, e.id, e.turn]).sort(), [["public", "hello", "p", 0], ["secret", "token=abc123", "s", 0]])
  assert.deepStrictEqual(res.toolCalls, [
    { name: "secret", args: {}, output: "[redacted]", isError: false, metadata: { redacted: true } },
    { name: "public", args: {}, output: "hello", isError: false, metadata: undefined },
  ])
  assert.equal(llm.requests[1].json.messages.find((m) => m.tool_call_id === "s").content, "[redacted]")
})

test("hooks are called with the hooks object as this", async (t) => {
  const llm = await startLLM([oaText("ok")])
  t.after(() => llm.close())
  const hooks = { count: 0, beforeLLM() { this.count++ } }
  await client(llm, hooks).run("hi", { toolkit: await createToolkit({}) })
  assert.equal(hooks.count, 1)
})

test("unset hooks are fine: an empty hooks object runs the loop normally", async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("fine") : oaCalls([{ id: "c", name: "x", args: {} }])))
  t.after(() => llm.close())
  const res = await client(llm, {}).run("go", { toolkit: await createToolkit({ extraTools: [defineTool({ name: "x", description: "", run: () => "y" })] }) })
  assert.equal(res.text, "fine")
  assert.equal(res.toolCalls[0].output, "y")
})

test("a non-function hook is accepted at createClient and fails the run when called, with a TypeError naming it", async (t) => {
  assert.doesNotThrow(() => createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", hooks: { afterTool: "log" } }))
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("never") : oaCalls([{ id: "c", name: "x", args: {} }])))
  t.after(() => llm.close())
  const c = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", hooks: { afterTool: "log" } })
  const tk = await createToolkit({ extraTools: [defineTool({ name: "x", description: "", run: () => "y" })] })
  await assert.rejects(c.run("go", { toolkit: tk }), (e) => e instanceof TypeError && e.message.includes("hooks.afterTool"))
})

class PolicyError extends Error {
  constructor(message, rule) {
    super(message)
    this.name = "PolicyError"
    this.rule = rule
  }
}

for (const hookName of ["beforeLLM", "afterLLM", "beforeTool", "afterTool"]) {
  for (const flavour of ["sync", "async"]) {
    test(`a ${flavour} ${hookName} that throws rejects the run with that very error`, async (t) => {
      const llm = await startLLM((req) => (sawToolResult(req) ? oaText("never") : oaCalls([{ id: "c", name: "x", args: {} }])))
      t.after(() => llm.close())
      const err = new PolicyError(`${hookName} refused`, "R-7")
      const fn = flavour === "sync" ? () => { throw err } : async () => { await null; throw err }
      const tk = await createToolkit({ extraTools: [defineTool({ name: "x", description: "", run: () => "y" })] })
      await assert.rejects(client(llm, { [hookName]: fn }).run("go", { toolkit: tk }), (e) => {
        assert.equal(e, err)
        assert.ok(e instanceof PolicyError)
        assert.equal(e.message, `${hookName} refused`)
        assert.equal(e.rule, "R-7")
        return true
      })
    })
  }
}
