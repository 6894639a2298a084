// SPEC §10 through client.run: pending / waitFor / the loop rule.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool, pending, authRequired, pendingOf } from "../index.js"
import { startLLM, oaText, oaCalls, sawToolResult, anReply, text, toolUse } from "./support/llm.mjs"

const client = (llm, extra = {}) => createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", ...extra })

/** An endpoint that asks for `calls` first and answers with `final` once it sees tool results. */
const scripted = (calls, final = "all done") => startLLM((req) => (sawToolResult(req) ? oaText(final) : oaCalls(calls)))

test("no waitFor: the run halts with status pending on the first suspension in call order", async (t) => {
  const llm = await scripted([
    { id: "c1", name: "fine", args: { v: 1 } },
    { id: "c2", name: "needs_ok", args: { amount: 10 } },
    { id: "c3", name: "needs_login", args: {} },
  ])
  t.after(() => llm.close())
  const fine = defineTool({ name: "fine", description: "", run: () => "fine result" })
  // The second suspension settles first; the first in call order must still win.
  const needsOk = defineTool({ name: "needs_ok", description: "", run: async () => { await new Promise((r) => setTimeout(r, 30)); return pending({ kind: "approval", prompt: "Approve a payment of 10?", data: { amount: 10 } }) } })
  const needsLogin = defineTool({ name: "needs_login", description: "", run: () => authRequired("https://sso.test/auth") })
  const tk = await createToolkit({ extraTools: [fine, needsOk, needsLogin] })
  const res = await client(llm).run("pay", { toolkit: tk })

  assert.equal(res.status, "pending")
  assert.equal(res.pending.kind, "approval")
  assert.equal(res.pending.prompt, "Approve a payment of 10?")
  assert.deepStrictEqual(res.pending.data, { amount: 10 })
  assert.match(res.pending.id, /^pnd-[0-9a-z]+-\d+$/)
  assert.deepStrictEqual(Object.keys(res.pending), ["kind", "prompt", "data", "id"])
  assert.equal(res.text, "Approve a payment of 10?")
  assert.equal(res.limit, undefined)
  assert.equal(llm.requests.length, 1, "no further model call after the halt")
  assert.equal(res.turns, 1)

  // Calls before the halting one are recorded; the halting one's metadata is undefined (the key
  // is there, as in the reference's record); later ones are absent.
  assert.deepStrictEqual(res.toolCalls, [
    { name: "fine", args: { v: 1 }, output: "fine result", isError: false, metadata: undefined },
    { name: "needs_ok", args: { amount: 10 }, output: "Approve a payment of 10?", isError: true, metadata: undefined },
  ])
  assert.ok("metadata" in res.toolCalls[1] && res.toolCalls[1].metadata === undefined)
  assert.equal(res.toolCallCount, 2)
  const toolMsgs = res.messages.filter((m) => m.role === "tool")
  assert.deepStrictEqual(toolMsgs, [
    { role: "tool", tool_call_id: "c1", content: "fine result" },
    { role: "tool", tool_call_id: "c2", content: "Approve a payment of 10?" },
  ])
})

test("no waitFor, a single suspending call: only that call is recorded", async (t) => {
  const llm = await scripted([{ id: "only", name: "gate", args: { x: 1 } }])
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "gate", description: "", run: () => pending({ id: "req-fixed", kind: "input", prompt: "Your name?", url: "https://form.test/1" }) })] })
  const res = await client(llm).run("start", { toolkit: tk })
  assert.equal(res.status, "pending")
  assert.deepStrictEqual(res.pending, { id: "req-fixed", kind: "input", prompt: "Your name?", url: "https://form.test/1" })
  assert.equal(res.text, "Your name?", "text is the prompt, without the url")
  assert.deepStrictEqual(res.toolCalls, [{ name: "gate", args: { x: 1 }, output: "Your name?", isError: true, metadata: undefined }])
  assert.equal(pendingOf(res.toolCalls[0]), undefined)
})

