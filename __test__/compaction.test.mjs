// SPEC §7F: agents.compactor as a beforeLLM hook, alone and inside a real client run.
import test from "node:test"
import assert from "node:assert/strict"
import { agents, createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls, anReply, text, toolUse } from "./support/llm.mjs"

const PREFIX = "[Summary of earlier conversation]\n"
const FLUSH =
  "Before continuing: if anything from earlier is worth keeping, save it with the memory tool now — the earlier transcript is about to be summarized."
const say = (role, content) => ({ role, content })

test("estimateTokens is ceil(JSON length / 4) per message, summed", () => {
  assert.equal(agents.estimateTokens([say("user", "hi")]), 8)
  assert.equal(agents.estimateTokens([say("user", "hi"), say("assistant", "yo")]), 8 + 9)
  assert.equal(agents.estimateTokens([]), 0)
})

test("at or below maxTokens the hook answers undefined and never summarizes", async () => {
  const messages = [say("system", "s"), say("user", "hi")]
  const hook = agents.compactor({
    maxTokens: agents.estimateTokens(messages),
    summarize: () => assert.fail("summarize under budget"),
  })
  assert.equal(await hook({ messages, tools: [], model: "m", turn: 0 }), undefined)
})

test("over budget: system verbatim, summary, flush reminder, a tail from a user turn", async () => {
  const messages = [
    say("system", "You are terse."),
    say("user", "long ".repeat(50)),
    say("assistant", "longer ".repeat(50)),
    say("user", "recent"),
    say("assistant", "ok"),
  ]
  const seen = []
  const hook = agents.compactor({
    maxTokens: 50,
    keepTail: agents.estimateTokens(messages.slice(3)),
    flushToMemory: true,
    summarize(older) {
      seen.push(older)
      return `about ${older.length}`
    },
  })
  const out = await hook({ messages, tools: [], model: "m", turn: 3 })
  assert.deepStrictEqual(out.messages, [
    messages[0],
    say("system", `${PREFIX}about 2`),
    say("system", FLUSH),
    ...messages.slice(3),
  ])
  assert.deepStrictEqual(seen, [messages.slice(1, 3)])
})

test("tool pairs are never split, OpenAI and Anthropic shapes", async () => {
  const hook = (keepTail) => agents.compactor({ maxTokens: 1, keepTail, summarize: async (o) => String(o.length) })
  const oa = [
    say("user", "old ".repeat(40)),
    say("assistant", "a"),
    say("user", "go"),
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "r" },
    say("assistant", "done"),
  ]
  const out = await hook(agents.estimateTokens(oa.slice(4)))({ messages: oa, tools: [], model: "m", turn: 1 })
  assert.deepStrictEqual(out.messages.slice(1), oa.slice(2))
  const an = [
    say("user", "old ".repeat(40)),
    say("assistant", "a"),
    say("user", "go"),
    { role: "assistant", content: [{ type: "tool_use", id: "u1", name: "t", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "u1", content: "r" }] },
    say("assistant", "done"),
  ]
  const out2 = await hook(agents.estimateTokens(an.slice(4)))({ messages: an, tools: [], model: "m", turn: 1 })
  // The tool_result user turn is not a boundary; the summary goes as a user turn (Anthropic).
  assert.deepStrictEqual(out2.messages, [say("user", `${PREFIX}2`), ...an.slice(2)])
})

test("a custom countTokens and a failing summarize", async () => {
  const calls = []
  const messages = [say("user", "a"), say("assistant", "b"), say("user", "c"), say("assistant", "d")]
  const hook = agents.compactor({
    maxTokens: 3,
    keepTail: 2,
    countTokens: (m) => (calls.push(m.length), m.length),
    summarize: () => "S",
  })
  const out = await hook({ messages, tools: [], model: "m", turn: 0 })
  assert.deepStrictEqual(out.messages, [say("system", `${PREFIX}S`), ...messages.slice(2)])
  assert.equal(calls[0], 4)
  const failing = agents.compactor({ maxTokens: 1, summarize: () => { throw new Error("no model today") } })
  await assert.rejects(failing({ messages, tools: [], model: "m", turn: 0 }), /no model today/)
})

function longHistory() {
  const history = []
  for (let i = 0; i < 6; i++) history.push(say("user", `q${i} ` + "word ".repeat(30)), say("assistant", `a${i} ` + "word ".repeat(30)))
  return history
}

