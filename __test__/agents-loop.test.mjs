// SPEC §7D-§7E: the completion gate, the guardrails and agents.Loop, with a scripted fetch in
// place of the model (the only stand-in: toolkits, builtins and the client are the real ones).
import test from "node:test"
import assert from "node:assert/strict"
import { agents, createToolkit, defineTool, pending } from "../index.js"

const { Loop, runGated, allTodosDone, guardedHooks } = agents

/** A fetch answering `replies` (assistant messages) in order, the last one over and over. */
function model(replies) {
  const bodies = []
  const fetch = async (_url, init) => {
    bodies.push(JSON.parse(init.body))
    const message = replies[Math.min(bodies.length - 1, replies.length - 1)]
    const finish = message.tool_calls ? "tool_calls" : "stop"
    return new Response(
      JSON.stringify({
        choices: [{ index: 0, message, finish_reason: finish }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      }),
      { status: 200, headers: { "content-type": "application/json" } },
    )
  }
  return { fetch, bodies }
}

const reply = (content) => ({ role: "assistant", content })
const calls = (...list) => ({
  role: "assistant",
  content: null,
  tool_calls: list.map(([id, name, args], i) => ({
    id: id ?? `c${i}`,
    type: "function",
    function: { name, arguments: JSON.stringify(args ?? {}) },
  })),
})
const plan = (todos) => calls(["p1", "todowrite", { todos }])

const clientOptions = (fetch, extra = {}) => ({
  baseUrl: "http://model.invalid/v1",
  style: "openai",
  model: "base-model",
  apiKey: "k",
  fetch,
  ...extra,
})

const onlyTodowrite = () =>
  createToolkit({
    builtins: {
      tools: {
        todowrite: true,
        bash: false,
        read: false,
        write: false,
        edit: false,
        glob: false,
        grep: false,
        webfetch: false,
        apply_patch: false,
        question: false,
      },
    },
  })

/** An agent as Loop reads one: a name and a spec. */
const agent = (name, spec) => ({ name, spec })

const RETRY = (reason) => `Your work did not verify: ${reason}. Fix it and finish.`

test("no gate and no guardrails: one plain run, reported done with no stop reason", async () => {
  const { fetch, bodies } = model([reply("hello")])
  const tk = await createToolkit({ builtins: false })
  const loop = new Loop(agent("plain", { does: "answers", soul: "You are brief." }), clientOptions(fetch), tk)
  const out = await loop.run("hi")
  assert.equal(out.status, "done")
  assert.equal(out.text, "hello")
  assert.equal(out.attempts, 1)
  assert.equal(out.turns, 1)
  assert.ok(!("stoppedBy" in out))
  assert.equal(out.result.text, "hello")
  assert.equal(bodies.length, 1)
  assert.deepEqual(bodies[0].messages[0], { role: "system", content: "You are brief." })
  assert.equal(loop.status, "idle")
  await tk.close()
})

test("an open todo sends the agent back with the reason; closing it passes; turns and usage are summed", async () => {
  const { fetch, bodies } = model([
    plan([
      { id: "1", text: "draft", completed: true },
      { id: "2", text: "proofread", completed: false },
    ]),
    reply("I think I am finished"),
    plan([
      { id: "1", text: "draft", completed: true },
      { id: "2", text: "proofread", completed: true },
    ]),
    reply("all done"),
  ])
  const tk = await onlyTodowrite()
  const loop = new Loop(
    agent("gated", { does: "plans", completion: { verify: allTodosDone, maxAttempts: 3 } }),
    clientOptions(fetch),
    tk,
  )
  const out = await loop.run("write it")
  assert.equal(out.status, "done")
  assert.equal(out.text, "all done")
  assert.equal(out.attempts, 2)
  // The retry is the next user turn of the same conversation.
  assert.equal(bodies.length, 4)
  const retried = bodies[2].messages
  assert.deepEqual(retried[0], { role: "user", content: "write it" })
  assert.deepEqual(retried.at(-1), { role: "user", content: RETRY("1 item(s) still open: proofread") })
  // Both attempts count, not only the last one.
  assert.equal(out.result.turns, 4)
  assert.deepEqual(out.result.usage, { promptTokens: 12, completionTokens: 8, totalTokens: 20 })
  assert.equal(out.result.toolCalls.length, 2)
  assert.equal(out.result.toolCallCount, 2)
  assert.equal(out.turns, 4)
  assert.equal(loop.turns, 4)
  await tk.close()
})

test("a run that never verifies stops as incomplete after maxAttempts, naming the reason", async () => {
  const { fetch, bodies } = model([reply("done!")])
  const tk = await createToolkit({ builtins: false })
  let judged = 0
  const loop = new Loop(
    agent("never", {
      does: "x",
      completion: {
        verify: () => {
          judged++
          return { ok: false, reason: "always red" }
        },
        maxAttempts: 2,
      },
    }),
    clientOptions(fetch),
    tk,
  )
  const out = await loop.run("go")
  assert.equal(out.status, "incomplete")
  assert.equal(out.attempts, 2)
  assert.equal(judged, 2)
  assert.equal(bodies.length, 2)
  assert.equal(out.stoppedBy, "completion.verify failed 2×: always red")
  assert.equal(out.text, out.stoppedBy)
  assert.equal(out.result.limit, "completion")
  assert.equal(out.result.status, "incomplete")
  assert.equal(out.result.turns, 2)
  assert.equal(loop.status, "incomplete")
  await tk.close()
})

test("a verdict without a reason reads as unspecified; an async verify is awaited", async () => {
  const { fetch } = model([reply("ok")])
  const tk = await createToolkit({ builtins: false })
  const completion = { verify: async () => ({ ok: false }), maxAttempts: 1 }
  const out = await new Loop(agent("a", { does: "x", completion }), clientOptions(fetch), tk).run("go")
  assert.equal(out.stoppedBy, "completion.verify failed 1×: unspecified")
  await tk.close()
})

test("maxAttempts must be a whole number of at least 1, checked before verify and before any model call", async () => {
  const { fetch, bodies } = model([reply("hi")])
  const tk = await createToolkit({ builtins: false })
  const ok = () => ({ ok: true })
  for (const maxAttempts of [0, -2, 1.5, "2", undefined, Number.NaN, Infinity]) {
    const loop = new Loop(agent("bad", { does: "x", completion: { verify: ok, maxAttempts } }), clientOptions(fetch), tk)
    await assert.rejects(loop.run("go"), (e) => {
      assert.equal(e.constructor, Error)
      assert.equal(e.message, "toolnexus: completion.maxAttempts must be an integer >= 1")
      return true
    })
    assert.equal(loop.status, "error")
  }
  // Both wrong: the count is reported first.
  await assert.rejects(runGated(async () => assert.fail("asked"), "go", { maxAttempts: 0 }), {
    message: "toolnexus: completion.maxAttempts must be an integer >= 1",
  })
  await assert.rejects(runGated(async () => assert.fail("asked"), "go", { maxAttempts: 2, verify: "yes" }), (e) => {
    assert.equal(e.constructor, Error)
    assert.equal(e.message, "toolnexus: completion.verify is required")
    return true
  })
  assert.equal(bodies.length, 0)
  await tk.close()
})

test("with no todo list at all the built-in verifier passes the first attempt", async () => {
  const { fetch } = model([reply("answered without a plan")])
  const tk = await onlyTodowrite()
  const loop = new Loop(
    agent("noplan", { does: "x", completion: { verify: allTodosDone, maxAttempts: 2 } }),
    clientOptions(fetch),
    tk,
  )
  const out = await loop.run("go")
  assert.equal(out.status, "done")
  assert.equal(out.attempts, 1)
  await tk.close()
})

test("the gate judges every attempt's calls: a retry that drops its plan does not escape", async () => {
  const { fetch } = model([plan([{ id: "1", text: "ship it", completed: false }]), reply("finished, honest")])
  const tk = await onlyTodowrite()
  const seen = []
  const verify = (r) => {
    seen.push(r.toolCalls.map((c) => c.name))
    return allTodosDone(r)
  }
  const loop = new Loop(agent("escaper", { does: "x", completion: { verify, maxAttempts: 2 } }), clientOptions(fetch), tk)
  const out = await loop.run("go")
  assert.equal(out.status, "incomplete")
  assert.equal(out.stoppedBy, "completion.verify failed 2×: 1 item(s) still open: ship it")
  assert.deepEqual(seen, [["todowrite"], ["todowrite"]])
  await tk.close()
})

test("a turn limit during a retry is reported with the failed verdict attached", async () => {
  // The first answer carries no text, so the second attempt, cut off after its tool call,
  // has no text to finish with and stops as incomplete.
  const { fetch } = model([reply(""), calls(["c1", "look"])])
  const look = defineTool({ name: "look", description: "looks", run: () => "seen" })
  const tk = await createToolkit({ builtins: false, extraTools: [look] })
  const loop = new Loop(
    agent("capped", { does: "x", completion: { verify: () => ({ ok: false, reason: "tests red" }), maxAttempts: 3 } }),
    clientOptions(fetch, { maxTurns: 1 }),
    tk,
  )
  const out = await loop.run("go")
  assert.equal(out.status, "incomplete")
  assert.equal(out.attempts, 2)
  assert.equal(out.stoppedBy, "run reported incomplete")
  assert.equal(out.result.limit, "maxTurns")
  assert.equal(out.text, " [while verifying: attempt 2 last failed: tests red]")
  assert.equal(out.result.turns, 2)
  await tk.close()
})

test("a suspended run is handed back as pending, never judged", async () => {
  const { fetch } = model([calls(["c1", "approve"])])
  const approve = defineTool({
    name: "approve",
    description: "needs a human",
    run: () => pending({ kind: "approval", prompt: "Ship it?" }),
  })
  const tk = await createToolkit({ builtins: false, extraTools: [approve] })
  let judged = 0
  const completion = { verify: () => (judged++, { ok: false, reason: "no" }), maxAttempts: 3 }
  const loop = new Loop(agent("waits", { does: "x", completion }), clientOptions(fetch), tk)
  const out = await loop.run("go")
  assert.equal(out.status, "pending")
  assert.equal(out.stoppedBy, "run reported pending")
  assert.equal(out.result.pending.prompt, "Ship it?")
  assert.equal(out.attempts, 1)
  assert.equal(judged, 0)
  assert.equal(loop.status, "pending")
  await tk.close()
})

test("a model that fails fails the run with its own error, and the loop reads error", async () => {
  const boom = new Error("the wire is down")
  const tk = await createToolkit({ builtins: false })
  const fetch = async () => {
    throw boom
  }
  const completion = { verify: () => ({ ok: true }), maxAttempts: 2 }
  const loop = new Loop(agent("down", { does: "x", completion }), clientOptions(fetch, { retries: 0 }), tk)
  await assert.rejects(loop.run("go"), (e) => e === boom)
  assert.equal(loop.status, "error")
  await tk.close()
})

test("runGated without a completion is the ask itself; a throwing verify fails the gate", async () => {
  const result = { text: "t", toolCalls: [], status: "done" }
  assert.equal(await runGated(async (p) => (p === "go" ? result : null), "go", undefined), result)
  const broken = new TypeError("verify broke")
  const ask = async () => ({ text: "x", messages: [], toolCalls: [], turns: 1, usage: {}, model: "m", status: "done" })
  await assert.rejects(
    runGated(ask, "go", {
      maxAttempts: 2,
      verify() {
        throw broken
      },
    }),
    (e) => e === broken,
  )
  // verify is called as a method of the completion.
  const completion = {
    maxAttempts: 1,
    verify(r) {
      return { ok: this === completion && r.text === "x" }
    },
  }
  assert.equal((await runGated(ask, "go", completion)).status, "done")
})

test("allTodosDone reads the latest todowrite list", () => {
  const todo = (todos) => ({ name: "todowrite", args: {}, output: "", isError: false, metadata: { todos } })
  assert.deepEqual(allTodosDone({ toolCalls: [] }), { ok: true })
  const open = todo([{ text: "a", completed: true }, { text: "b" }, { text: "c", completed: false }])
  assert.deepEqual(allTodosDone({ toolCalls: [open] }), { ok: false, reason: "2 item(s) still open: b; c" })
  assert.deepEqual(allTodosDone({ toolCalls: [open, todo([{ text: "a", completed: true }])] }), { ok: true })
  assert.deepEqual(allTodosDone({ toolCalls: [open, { name: "todowrite", output: "x" }] }), { ok: true })
})

test("guardrails: the first refusal wins and later ones are not consulted", async () => {
  const order = []
  const hooks = guardedHooks(
    [
      (ev) => (order.push("first"), ev.name === "danger" ? "policy: no" : "allow"),
      () => (order.push("second"), undefined),
    ],
    undefined,
  )
  const denied = await hooks.beforeTool({ name: "danger", args: {}, turn: 0 })
  assert.deepEqual(denied, { result: { output: "denied: policy: no", isError: true } })
  assert.deepEqual(order, ["first"])
  assert.equal(await hooks.beforeTool({ name: "safe", args: {}, turn: 0 }), undefined)
  assert.deepEqual(order, ["first", "first", "second"])
})

test("guardrails: the earlier beforeTool runs only when all allow, and the other hooks stay", async () => {
  let priorRuns = 0
  const afterTool = () => undefined
  const hooks = guardedHooks([(ev) => (ev.name === "danger" ? "nope" : "allow")], {
    beforeTool: async ({ args }) => {
      priorRuns++
      return { args: { ...args, checked: true } }
    },
    afterTool,
  })
  assert.equal(hooks.afterTool, afterTool)
  await hooks.beforeTool({ name: "danger", args: {}, turn: 0 })
  assert.equal(priorRuns, 0)
  assert.deepEqual(await hooks.beforeTool({ name: "safe", args: { a: 1 }, turn: 0 }), { args: { a: 1, checked: true } })
  assert.equal(priorRuns, 1)
})

test("guardrails: none given leaves the hooks as they were", () => {
  const hooks = { beforeTool: () => undefined }
  assert.equal(guardedHooks(undefined, hooks), hooks)
  assert.equal(guardedHooks([], hooks), hooks)
  assert.equal(guardedHooks([], undefined), undefined)
})

test("a guardrail on the agent keeps a refused tool from running; the model reads the refusal", async () => {
  const { fetch, bodies } = model([calls(["c1", "wipe"], ["c2", "list"]), reply("ok")])
  const ran = []
  const wipe = defineTool({ name: "wipe", description: "", run: () => (ran.push("wipe"), "wiped") })
  const list = defineTool({ name: "list", description: "", run: () => (ran.push("list"), "a, b") })
  const tk = await createToolkit({ builtins: false, extraTools: [wipe, list] })
  const seen = []
  const spec = {
    does: "x",
    guardrails: [(ev) => (seen.push([ev.name, ev.id, ev.turn]), ev.name === "wipe" ? "destructive" : "allow")],
  }
  const out = await new Loop(agent("careful", spec), clientOptions(fetch), tk).run("tidy up")
  assert.equal(out.status, "done")
  assert.deepEqual(ran, ["list"])
  assert.deepEqual(seen, [
    ["wipe", "c1", 0],
    ["list", "c2", 0],
  ])
  assert.deepEqual(out.result.toolCalls[0], { name: "wipe", args: {}, output: "denied: destructive", isError: true, metadata: undefined })
  const toolMessage = bodies[1].messages.find((m) => m.tool_call_id === "c1")
  assert.equal(toolMessage.content, "denied: destructive")
  await tk.close()
})

test("the spec's hooks win over the options' hooks, and are still guarded", async () => {
  const { fetch } = model([calls(["c1", "list"]), reply("ok")])
  const list = defineTool({ name: "list", description: "", run: () => "a, b" })
  const tk = await createToolkit({ builtins: false, extraTools: [list] })
  const used = []
  const spec = {
    does: "x",
    guardrails: [() => "allow"],
    hooks: { beforeTool: () => void used.push("spec") },
  }
  const options = clientOptions(fetch, { hooks: { beforeTool: () => void used.push("options") } })
  await new Loop(agent("h", spec), options, tk).run("go")
  assert.deepEqual(used, ["spec"])
  await tk.close()
})

test("a per-call model reaches that request only", async () => {
  const { fetch, bodies } = model([reply("a"), reply("b")])
  const tk = await createToolkit({ builtins: false })
  const loop = new Loop(agent("m", { does: "x" }), clientOptions(fetch, { requestParams: { temperature: 0 } }), tk)
  await loop.run("one", { model: "override-model" })
  await loop.run("two")
  assert.equal(bodies[0].model, "override-model")
  assert.equal(bodies[0].temperature, 0)
  assert.equal(bodies[1].model, "base-model")
  await tk.close()
})

test("turns add up over runs; status is idle before, running during and idle after", async () => {
  const { fetch } = model([reply("a")])
  const tk = await createToolkit({ builtins: false })
  const loop = new Loop(agent("t", { does: "x" }), clientOptions(fetch), tk)
  assert.equal(loop.status, "idle")
  assert.equal(loop.turns, 0)
  const running = loop.run("one")
  assert.equal(loop.status, "running")
  await running
  assert.equal(loop.turns, 1)
  const second = await loop.run("two")
  assert.equal(loop.turns, 2)
  assert.equal(second.turns, 2)
  assert.equal(loop.status, "idle")
  await tk.close()
})