test("waitFor ok: the same call is retried once with ctx.answer and the run completes", async (t) => {
  const llm = await scripted([{ id: "d1", name: "deploy", args: { service: "api" } }], "Deployed.")
  t.after(() => llm.close())
  const attempts = []
  const deploy = defineTool({
    name: "deploy",
    description: "",
    run: (args, ctx) => {
      attempts.push({ args, ctx })
      if (!ctx?.answer) return pending({ id: "dep-1", kind: "input", prompt: "Which region?", data: { choices: ["eu", "us"] } })
      return `deployed ${args.service} to ${ctx.answer.data.region}`
    },
  })
  const asked = []
  const answer = { id: "dep-1", ok: true, data: { region: "eu", by: { user: "ops", at: 1700000000 } } }
  const tk = await createToolkit({ extraTools: [deploy] })
  const res = await client(llm, { waitFor: async (request) => { asked.push(request); return answer } }).run("deploy api", { toolkit: tk })

  assert.deepStrictEqual(asked, [{ id: "dep-1", kind: "input", prompt: "Which region?", data: { choices: ["eu", "us"] } }])
  assert.equal(attempts.length, 2)
  assert.equal(attempts[0].ctx, undefined, "the first attempt has no answer")
  assert.deepStrictEqual(attempts[1].args, { service: "api" }, "same args on the retry")
  assert.deepStrictEqual(attempts[1].ctx, { answer }, "the retry carries exactly the answer")
  assert.equal(res.status, "done")
  assert.equal(res.text, "Deployed.")
  assert.equal(res.pending, undefined)
  assert.deepStrictEqual(res.toolCalls, [{ name: "deploy", args: { service: "api" }, output: "deployed api to eu", isError: false, metadata: undefined }])
  assert.deepStrictEqual(llm.requests[1].json.messages.at(-1), { role: "tool", tool_call_id: "d1", content: "deployed api to eu" })
})

test("waitFor ok with an authorization suspension: the retry sees the world changed", async (t) => {
  const llm = await scripted([{ id: "b1", name: "balance", args: {} }], "You have 12.")
  t.after(() => llm.close())
  let loggedIn = false
  const balance = defineTool({ name: "balance", description: "", run: () => (loggedIn ? "12" : authRequired("https://bank.test/login")) })
  const tk = await createToolkit({ extraTools: [balance] })
  const res = await client(llm, { waitFor: async (r) => { assert.equal(r.kind, "authorization"); loggedIn = true; return { id: r.id, ok: true } } }).run("balance?", { toolkit: tk })
  assert.equal(res.status, "done")
  assert.equal(res.toolCalls[0].output, "12")
})

test("waitFor {ok:false}: declined/expired error result, the loop continues", async (t) => {
  const llm = await scripted([{ id: "r1", name: "refund", args: { id: 7 } }], "Refund was not approved.")
  t.after(() => llm.close())
  let runs = 0
  const refund = defineTool({ name: "refund", description: "", run: () => { runs++; return pending({ kind: "approval", prompt: "Refund order 7?" }) } })
  const tk = await createToolkit({ extraTools: [refund] })
  const res = await client(llm, { waitFor: async (r) => ({ id: r.id, ok: false, reason: "declined" }) }).run("refund 7", { toolkit: tk })
  assert.equal(runs, 1, "a declined call is not retried")
  assert.equal(res.status, "done")
  assert.equal(res.text, "Refund was not approved.")
  assert.deepStrictEqual(res.toolCalls, [{ name: "refund", args: { id: 7 }, output: "declined/expired: Refund order 7?", isError: true, metadata: undefined }])
  assert.deepStrictEqual(llm.requests[1].json.messages.at(-1), { role: "tool", tool_call_id: "r1", content: "declined/expired: Refund order 7?" })
})