test("inside an OpenAI client run: the provider sees the compacted transcript, the result keeps it", async (t) => {
  const llm = await startLLM((req) => (req.json.messages.some((m) => m.role === "tool") ? oaText("final") : oaCalls([{ id: "c1", name: "note", args: {} }])))
  t.after(() => llm.close())
  const tk = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "note", description: "n", run: () => "noted" })] })
  t.after(() => tk.close())
  const summaries = []
  const hook = agents.compactor({ maxTokens: 200, flushToMemory: true, summarize: (older) => (summaries.push(older.length), "earlier stuff") })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", hooks: { beforeLLM: hook } })
  // A history carries its own system prompt (the client adds one only to an empty history).
  const res = await client.run("next?", { toolkit: tk, history: [say("system", "the soul"), ...longHistory()] })
  assert.equal(res.text, "final")
  const first = llm.requests[0].json.messages
  assert.deepStrictEqual(first.slice(0, 3), [say("system", "the soul"), say("system", `${PREFIX}earlier stuff`), say("system", FLUSH)])
  assert.deepStrictEqual(first.at(-1), say("user", "next?"))
  // The second turn is under budget again: sent as the first turn left it, plus the tool pair.
  const second = llm.requests[1].json.messages
  assert.deepStrictEqual(second.slice(0, first.length), first)
  assert.equal(summaries.length, 1)
  assert.deepStrictEqual(res.messages.slice(0, first.length), first)
})

test("inside an Anthropic client run: no system role inside messages", async (t) => {
  const llm = await startLLM(() => anReply([text("done")]))
  t.after(() => llm.close())
  const tk = await createToolkit({ builtins: false })
  t.after(() => tk.close())
  const hook = agents.compactor({ maxTokens: 200, flushToMemory: true, summarize: () => "earlier" })
  const client = createClient({ baseUrl: llm.url, style: "anthropic", model: "m", apiKey: "k", systemPrompt: "the soul", hooks: { beforeLLM: hook } })
  const res = await client.run("next?", { toolkit: tk, history: longHistory() })
  assert.equal(res.text, "done")
  const body = llm.requests[0].json
  assert.equal(body.system, "the soul")
  assert.deepStrictEqual(body.messages.slice(0, 2), [say("user", `${PREFIX}earlier`), say("user", FLUSH)])
  assert.ok(body.messages.every((m) => m.role !== "system"))
  assert.deepStrictEqual(body.messages.at(-1), say("user", "next?"))
})

test("below budget a run's wire body is byte-identical to one without a compactor", async (t) => {
  const raws = []
  for (const hooks of [undefined, { beforeLLM: agents.compactor({ maxTokens: 1e9, summarize: () => "x" }) }]) {
    const llm = await startLLM([oaText("hi")])
    t.after(() => llm.close())
    const tk = await createToolkit({ builtins: false })
    t.after(() => tk.close())
    const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", systemPrompt: "s", hooks })
    await client.run("hello", { toolkit: tk, history: longHistory() })
    raws.push(llm.requests[0].raw)
  }
  assert.equal(raws[0], raws[1])
})

test("a long transcript with tool groups: compacts, system first, user-started tail, no orphaned tool result", async () => {
  // Thirty question / tool call / tool result / answer groups under a system prompt, well past
  // maxTokens; the summary message starts with the reference's prefix.
  const SYSTEM = "You are Ava. SOUL."
  const PREFIX = "[Summary of earlier conversation]\n"
  const messages = [say("system", SYSTEM)]
  for (let i = 0; i < 30; i++) {
    messages.push(
      say("user", `question ${i} ${"pad ".repeat(40)}`),
      { role: "assistant", content: null, tool_calls: [{ id: `c${i}`, type: "function", function: { name: "lookup", arguments: "{}" } }] },
      { role: "tool", tool_call_id: `c${i}`, content: `result ${i} ${"data ".repeat(40)}` },
      say("assistant", `answer ${i}`),
    )
  }
  for (const flushToMemory of [false, true]) {
    const hook = agents.compactor({ maxTokens: 2000, keepTail: 800, flushToMemory, summarize: (older) => `summarized ${older.length} messages` })
    const out = (await hook({ messages, tools: [], model: "m", turn: 0 }))?.messages
    assert.ok(out && out.length < messages.length)
    assert.deepStrictEqual(out[0], messages[0])
    assert.ok(out[1].content.startsWith(PREFIX))
    const tailAt = flushToMemory ? 3 : 2
    if (flushToMemory) assert.match(out[2].content, /save it with the memory tool/)
    assert.equal(out.find((m) => m.role !== "system").role, "user")
    assert.equal(out[1].content, `${PREFIX}summarized ${messages.length - 1 - (out.length - tailAt)} messages`)
    for (const [i, m] of out.entries()) {
      if (m.role !== "tool") continue
      assert.ok(out.slice(0, i).some((a) => a.tool_calls?.some((c) => c.id === m.tool_call_id)), `orphaned ${m.tool_call_id}`)
    }
  }
})