test("a retry that suspends again is fed back as unresolved, never asked twice", async (t) => {
  const llm = await scripted([{ id: "s1", name: "stubborn", args: {} }], "Gave up.")
  t.after(() => llm.close())
  let runs = 0
  const stubborn = defineTool({ name: "stubborn", description: "", run: () => { runs++; return pending({ kind: "approval", prompt: `sign form #${runs}` }) } })
  let asked = 0
  const tk = await createToolkit({ extraTools: [stubborn] })
  const res = await client(llm, { waitFor: async (r) => { asked++; return { id: r.id, ok: true } } }).run("sign", { toolkit: tk })
  assert.equal(asked, 1)
  assert.equal(runs, 2)
  assert.equal(res.status, "done")
  assert.deepStrictEqual(res.toolCalls, [{ name: "stubborn", args: {}, output: "unresolved: sign form #1", isError: true, metadata: undefined }])
})

test("with waitFor, concurrent suspensions are each resolved", async (t) => {
  const llm = await scripted([{ id: "a", name: "ask", args: { q: "first" } }, { id: "b", name: "ask", args: { q: "second" } }], "ok")
  t.after(() => llm.close())
  const ask = defineTool({ name: "ask", description: "", run: (args, ctx) => (ctx?.answer ? `${args.q}=${ctx.answer.data.v}` : pending({ kind: "input", prompt: `value for ${args.q}?` })) })
  const tk = await createToolkit({ extraTools: [ask] })
  const prompts = []
  const res = await client(llm, { waitFor: async (r) => { prompts.push(r.prompt); return { id: r.id, ok: true, data: { v: r.prompt.length } } } }).run("go", { toolkit: tk })
  assert.deepStrictEqual(prompts.sort(), ["value for first?", "value for second?"])
  assert.deepStrictEqual(res.toolCalls.map((c) => c.output), ["first=16", "second=17"])
  assert.equal(res.status, "done")
})

test("a waitFor that resolves to nothing counts as a decline", async (t) => {
  const llm = await scripted([{ id: "n1", name: "ask", args: {} }], "fine")
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "ask", description: "", run: () => pending({ kind: "input", prompt: "Name?" }) })] })
  const res = await client(llm, { waitFor: async () => undefined }).run("go", { toolkit: tk })
  assert.deepStrictEqual(res.toolCalls, [{ name: "ask", args: {}, output: "declined/expired: Name?", isError: true, metadata: undefined }])
})

test("waitFor is called as a method of the client options (this = options)", async (t) => {
  // The reference calls opts.waitFor(request), so a method-style waitFor can read its options.
  const llm = await scripted([{ id: "m1", name: "gate", args: {} }], "ok")
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "gate", description: "", run: (_a, ctx) => (ctx?.answer ? `approved by ${ctx.answer.data.by}` : pending({ kind: "approval", prompt: "?" })) })] })
  const options = {
    baseUrl: llm.url, style: "openai", model: "m", apiKey: "k",
    approver: "on-call",
    async waitFor(request) { return { id: request.id, ok: true, data: { by: this?.approver } } },
  }
  const res = await createClient(options).run("go", { toolkit: tk })
  assert.equal(res.toolCalls[0].output, "approved by on-call")
})

test("a suspension raised by beforeTool halts the run without running the tool", async (t) => {
  const llm = await scripted([{ id: "x1", name: "wire_money", args: { to: "acct-9" } }])
  t.after(() => llm.close())
  let ran = false
  const wire = defineTool({ name: "wire_money", description: "", run: () => { ran = true; return "sent" } })
  const tk = await createToolkit({ extraTools: [wire] })
  const guard = { beforeTool: ({ name, args }) => (name === "wire_money" ? { result: pending({ kind: "approval", prompt: `Wire to ${args.to}?` }) } : undefined) }
  const res = await client(llm, { hooks: guard }).run("pay acct-9", { toolkit: tk })
  assert.equal(ran, false)
  assert.equal(res.status, "pending")
  assert.equal(res.pending.prompt, "Wire to acct-9?")
  assert.equal(res.text, "Wire to acct-9?")
  assert.deepStrictEqual(res.toolCalls, [{ name: "wire_money", args: { to: "acct-9" }, output: "Wire to acct-9?", isError: true, metadata: undefined }])
})

test("afterTool skips the suspension and sees the resolved retry", async (t) => {
  const llm = await scripted([{ id: "q1", name: "quote", args: { sym: "XYZ" } }], "Quoted.")
  t.after(() => llm.close())
  const quote = defineTool({ name: "quote", description: "", run: (args, ctx) => (ctx?.answer ? `XYZ: ${ctx.answer.data.price}` : pending({ kind: "input", prompt: "Price?" })) })
  const afterSeen = []
  const hooks = {
    afterTool: (ev) => {
      afterSeen.push(ev)
      return { result: { output: `${ev.result.output} (checked)`, isError: false } }
    },
  }
  const tk = await createToolkit({ extraTools: [quote] })
  const res = await client(llm, { hooks, waitFor: async (r) => ({ id: r.id, ok: true, data: { price: 42 } }) }).run("quote", { toolkit: tk })
  assert.equal(afterSeen.length, 1, "afterTool is called once, for the resolved result only")
  assert.deepStrictEqual(afterSeen[0], { name: "quote", args: { sym: "XYZ" }, result: { output: "XYZ: 42", isError: false }, id: "q1", turn: 0 })
  assert.deepStrictEqual(res.toolCalls, [{ name: "quote", args: { sym: "XYZ" }, output: "XYZ: 42 (checked)", isError: false, metadata: undefined }])
})

test("afterTool is not called at all on a halting suspension", async (t) => {
  const llm = await scripted([{ id: "h1", name: "halt", args: {} }])
  t.after(() => llm.close())
  let after = 0
  const tk = await createToolkit({ extraTools: [defineTool({ name: "halt", description: "", run: () => pending({ kind: "approval", prompt: "ok?" }) })] })
  const res = await client(llm, { hooks: { afterTool: () => { after++ } } }).run("go", { toolkit: tk })
  assert.equal(res.status, "pending")
  assert.equal(after, 0)
})

test("anthropic style: a halt keeps the tool_result block in one user message", async (t) => {
  const llm = await startLLM([anReply([text("checking"), toolUse("u1", "lock", { door: "front" })], { input_tokens: 3, output_tokens: 4 })])
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "lock", description: "", run: () => pending({ kind: "approval", prompt: "Lock the front door?" }) })] })
  const c = createClient({ baseUrl: llm.url, style: "anthropic", model: "c", apiKey: "k" })
  const res = await c.run("lock up", { toolkit: tk })
  assert.equal(res.status, "pending")
  assert.equal(res.text, "Lock the front door?")
  assert.deepStrictEqual(res.messages.at(-1), { role: "user", content: [{ type: "tool_result", tool_use_id: "u1", content: "Lock the front door?", is_error: true }] })
  assert.deepStrictEqual(res.usage, { promptTokens: 3, completionTokens: 4, totalTokens: 7 })
})

test("resuming a pending run with its transcript as history", async (t) => {
  let phase = 0
  const llm = await startLLM((req) => {
    if (req.json.messages.at(-1).content === "approved, continue") return oaText("Resumed and finished.")
    phase++
    return oaCalls([{ id: "p1", name: "ship", args: {} }])
  })
  t.after(() => llm.close())
  const tk = await createToolkit({ extraTools: [defineTool({ name: "ship", description: "", run: () => pending({ kind: "approval", prompt: "Ship it?" }) })] })
  const c = client(llm)
  const first = await c.run("ship", { toolkit: tk })
  assert.equal(first.status, "pending")
  const second = await c.run("approved, continue", { toolkit: tk, history: first.messages })
  assert.equal(second.status, "done")
  assert.equal(second.text, "Resumed and finished.")
  // The history goes out as the transcript was, but for a tool-call turn's null content, sent as "" (COMPAT).
  const sent = first.messages.map((m) => (m.role === "assistant" && m.tool_calls && m.content === null ? { ...m, content: "" } : m))
  assert.deepStrictEqual(llm.requests[1].json.messages.slice(0, first.messages.length), sent)
  assert.equal(first.messages[1].content, null)
  assert.equal(phase, 1)
})
