// SPEC §7D agent runtime: the five shared subagent fixtures replayed on a virtual clock against a
// scripted LLM, the verbs' documented behaviours, Agent.run/asTool, fromDir + startAgent, and the
// defects of the reference this port does right.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { agents, defineTool, pending, createClient, createToolkit } from "../index.js"
import {
  loadFixture,
  scriptedLLM,
  fixtureTools,
  fixtureRegistry,
  transitionsOf,
  transitionMatches,
  VirtualClock,
  driveClock,
  flush,
  until,
  reply,
  toolCalls,
} from "./support/agents-mock.mjs"

const { AgentRuntime, isVerbError } = agents

const USAGE = { prompt_tokens: 30, completion_tokens: 10, total_tokens: 40 }

/** A runtime over one fixture: its registry, its tools, its scripted LLM, a virtual clock. */
function setup(name, { overrides, runtime, rendezvous, override } = {}) {
  const fx = loadFixture(name)
  const counters = {}
  const tools = fixtureTools(fx.tools, { defineTool, pending }, counters)
  const llm = scriptedLLM(fx.mockLLM, { rendezvous, override })
  const clock = new VirtualClock()
  const rt = new AgentRuntime({ registry: fixtureRegistry(fx, tools, overrides), fetch: llm.fetch, clock, ...runtime })
  return { fx, rt, llm, clock, counters, tools }
}

function spawnOk(rt, parent, name, budget) {
  const h = rt.spawn(parent, name, budget)
  assert.ok(!isVerbError(h), `spawn ${name}: ${h?.error}`)
  return h
}

async function wakeWait(rt, h, prompt) {
  const woke = rt.wake(h, prompt)
  const r = await rt.wait(h)
  return { woke, r }
}

/** Every `expect.transitions` entry against the runtime's trace ("→closed" matches any source). */
function assertTransitions(rt, expected) {
  for (const [id, want] of Object.entries(expected)) {
    const got = transitionsOf(rt.trace, id)
    const why = `${id}: got [${got.join(", ")}] want [${want.join(", ")}]\n${rt.trace.join("\n")}`
    assert.equal(got.length, want.length, why)
    want.forEach((w, i) => assert.ok(transitionMatches(got[i], w), why))
  }
}

const occurrences = (text, needle) => text.split(needle).length - 1
const lastUserText = (call) => {
  const m = [...call.messages].reverse().find((x) => x.role === "user")
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content ?? "")
}

// ===================================================================================
// The shared fixtures
// ===================================================================================

test("subagent-fanout: two task calls in one turn run concurrently, isolated, usage rolled up", async () => {
  const { fx, rt } = setup("subagent-fanout", { rendezvous: { model: "m-explore", size: 2 } })
  const coord = spawnOk(rt, rt.root, fx.run.entry)
  const { woke, r } = await wakeWait(rt, coord, fx.run.prompt)
  assert.deepStrictEqual(woke, { ok: true })
  const ex = fx.expect

  assert.equal(r.status, ex.status)
  assert.equal(r.isError, false)
  for (const s of ex.textContains) assert.ok(r.text.includes(s), r.text)
  for (const [needle, n] of Object.entries(ex.textOccurrences)) assert.equal(occurrences(r.text, needle), n, r.text)
  assert.equal(r.turns, ex.parentTurns)
  assert.deepStrictEqual(coord.children.map((c) => c.id), ex.childIds)
  for (const id of ex.childIds) assert.ok(rt.trace.some((l) => l.startsWith(`${id}: spawned`)), `no spawn line for ${id}`)
  assert.ok(rt.maxObservedConcurrentTurns >= ex.concurrentTurnsObservedAtLeast, String(rt.maxObservedConcurrentTurns))
  assert.equal(coord.usageTotal, ex.parentUsageTotal)
  assert.equal(rt.inspect(coord).tokens, ex.parentUsageTotal)
  if (ex.childrenClosedAfterTask) for (const c of coord.children) assert.equal(c.state, "closed", c.id)
  assertTransitions(rt, ex.transitions)

  // Isolation: the parent's stored transcript gained exactly one tool message per task call,
  // and none of the children's own tool traffic.
  const parentMsgs = (await rt.store.get(coord.id)) ?? []
  const toolMsgs = parentMsgs.filter((m) => m.role === "tool")
  assert.equal(toolMsgs.length, 2)
  assert.ok(toolMsgs.every((m) => String(m.content).startsWith("found:data(x)")), JSON.stringify(toolMsgs))
  assert.ok(!parentMsgs.some((m) => JSON.stringify(m).includes('"lookup"')), "a child's lookup call leaked into the parent")
  await rt.close(rt.root)
})

test("subagent-escalation: the parent's waitFor answers the child's approval inline", async () => {
  const { fx, rt, counters } = setup("subagent-escalation")
  const parent = spawnOk(rt, rt.root, fx.run.entry)
  const { r } = await wakeWait(rt, parent, fx.run.prompt)
  const ex = fx.expect

  assert.equal(r.status, ex.status)
  for (const s of ex.textContains) assert.ok(r.text.includes(s), r.text)
  const child = parent.children[0]
  assert.equal(child.id, "root/approverParent.1/asker.1")
  assert.ok(
    rt.trace.some((l) => l.startsWith(`${child.id}: escalate → ${ex.escalation.answeredBy} answers`)),
    rt.trace.join("\n"),
  )
  // The child's own trace holds the inline round trip, in order.
  const childT = transitionsOf(rt.trace, child.id)
  const at = childT.indexOf(ex.escalation.childTrace[0])
  assert.ok(at >= 0 && childT[at + 1] === ex.escalation.childTrace[1], childT.join(", "))
  assertTransitions(rt, ex.transitions)
  assert.ok(counters.check_secret >= 2, "it suspended, then ran with the Answer")
  await rt.close(rt.root)
})

test("subagent-durable-resume: pending at the root, resume at the leaf, the parent reattaches", async () => {
  const { fx, rt, llm } = setup("subagent-durable-resume")
  const parent = spawnOk(rt, rt.root, fx.run.entry)
  const { r: r1 } = await wakeWait(rt, parent, fx.run.prompt)
  const p1 = fx.phase1_expect

  assert.equal(r1.status, p1.status)
  assert.equal(r1.pending?.kind, p1.pendingKind)
  const dataPath = r1.pending?.data?.path
  assert.ok(Array.isArray(dataPath), JSON.stringify(r1.pending))
  assert.ok(dataPath.join("/").startsWith(p1.pendingDataPathEndsWithin), dataPath.join("/"))
  assert.equal(r1.pending.path, undefined, "the path rides data.path, never the Request itself")
  const views = rt.list()
  assert.equal(views.length, 2)
  for (const v of views) assert.equal(v.state, p1.allHandles, v.id)
  assert.equal(rt.inspect(parent).pending?.id, r1.pending.id)

  // Each conversation ends with its parked turn (the placeholder of the parked call last), where
  // resume takes it up (the reference rewound it and replayed the turn; COMPAT.md).
  for (const h of [parent, ...parent.children]) {
    const stored = (await rt.store.get(h.id)) ?? []
    assert.equal(stored.filter((m) => m.role === "tool").length, 1, `${h.id}: ${JSON.stringify(stored)}`)
    assert.equal(stored.at(-1).content, "approve secret access?", h.id)
  }

  const leaf = parent.children[0]
  const leafTokensBefore = rt.inspect(leaf).tokens
  const leafTurnsBefore = leaf.turnsTotal
  const spawnsBefore = rt.trace.filter((l) => l.includes(": spawned")).length
  const askerCallsBefore = llm.countFor("m-asker")

  await rt.resume({ id: r1.pending.id, ...fx.resume.answer })
  const r2 = await rt.wait(parent)
  const p2 = fx.phase2_expect

  assert.equal(r2.status, "done")
  assert.ok(r2.text.includes("asker-done: secret-token"), r2.text)
  if (p2.leafResumedAtCheckpoint) {
    assert.ok(rt.trace.some((l) => l.startsWith(`${leaf.id}: resume with Answer(ok=true) at checkpoint`)), rt.trace.join("\n"))
  }
  if (p2.leafUsageGrewNotReset) {
    assert.ok(rt.inspect(leaf).tokens > leafTokensBefore, `${rt.inspect(leaf).tokens} vs ${leafTokensBefore}`)
    assert.ok(leaf.turnsTotal > leafTurnsBefore)
  }
  for (const s of p2.traceContains) assert.ok(rt.trace.some((l) => l.includes(s)), `no "${s}" in\n${rt.trace.join("\n")}`)
  if (p2.noDuplicateChildIds) {
    assert.equal(rt.trace.filter((l) => l.includes(": spawned")).length, spawnsBefore)
    assert.equal(parent.children.length, 1)
  }
  // Reattachment, not re-execution: the leaf's model is asked once (its turn, whole again, goes
  // on), and not again when the parent's `task` call reattaches to the finished child.
  assert.equal(llm.countFor("m-asker") - askerCallsBefore, 1, "the leaf's turn goes on: its answer only")
  assert.equal(parent.state, p2.finalParentState)
  assertTransitions(rt, p2.transitions)
  // After the resume the real task result is persisted in the parent's transcript.
  const stored = (await rt.store.get(parent.id)) ?? []
  assert.ok(stored.some((m) => m.role === "tool" && String(m.content).includes("asker-done: secret-token")), JSON.stringify(stored))
  await rt.close(rt.root)
})

test("subagent-lifecycle coalescedDrain: one wake drains every item as one turn, ticks counted once", async () => {
  const { fx, rt, llm } = setup("subagent-lifecycle")
  const sc = fx.scenarios.coalescedDrain
  const peer = spawnOk(rt, rt.root, "peer")
  let r
  for (const step of sc.steps) {
    if (step.post) {
      const p = step.post
      assert.deepStrictEqual(rt.post(peer, { from: p.from ?? "external", channel: p.channel ?? "external", text: p.text }), { ok: true })
      assert.equal(peer.state, "idle", "post never transitions")
    } else if (step.wakeWait) {
      r = (await wakeWait(rt, peer)).r
    }
  }
  assert.equal(r.turns, sc.expect.turns)
  assert.equal(r.text, sc.expect.text)
  assert.equal(peer.inbox.length, 0, "a completed turn consumed the drain")
  const input = lastUserText(llm.calls.at(-1))
  assert.equal(occurrences(input, "webhook payload"), 1)
  assert.equal(occurrences(input, "update 1"), 1)
  assert.equal(occurrences(input, "tick"), 1, "three ticks render as one entry")
  const webhookLine = input.split("\n").find((l) => l.includes("webhook payload"))
  assert.match(webhookLine, /external/)
  assert.match(webhookLine, /untrusted/i, "an external sender is marked untrusted")
  assert.match(input.split("\n").find((l) => l.includes("update 1")), /root\/coordinator\.1/, "provenance names the sender")
  await rt.close(rt.root)
})

test("subagent-lifecycle inboxGate: a full inbox rejects the post synchronously and loudly", () => {
  const { fx, rt } = setup("subagent-lifecycle", { runtime: fx0().scenarios.inboxGate.runtime })
  const sc = fx.scenarios.inboxGate
  const peer = spawnOk(rt, rt.root, "peer")
  for (const step of sc.steps) {
    const res = rt.post(peer, { from: "external", channel: "external", text: step.post.text })
    if (step.expect?.rejected) {
      assert.equal(res.ok, false)
      assert.ok(res.error.includes(step.expect.errorContains), res.error)
      assert.equal(res.error, `inbox full: ${peer.id} (cap ${sc.runtime.inboxCap})`)
    } else {
      assert.deepStrictEqual(res, { ok: true })
    }
  }
  assert.equal(peer.inbox.length, sc.runtime.inboxCap)
  assert.ok(rt.trace.some((l) => l.startsWith(`${peer.id}: post REJECTED`)), rt.trace.join("\n"))
})

function fx0() {
  return loadFixture("subagent-lifecycle")
}

test("subagent-lifecycle concurrencyGate: the second child queues, then gets the freed slot", async () => {
  const sc = fx0().scenarios.concurrencyGate
  const { rt, llm } = setup("subagent-lifecycle", { overrides: sc.registryOverride })
  const coord = spawnOk(rt, rt.root, sc.run.entry)
  const { r } = await wakeWait(rt, coord, sc.run.prompt)
  assert.equal(r.status, sc.expect.status)
  for (const s of sc.expect.traceContains) assert.ok(rt.trace.some((l) => l.includes(s)), `no "${s}"\n${rt.trace.join("\n")}`)
  assert.equal(llm.maxInFlightByModel["m-explore"], 1, "never two children of a maxConcurrent 1 parent in flight")
  assert.equal(occurrences(r.text, "found:data(x)"), 2)
  await rt.close(rt.root)
})

test("subagent-lifecycle turnGate: maxConcurrentTurns 1 around the HTTP call only, no deadlock", async () => {
  const sc = fx0().scenarios.turnGate
  const { rt, llm } = setup("subagent-lifecycle", { runtime: sc.runtime })
  const coord = spawnOk(rt, rt.root, sc.run.entry)
  const { r } = await wakeWait(rt, coord, sc.run.prompt)
  assert.equal(r.status, sc.expect.status)
  assert.equal(rt.maxObservedConcurrentTurns, sc.expect.maxObservedConcurrentTurns)
  assert.equal(llm.maxInFlight, 1)
  await rt.close(rt.root)
})

test("subagent-lifecycle interrupt: the turn is aborted, the handle idles, the drained item is back", async () => {
  const { fx, rt, llm } = setup("subagent-lifecycle")
  const sc = fx.scenarios.interrupt
  const slow = spawnOk(rt, rt.root, "slow")
  let waiting
  for (const step of sc.steps) {
    if (step.post) assert.deepStrictEqual(rt.post(slow, { from: "root", channel: "peer", text: step.post.text }), { ok: true })
    else if (step.wake) {
      assert.deepStrictEqual(rt.wake(slow, step.wake.prompt), { ok: true })
      waiting = rt.wait(slow)
    } else if (step.awaitState) {
      assert.equal(slow.state, step.awaitState.state)
      await llm.blockedStarted.promise
      assert.equal(slow.state, step.awaitState.state)
    } else if (step.interrupt) rt.interrupt(slow)
  }
  const r = await waiting
  assert.equal(r.status, sc.expect.waiterStatus)
  assert.equal(r.isError, true)
  assert.equal(slow.state, sc.expect.finalState)
  assert.equal(slow.inbox.length, sc.expect.inboxLen)
  assert.equal(slow.inbox[0].text, "for later")
  assert.equal(llm.aborted, 1, "the in-flight HTTP call saw the abort")
  assert.deepStrictEqual(transitionsOf(rt.trace, slow.id), ["idle→running", "running→idle"])
  assert.ok(rt.trace.includes(`${slow.id}: running→idle (interrupted; inbox intact)`), rt.trace.join("\n"))

  // Never a kill: the same handle takes another turn, and that turn drains the restored item.
  llm.release()
  const again = await wakeWait(rt, slow, "once more")
  assert.equal(again.r.status, "done")
  assert.equal(again.r.text, "slow-done")
  assert.ok(lastUserText(llm.calls.at(-1)).includes("for later"))
  assert.equal(slow.inbox.length, 0)
  await rt.close(rt.root)
})

test("subagent-lifecycle closeCascade: close(root) closes leaf-first; a closed inbox rejects", async () => {
  const sc = fx0().scenarios.closeCascade
  const order = []
  const onClose = (h, reason) => {
    order.push([h.id, reason])
  }
  const { rt } = setup("subagent-lifecycle", { overrides: { coordinator: { onClose }, peer: { onClose } } })
  const byPath = {}
  for (const p of sc.tree) {
    const parts = p.split("/")
    const parent = parts.length === 1 ? rt.root : byPath[parts.slice(0, -1).join("/")]
    byPath[p] = spawnOk(rt, parent, parts.at(-1))
  }
  for (const step of sc.steps) {
    if (step.closeRoot) await rt.close(rt.root)
    else if (step.post) {
      const h = byPath[step.post.handle]
      const res = rt.post(h, { from: "external", channel: "external", text: step.post.text })
      assert.equal(res.ok, false)
      assert.equal(step.expect.rejected, true)
      assert.ok(res.error.includes(step.expect.errorContains), res.error)
      assert.equal(res.error, `inbox closed: ${h.id}`)
    }
  }
  const [parent, child, grandchild] = sc.tree.map((p) => byPath[p])
  assert.deepStrictEqual(order, [
    [grandchild.id, "closed"],
    [child.id, "closed"],
    [parent.id, "closed"],
  ])
  assert.ok(rt.list().every((v) => v.state === "closed"))
  assert.equal(rt.list().length, 3)
  assert.deepStrictEqual(rt.wake(child, "x"), { ok: false, error: `closed: ${child.id}` })
})

test("subagent-budgets: carve, maxChildren, live ancestor pool, loud incomplete", async () => {
  const first = setup("subagent-budgets")
  const { fx, llm, counters } = first
  let rt = first.rt
  let handles = { root: rt.root }
  // Ids count per parent, so in the same runtime the looper would be root's second child
  // (root/looper.2); the fixture names it root/looper.1, so its steps get a fresh runtime.
  const looperFrom = fx.steps.findIndex((s) => s.spawn?.def === "looper")
  assert.ok(looperFrom > 0)
  const byId = (id) => {
    const walk = (h) => (h.id === id ? h : h.children.map(walk).find(Boolean))
    return walk(rt.root) ?? assert.fail(`no handle ${id}`)
  }
  const resolve = (ref) => handles[ref] ?? byId(ref)

  let coord
  for (const [i, step] of fx.steps.entries()) {
    const ex = step.expect ?? {}
    if (i === looperFrom) {
      coord = handles.coordinator
      await rt.close(rt.root)
      rt = setup("subagent-budgets").rt
      handles = { root: rt.root }
    }
    if (step.spawn) {
      const parent = resolve(step.spawn.parent)
      const h = rt.spawn(parent, step.spawn.def, step.spawn.budget)
      if (ex.isError) {
        assert.ok(isVerbError(h), `step ${i}`)
        assert.ok(h.error.includes(ex.isError), h.error)
        assert.equal(h.error, `maxChildren ${fx.steps[0].spawn.budget.maxChildren} exceeded`)
        continue
      }
      assert.ok(!isVerbError(h), `step ${i}: ${h.error}`)
      handles[step.spawn.def] ??= h
      if (ex.effectiveTokens !== undefined) assert.equal(rt.inspect(h).poolTokens, ex.effectiveTokens)
    } else if (step.wakeWait) {
      const h = resolve(step.wakeWait.handle)
      const lookupsBefore = counters.lookup
      const exploreCallsBefore = llm.countFor("m-explore")
      const { woke, r } = await wakeWait(rt, h, step.wakeWait.prompt)
      // The step "wakeWait root/coordinator.1/explore.2 go" (the sibling admitted on 20 tokens).
      if (step.wakeWait.handle === "root/coordinator.1/explore.2" && step.wakeWait.prompt === "go") {
        // DELIBERATE DEVIATION. The fixture expects `done` here because the reference checks
        // the pools only when a turn is admitted (20 tokens left ⇒ admitted, then the turn runs
        // to the end). This port enforces budgets live, before every LLM call and every tool
        // call: the first call is admitted on 20 tokens, spends 40, and the tool call that
        // follows is refused because the coordinator's pool is now negative.
        assert.equal(r.status, "incomplete")
        assert.equal(r.isError, true)
        assert.ok(r.text.includes("budget exhausted (maxTokens)"), r.text)
        assert.equal(counters.lookup, lookupsBefore, "the refused tool call never ran")
        assert.equal(llm.countFor("m-explore") - exploreCallsBefore, 1)
        assert.equal(h.state, "idle")
        continue
      }
      assert.equal(r.status, ex.status, `step ${i}: ${r.text}`)
      if (ex.status === "incomplete") {
        assert.equal(r.isError, true)
        assert.equal(h.state, "idle", "a limit stop is never a crash nor a close")
      }
      if (ex.errorContains) {
        assert.ok(r.text.includes(ex.errorContains), r.text)
        if (!woke.ok) assert.ok(woke.error.includes(ex.errorContains), woke.error)
      }
      if (ex.parentPoolAfter !== undefined) assert.equal(rt.inspect(h.parent).poolTokens, ex.parentPoolAfter)
      if (step.wakeWait.handle === "root/looper.1") {
        assert.match(r.text, /maxTurns/)
        assert.ok(h.turnsTotal <= fx.steps[7].spawn.budget.maxTurns)
      }
    }
  }
  // The ledger: the coordinator's total is its children's spend.
  assert.equal(coord.usageTotal, coord.children.reduce((n, c) => n + c.usageTotal, 0))
  assert.equal(coord.usageTotal, 120)
  await rt.close(rt.root)
})

// ===================================================================================
// Verbs, as documented
// ===================================================================================

const cannedText = (text) => async () => reply({ content: text }, USAGE)

test("ids are parent-scoped and sequential; list/inspect views; close(root) stops all", async () => {
  const rt = new AgentRuntime({ fetch: cannedText("Hello."), clock: new VirtualClock(), registry: { explorer: { name: "explorer", does: "Explores", model: "m" } } })
  const a = spawnOk(rt, rt.root, "explorer")
  const b = spawnOk(rt, rt.root, "explorer")
  assert.ok(a instanceof agents.Handle)
  assert.equal(a.id, "root/explorer.1")
  assert.equal(a.parent, rt.root)
  assert.equal(rt.root.id, "root")
  assert.equal(b.id, "root/explorer.2")
  const c = spawnOk(rt, a, "explorer")
  assert.equal(c.id, "root/explorer.1/explorer.1")
  assert.equal(a.state, "idle")
  assert.deepStrictEqual(rt.wake(a, "task A"), { ok: true })
  assert.equal(a.state, "running", "admission is synchronous with wake")
  rt.wake(b, "task B")
  const [ra, rb] = await Promise.all([rt.wait(a), rt.wait(b)])
  assert.equal(ra.status, "done")
  assert.equal(rb.text, "Hello.")
  assert.deepStrictEqual(rt.list(), [
    { id: a.id, state: "idle", tokens: 40, inbox: 0 },
    { id: c.id, state: "idle", tokens: 0, inbox: 0 },
    { id: b.id, state: "idle", tokens: 40, inbox: 0 },
  ])
  const detail = rt.inspect(a)
  assert.equal(detail.turns, 1)
  assert.equal(detail.poolTokens, Number.POSITIVE_INFINITY)
  assert.equal(detail.pending, undefined)
  // A settled handle answers wait() at once with its last result.
  assert.deepStrictEqual(await rt.wait(a), ra)
  await rt.close(rt.root)
  assert.ok(rt.list().every((v) => v.state === "closed"))
})

test("interrupt mid-turn restores the drained inbox; the handle stays usable", async () => {
  let mode = "hang"
  const seen = []
  const fetch = (_url, init) => {
    seen.push(JSON.parse(init.body))
    if (mode === "answer") return Promise.resolve(reply({ content: "second turn" }, USAGE))
    return new Promise((_, reject) => {
      const s = init.signal
      s?.addEventListener("abort", () => reject(s.reason ?? new Error("aborted")), { once: true })
    })
  }
  const rt = new AgentRuntime({ fetch, clock: new VirtualClock(), registry: { worker: { name: "worker", does: "Slow worker", model: "m" } } })
  const h = spawnOk(rt, rt.root, "worker")
  rt.post(h, { from: "external", channel: "external", text: "seed item" })
  rt.wake(h, "start")
  await until(() => seen.length === 1, "the first LLM call")
  assert.equal(h.inbox.length, 0, "the running turn drained the inbox")
  rt.interrupt(h)
  const r = await rt.wait(h)
  assert.equal(r.status, "interrupted")
  assert.equal(h.state, "idle")
  assert.deepStrictEqual(h.inbox, [{ from: "external", channel: "external", text: "seed item" }])
  rt.interrupt(h) // on an idle handle: nothing happens
  assert.equal(h.state, "idle")
  mode = "answer"
  const again = await wakeWait(rt, h, "retry")
  assert.equal(again.r.text, "second turn")
  assert.ok(JSON.stringify(seen.at(-1).messages).includes("seed item"))
  await rt.close(rt.root)
})

function approvalTool() {
  return defineTool({
    name: "needs_approval",
    description: "requires sign-off",
    inputSchema: { type: "object", properties: {} },
    run: (_a, ctx) => (ctx?.answer ? `approved=${ctx.answer.ok}` : pending({ kind: "approval", prompt: "approve this action?" })),
  })
}

const approvalFetch = async (_url, init) => {
  const body = JSON.parse(init.body)
  const tools = body.messages.filter((m) => m.role === "tool")
  return reply(tools.length ? { content: `final: ${tools.at(-1).content}` } : toolCalls([{ name: "needs_approval", args: {} }]), USAGE)
}

test("a suspended handle: wake is a no-op that buffers, wait answers pending, interrupt cancels", async () => {
  const rt = new AgentRuntime({
    fetch: approvalFetch,
    clock: new VirtualClock(),
    registry: { asker: { name: "asker", does: "needs approvals", model: "m", tools: [approvalTool()] } },
  })
  const h = spawnOk(rt, rt.root, "asker")
  const { r } = await wakeWait(rt, h, "do the sensitive thing")
  assert.equal(r.status, "pending")
  assert.equal(h.state, "suspended")
  assert.equal(h.pendingRequest?.kind, "approval")
  assert.deepStrictEqual(h.pendingRequest.data?.path, ["root", "asker.1"])

  const traced = rt.trace.length
  assert.deepStrictEqual(rt.post(h, { from: "external", channel: "external", text: "later" }), { ok: true })
  assert.deepStrictEqual(rt.wake(h, "wake up"), { ok: true })
  assert.equal(h.state, "suspended", "only the Answer leaves suspended")
  assert.equal(rt.trace.length, traced, "no transition traced")
  assert.equal(h.inbox.length, 1)
  const again = await rt.wait(h)
  assert.equal(again.status, "pending")
  assert.equal(again.pending?.id, r.pending.id)

  rt.interrupt(h)
  assert.equal(h.state, "idle")
  assert.equal(h.pendingRequest, undefined)
  assert.ok(rt.trace.includes(`${h.id}: suspended→idle (interrupt cancelled pending "approval")`), rt.trace.join("\n"))
  await rt.close(rt.root)
})

test("wait on a closed handle, wait by a non-spawner, and a wait timeout on the virtual clock", async () => {
  const clock = new VirtualClock()
  const llm = scriptedLLM({ usagePerCall: USAGE, scripts: { "m-slow": [{ always: true, text: "slow-done", blocksUntil: "released-or-aborted" }], m: [{ always: true, text: "hi" }] } })
  const rt = new AgentRuntime({
    fetch: llm.fetch,
    clock,
    registry: { w: { name: "w", does: "worker", model: "m" }, slow: { name: "slow", does: "slow", model: "m-slow" } },
  })
  const never = spawnOk(rt, rt.root, "w")
  await rt.close(never)
  const closed = await rt.wait(never)
  assert.equal(closed.status, "closed")
  assert.equal(closed.isError, true)

  const ran = spawnOk(rt, rt.root, "w")
  const { r } = await wakeWait(rt, ran, "go")
  await rt.close(ran)
  assert.equal(ran.state, "closed")
  assert.deepStrictEqual(await rt.wait(ran), r, "a closed handle answers with its last result")

  const a = spawnOk(rt, rt.root, "w")
  const b = spawnOk(rt, rt.root, "w")
  const kid = spawnOk(rt, a, "w")
  const refused = await rt.wait(kid, { by: b })
  assert.equal(refused.status, "error")
  assert.equal(refused.isError, true)
  assert.equal(refused.text, `wait refused: only the spawner may wait on ${kid.id}`)

  const s = spawnOk(rt, rt.root, "slow")
  rt.wake(s, "work")
  await llm.blockedStarted.promise
  let settled
  const armed = clock.armed
  const waiting = rt.wait(s, { timeoutMs: 50 }).then((x) => (settled = x))
  await until(() => clock.armed > armed, "the wait timer on the runtime clock")
  await flush()
  assert.equal(settled, undefined, "virtual time has not moved")
  clock.advance(49)
  await flush()
  assert.equal(settled, undefined, "not due yet")
  clock.advance(1)
  await waiting
  assert.equal(settled.status, "timeout")
  assert.equal(settled.text, "wait timeout after 50ms (child still running)")
  assert.equal(s.state, "running", "the child keeps running")
  llm.release()
  assert.equal((await rt.wait(s)).text, "slow-done")
  await rt.close(rt.root)
})

test("spawn refusals: unknown agent, maxDepth, maxChildren — returned, never thrown", async () => {
  const rt = new AgentRuntime({
    fetch: cannedText("ok"),
    clock: new VirtualClock(),
    registry: {
      worker: { name: "worker", does: "does the work", model: "m" },
      coordinator: { name: "coordinator", does: "delegates", model: "m", budget: { maxChildren: 1 } },
      shallow: { name: "shallow", does: "no children", model: "m", budget: { maxDepth: 0 } },
    },
  })
  assert.deepStrictEqual(rt.spawn(rt.root, "x"), { error: 'unknown agent "x" (known: coordinator, shallow, worker)' })
  assert.ok(isVerbError(rt.spawn(rt.root, "x")))
  const coord = spawnOk(rt, rt.root, "coordinator")
  spawnOk(rt, coord, "worker")
  assert.deepStrictEqual(rt.spawn(coord, "worker"), { error: "maxChildren 1 exceeded" })
  assert.equal(coord.children.length, 1, "a refusal leaves the tree untouched")
  const shallow = spawnOk(rt, rt.root, "shallow")
  assert.deepStrictEqual(rt.spawn(shallow, "worker"), { error: "maxDepth 0 exceeded" })
  // The default depth cap is 3.
  let h = spawnOk(rt, rt.root, "worker")
  h = spawnOk(rt, h, "worker")
  h = spawnOk(rt, h, "worker")
  assert.equal(h.depth, 3)
  assert.deepStrictEqual(rt.spawn(h, "worker"), { error: "maxDepth 3 exceeded" })
  assert.equal(isVerbError(null), false)
  assert.equal(isVerbError({ error: 3 }), false)
  assert.equal(isVerbError(h), false)
})

test("runtime.store is the injected store, and every handle's transcript lives in it", async () => {
  const saved = new Map()
  const store = {
    async get(id) {
      return saved.has(id) ? [...saved.get(id)] : undefined
    },
    async save(id, messages) {
      saved.set(id, [...messages])
    },
  }
  const rt = new AgentRuntime({ fetch: cannedText("remembered"), clock: new VirtualClock(), store, registry: { w: { name: "w", does: "w", model: "m" } } })
  assert.equal(rt.store, store)
  const h = spawnOk(rt, rt.root, "w")
  await wakeWait(rt, h, "first")
  await wakeWait(rt, h, "second")
  const t = saved.get(h.id)
  assert.ok(Array.isArray(t), [...saved.keys()].join(","))
  assert.deepStrictEqual(
    t.filter((m) => m.role === "user").map((m) => m.content),
    ["first", "second"],
    "the second turn continued the same conversation",
  )
  assert.equal(rt.clock.now(), 1_000_000, "the injected clock is the runtime's clock")
  const plain = new AgentRuntime({ registry: {} })
  assert.equal(plain.clock, agents.systemClock)
  assert.equal(typeof plain.store.get, "function")
  await rt.close(rt.root)
})

// ===================================================================================
// Agent.run / asTool / createRuntime, fromDir + startAgent
// ===================================================================================

test("Agent.run: one-shot, scoped tools, the tree torn down afterwards", async () => {
  const spec = { does: "Greets", soul: "You are warm and brief." }
  assert.equal(agents.harness(spec), spec, "harness is a name for the spec, not a new type")
  const greeter = agents.agent("greeter", agents.harness(spec))
  assert.equal(greeter.name, "greeter")
  assert.equal(greeter.spec, spec)
  let system
  const r = await greeter.run("Say hi.", {
    clock: new VirtualClock(),
    fetch: async (_u, init) => {
      system = JSON.parse(init.body).messages.find((m) => m.role === "system")?.content
      return reply({ content: "Hello from the greeter." }, { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 })
    },
  })
  assert.equal(r.status, "done")
  assert.equal(r.text, "Hello from the greeter.")
  assert.equal(r.turns, 1)
  assert.equal(r.totalTokens, 9)
  assert.equal(system, "You are warm and brief.")
  assert.ok(r.runtime instanceof AgentRuntime)
  assert.ok(r.runtime.list().every((v) => v.state === "closed"), "run closes the tree when it is not pending")

  const lookup = defineTool({ name: "lookup", description: "Look up", inputSchema: { type: "object", properties: { q: { type: "string" } } }, run: (a) => `data(${a.q})` })
  const explorer = agents.agent("explorer", { does: "Read-only research", uses: { tools: [lookup] } })
  let advertised
  const r2 = await explorer.run("What is it?", {
    fetch: async (_u, init) => {
      const body = JSON.parse(init.body)
      advertised ??= (body.tools ?? []).map((t) => t.function?.name)
      const tool = body.messages.filter((m) => m.role === "tool").at(-1)
      return reply(tool ? { content: `found: ${tool.content}` } : toolCalls([{ name: "lookup", args: { q: "toolnexus" } }]), USAGE)
    },
  })
  assert.equal(r2.text, "found: data(toolnexus)")
  assert.equal(r2.turns, 2)
  assert.deepStrictEqual(advertised, ["lookup"], "the agent's view is its own tools only: no builtins, no task")
})

test("Agent.run pending: result.runtime.resume(answer) finishes the run", async () => {
  const approve = agents.agent("approve", { does: "Approves a payment", uses: { tools: [approvalTool()] } })
  const r1 = await approve.run("Charge the card.", { fetch: approvalFetch, clock: new VirtualClock() })
  assert.equal(r1.status, "pending")
  assert.equal(r1.pending?.kind, "approval")
  const h = r1.runtime.root.children[0]
  assert.equal(r1.runtime.inspect(h).state, "suspended")
  await r1.runtime.resume({ id: r1.pending.id, ok: false, reason: "declined" })
  const r2 = await r1.runtime.wait(h)
  assert.equal(r2.status, "done")
  assert.match(r2.text, /^final: /)
  assert.match(r2.text, /declined/, "a decline reaches the model as data")
  assert.doesNotMatch(r2.text, /approved=/, "a declined Answer never runs the tool")
  await assert.rejects(r1.runtime.resume({ id: "nothing", ok: true }), /no suspended handle/)
  await r1.runtime.close(r1.runtime.root)
})

test("Agent.asTool inside a classic client; createRuntime holds only the reachable team", async () => {
  const explorer = agents.agent("explorer", { does: "Read-only research", model: "m-explorer" })
  const stranger = agents.agent("stranger", { does: "unreachable", model: "m-explorer" })
  void stranger
  const coordinator = agents.agent("coordinator", { does: "Splits work and delegates", model: "m-coordinator", team: [explorer], budget: { maxTurns: 4, maxChildren: 2 } })
  let taskDescription
  const subFetch = async (_u, init) => {
    const body = JSON.parse(init.body)
    if (body.model === "m-explorer") return reply({ content: "X is here" }, USAGE)
    taskDescription ??= body.tools?.find((t) => t.function?.name === "task")?.function?.description
    const tool = body.messages.filter((m) => m.role === "tool").at(-1)
    return reply(tool ? { content: `synthesis: ${tool.content}` } : toolCalls([{ name: "task", args: { agent: "explorer", prompt: "find X" } }]), USAGE)
  }
  let outer = 0
  const outerFetch = async (_u, init) => {
    outer++
    const body = JSON.parse(init.body)
    const tool = body.messages.filter((m) => m.role === "tool").at(-1)
    return reply(tool ? { content: `Done: ${tool.content}` } : toolCalls([{ name: "coordinator", args: { prompt: "investigate X" } }]), USAGE)
  }
  const asTool = coordinator.asTool({ fetch: subFetch, clock: new VirtualClock() })
  assert.equal(asTool.name, "coordinator")
  assert.equal(asTool.description, "Splits work and delegates")
  const tk = await createToolkit({ builtins: false, extraTools: [asTool] })
  const client = createClient({ baseUrl: "http://mock.local", style: "openai", model: "outer", apiKey: "k", fetch: outerFetch })
  const res = await client.run("Investigate X for me.", { toolkit: tk })
  assert.equal(res.text, "Done: synthesis: X is here")
  assert.equal(outer, 2)
  assert.equal(res.toolCalls[0].name, "coordinator")
  assert.equal(res.toolCalls[0].output, "synthesis: X is here")
  assert.deepStrictEqual(res.toolCalls[0].metadata, { agent: "coordinator", turns: 2, totalTokens: 80 })
  assert.ok(taskDescription?.includes("explorer: Read-only research"), taskDescription)
  assert.ok(!taskDescription.includes("stranger"))
  await tk.close()

  const rt = coordinator.createRuntime({ fetch: subFetch, clock: new VirtualClock() })
  assert.deepStrictEqual(rt.spawn(rt.root, "stranger"), { error: 'unknown agent "stranger" (known: coordinator, explorer)' })
})

function personaDir(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-persona-"))
  for (const [name, body] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), body)
  return dir
}

test("fromDir + startAgent: heartbeats on the virtual clock, HEARTBEAT_OK stays silent", async () => {
  const dir = personaDir({ "SOUL.md": "You are Ava.", "HEARTBEAT.md": "On the third beat, remind about the plants." })
  const ava = agents.fromDir(dir, { model: "m-ava" })
  assert.equal(ava.name, path.basename(dir))
  assert.deepStrictEqual(ava.spec.uses.tools.map((t) => t.name), ["memory"])
  assert.equal(agents.fromDir(dir, { memory: false }).spec.uses.tools.length, 0)

  const calls = []
  const fetch = async (_u, init) => {
    const body = JSON.parse(init.body)
    calls.push(body)
    const beat = calls.length
    return reply({ content: beat === 3 ? "Reminder: water the plants." : `all quiet ${agents.HEARTBEAT_OK}` }, USAGE)
  }
  const clock = new VirtualClock()
  const heard = []
  const started = agents.startAgent(ava, { fetch, clock }, { everyMs: 1000, onBeat: (t) => heard.push(t) })
  const h = started.runtime.root.children[0]
  assert.equal(h.id, `root/${ava.name}.1`)
  await flush()
  assert.equal(calls.length, 0, "nothing happens before the first interval")

  for (let beat = 1; beat <= 5; beat++) {
    await clock.tick(1000)
    await until(() => calls.length === beat && h.state === "idle", `beat ${beat}`)
    await flush()
  }
  assert.deepStrictEqual(heard, ["Reminder: water the plants."])
  assert.deepStrictEqual(started.beats, heard)
  const sys = calls[0].messages.find((m) => m.role === "system")?.content ?? ""
  assert.ok(sys.includes("## SOUL.md") && sys.includes("## HEARTBEAT.md"), sys)
  const input = lastUserText({ messages: calls[0].messages })
  assert.ok(input.includes(agents.HEARTBEAT_PROMPT), input)
  assert.ok(input.includes("channel=timer"), input)

  await started.stop()
  assert.equal(h.state, "closed")
  assert.equal(clock.armed, 0, "stop cancels the heartbeat")
  clock.advance(10_000)
  await flush()
  assert.equal(calls.length, 5, "no beat after stop")
})

// ===================================================================================
// Defects of the reference this port does right (each one fails on the reference)
// ===================================================================================

test("a synchronously throwing onSpawn does not escape spawn(); it is traced and the turn still runs", async () => {
  const rt = new AgentRuntime({
    fetch: cannedText("ran anyway"),
    clock: new VirtualClock(),
    registry: {
      w: {
        name: "w",
        does: "w",
        model: "m",
        onSpawn: () => {
          throw new Error("no soul today")
        },
      },
    },
  })
  let h
  assert.doesNotThrow(() => {
    h = rt.spawn(rt.root, "w")
  })
  assert.ok(!isVerbError(h))
  assert.equal(h.id, "root/w.1")
  await flush()
  assert.ok(rt.trace.includes("root/w.1: onSpawn error: no soul today"), rt.trace.join("\n"))
  const { r } = await wakeWait(rt, h, "go")
  assert.equal(r.status, "done")
  assert.equal(r.text, "ran anyway")
  await rt.close(rt.root)
})

test("an async onSpawn that posts after an await is seen by the first turn", async () => {
  const llm = scriptedLLM(loadFixture("subagent-lifecycle").mockLLM)
  let rt
  rt = new AgentRuntime({
    fetch: llm.fetch,
    clock: new VirtualClock(),
    registry: {
      peer: {
        name: "peer",
        does: "team member",
        model: "m-peer",
        onSpawn: async (h) => {
          await flush(3)
          rt.post(h, { from: "external", channel: "external", text: "session-start note" })
        },
      },
    },
  })
  const h = spawnOk(rt, rt.root, "peer")
  const { r } = await wakeWait(rt, h)
  assert.equal(r.text, "processed 1 items")
  assert.ok(lastUserText(llm.calls[0]).includes("session-start note"))
  assert.equal(h.inbox.length, 0)
  await rt.close(rt.root)
})

test("the same task twice in one turn: one child, run once, closed once", async () => {
  const closes = []
  let childRuns = 0
  const fetch = async (_u, init) => {
    const body = JSON.parse(init.body)
    if (body.model === "m-child") {
      childRuns++
      await flush(2)
      return reply({ content: "child answer" }, USAGE)
    }
    const tools = body.messages.filter((m) => m.role === "tool")
    if (tools.length) return reply({ content: tools.map((t) => t.content).join(" | ") }, USAGE)
    const same = { name: "task", args: { agent: "child", prompt: "same work" } }
    return reply(toolCalls([same, same]), USAGE)
  }
  const rt = new AgentRuntime({
    fetch,
    clock: new VirtualClock(),
    registry: {
      boss: { name: "boss", does: "delegates", model: "m-boss", team: ["child"] },
      child: {
        name: "child",
        does: "works",
        model: "m-child",
        onClose: async (h, reason) => {
          closes.push([h.id, reason])
          await flush(2)
        },
      },
    },
  })
  const boss = spawnOk(rt, rt.root, "boss")
  const { r } = await wakeWait(rt, boss, "go")
  assert.equal(r.status, "done")
  assert.equal(r.text, "child answer | child answer")
  assert.equal(boss.children.length, 1)
  assert.equal(childRuns, 1)
  assert.ok(rt.trace.some((l) => l.includes("REATTACH")), rt.trace.join("\n"))
  assert.deepStrictEqual(closes, [["root/boss.1/child.1", "closed"]])
  assert.equal(transitionsOf(rt.trace, "root/boss.1/child.1").filter((t) => t.endsWith("→closed")).length, 1)
  await rt.close(rt.root)
})

test("budgets are live: a tool-looping model stops within maxTokens/maxToolCalls, transcript kept", async () => {
  let executed = 0
  let llmCalls = 0
  const lookup = defineTool({
    name: "lookup",
    description: "look up",
    inputSchema: { type: "object", properties: { q: { type: "string" } } },
    run: (a) => {
      executed++
      return `data(${a.q})`
    },
  })
  const fetch = async () => {
    llmCalls++
    return reply(toolCalls([{ name: "lookup", args: { q: `n${llmCalls}` } }]), USAGE)
  }
  const rt = new AgentRuntime({ fetch, clock: new VirtualClock(), registry: { looper: { name: "looper", does: "never finishes", model: "m-loop", tools: [lookup] } } })
  const h = spawnOk(rt, rt.root, "looper", { maxTokens: 50, maxToolCalls: 1 })
  const { r } = await wakeWait(rt, h, "loop forever")
  assert.equal(r.status, "incomplete")
  assert.equal(r.isError, true)
  assert.match(r.text, /budget exhausted/)
  assert.ok(executed <= 1, `executed ${executed} tool calls`)
  assert.ok(llmCalls <= 2, `made ${llmCalls} LLM calls on a 50-token pool at 40 per call`)
  assert.equal(h.state, "idle")
  const stored = (await rt.store.get(h.id)) ?? []
  assert.ok(stored.some((m) => m.role === "user" && String(m.content).includes("loop forever")), JSON.stringify(stored))
  assert.ok(stored.some((m) => m.role === "assistant" && Array.isArray(m.tool_calls)), JSON.stringify(stored))
  // The pool is spent: the next wake is refused, loudly.
  const again = rt.wake(h, "more")
  assert.equal(again.ok, false)
  assert.match(again.error, /budget exhausted/)
  await rt.close(rt.root)
})

test("waking a queued handle again does not queue a second turn", async () => {
  const llm = scriptedLLM(loadFixture("subagent-lifecycle").mockLLM)
  const rt = new AgentRuntime({
    fetch: llm.fetch,
    clock: new VirtualClock(),
    registry: {
      coordinator: { name: "coordinator", does: "delegates", model: "m-coordinator", budget: { maxConcurrent: 1 } },
      slow: { name: "slow", does: "slow", model: "m-slow" },
      peer: { name: "peer", does: "peer", model: "m-peer" },
    },
  })
  const coord = spawnOk(rt, rt.root, "coordinator")
  const first = spawnOk(rt, coord, "slow")
  const second = spawnOk(rt, coord, "peer")
  rt.wake(first, "hold the slot")
  await llm.blockedStarted.promise
  assert.deepStrictEqual(rt.wake(second, "one"), { ok: true })
  assert.deepStrictEqual(rt.wake(second, "two"), { ok: true })
  assert.deepStrictEqual(rt.wake(second, "three"), { ok: true })
  assert.equal(rt.trace.filter((l) => l.startsWith(`${second.id}: wake QUEUED`)).length, 1, rt.trace.join("\n"))
  // The parent's deferred wakes: the queued Handle itself, with its prompt.
  assert.equal(coord.wakeQueue.length, 1)
  assert.equal(coord.wakeQueue[0].h, second)
  assert.deepStrictEqual(Object.keys(coord.wakeQueue[0]), ["h", "prompt"])
  const waiting = rt.wait(second)
  llm.release()
  assert.equal((await waiting).status, "done")
  await flush(50)
  assert.equal(llm.countFor("m-peer"), 1)
  assert.equal(second.turnsTotal, 1)
  assert.equal(transitionsOf(rt.trace, second.id).filter((t) => t === "idle→running").length, 1)
  await rt.close(rt.root)
})

test("heartbeat ticks coalesce on arrival: a busy persona never fills its inbox", async () => {
  const dir = personaDir({ "SOUL.md": "You are Bo.", "HEARTBEAT.md": "Say HEARTBEAT_OK." })
  const bo = agents.fromDir(dir, { name: "bo", model: "m-slow", memory: false })
  const llm = scriptedLLM({ usagePerCall: USAGE, scripts: { "m-slow": [{ always: true, text: agents.HEARTBEAT_OK, blocksUntil: "released-or-aborted" }] } })
  const clock = new VirtualClock()
  const started = agents.startAgent(bo, { fetch: llm.fetch, clock, inboxCap: 2 }, { everyMs: 100 })
  const h = started.runtime.root.children[0]
  await clock.tick(100)
  await llm.blockedStarted.promise
  assert.equal(h.state, "running")
  for (let i = 0; i < 20; i++) {
    await clock.tick(100)
    await flush(3)
    assert.ok(h.inbox.filter((x) => x.channel === "timer").length <= 1, JSON.stringify(h.inbox))
  }
  assert.ok(!started.runtime.trace.some((l) => l.includes("post REJECTED")), started.runtime.trace.join("\n"))
  assert.deepStrictEqual(started.runtime.post(h, { from: "external", channel: "external", text: "a human message" }), { ok: true })
  llm.release()
  await until(() => h.state === "idle", "the first beat finishes")
  await clock.tick(100)
  await until(() => llm.calls.length === 2 && h.state === "idle", "the next beat")
  const drained = lastUserText(llm.calls[1])
  assert.ok(drained.includes("a human message"), drained)
  assert.equal(occurrences(drained, "channel=timer"), 1, drained)
  assert.equal(h.inbox.length, 0)
  await started.stop()
  assert.equal(h.state, "closed")
})

test("close twice at once, or a parent closed with queued children: each onClose runs once", async () => {
  const counts = new Map()
  const onClose = async (h) => {
    counts.set(h.id, (counts.get(h.id) ?? 0) + 1)
    await flush(2)
  }
  const llm = scriptedLLM(loadFixture("subagent-lifecycle").mockLLM)
  const clock = new VirtualClock()
  const rt = new AgentRuntime({
    fetch: llm.fetch,
    clock,
    registry: {
      coordinator: { name: "coordinator", does: "delegates", model: "m-coordinator", budget: { maxConcurrent: 1 }, onClose },
      slow: { name: "slow", does: "slow", model: "m-slow", onClose },
      peer: { name: "peer", does: "peer", model: "m-peer", onClose },
    },
  })
  const lone = spawnOk(rt, rt.root, "peer")
  await Promise.all([rt.close(lone), rt.close(lone)])
  await rt.close(lone)
  assert.equal(counts.get(lone.id), 1)

  const coord = spawnOk(rt, rt.root, "coordinator")
  const running = spawnOk(rt, coord, "slow")
  const queued = spawnOk(rt, coord, "peer")
  rt.wake(running, "hold the slot")
  await llm.blockedStarted.promise
  rt.wake(queued, "wait your turn")
  assert.ok(rt.trace.includes(`${queued.id}: wake QUEUED (parent concurrency 1)`), rt.trace.join("\n"))
  await driveClock(Promise.all([rt.close(coord), rt.close(coord)]), clock, 200)
  for (const h of [coord, running, queued]) {
    assert.equal(h.state, "closed", h.id)
    assert.equal(counts.get(h.id), 1, `${h.id} onClose ran ${counts.get(h.id)} times`)
  }
  assert.equal(llm.countFor("m-peer"), 0, "a closing parent does not start its queued child")
})

test("onBudget decides at a live limit: stop, extend, or suspend on an approval the host answers later", async () => {
  const lookup = defineTool({ name: "lookup", description: "look up", run: () => "data" })
  const looping = async () => reply(toolCalls([{ name: "lookup", args: {} }]), USAGE)
  const runtimeFor = (verdict, asked) =>
    new AgentRuntime({
      fetch: looping,
      registry: { looper: { name: "looper", does: "loops", model: "m", tools: [lookup], budget: { maxTurns: 4, maxToolCalls: 2 } } },
      onBudget(info) {
        asked.push(info)
        return verdict
      },
    })

  const stopAsked = []
  const stop = runtimeFor("stop", stopAsked)
  const h = spawnOk(stop, stop.root, "looper")
  stop.wake(h, "go")
  const stopped = await stop.wait(h)
  assert.equal(stopped.status, "incomplete")
  assert.equal(stopped.text, "budget exhausted (maxToolCalls); partial work preserved")
  assert.equal(h.toolCallsTotal, 2)
  assert.equal(stopAsked.length, 1)
  assert.equal(stopAsked[0].handle, h, "the info names the Handle itself")
  assert.equal(stopAsked[0].limit, "maxToolCalls")

  const extend = runtimeFor(Promise.resolve("extend"), [])
  const e = spawnOk(extend, extend.root, "looper")
  extend.wake(e, "go")
  const extended = await extend.wait(e)
  assert.equal(extended.text, "hit maxTurns without a final answer")
  assert.equal(e.toolCallsTotal, 4)

  const suspend = runtimeFor("suspend", [])
  const s = spawnOk(suspend, suspend.root, "looper")
  suspend.wake(s, "go")
  const parked = await suspend.wait(s)
  assert.equal(parked.status, "pending")
  assert.equal(parked.pending.kind, "approval")
  assert.equal(s.state, "suspended")
  await suspend.resume({ id: parked.pending.id, ok: true })
  const resumed = await suspend.wait(s)
  assert.equal(resumed.text, "hit maxTurns without a final answer")
  assert.equal(s.state, "idle")
  for (const rt of [stop, extend, suspend]) await rt.close(rt.root)
})

test("a compactor in an agent's hooks is told the runtime's dialect: no system notes inside Anthropic messages", async () => {
  const bodies = []
  const fetch = async (_u, init) => {
    bodies.push(JSON.parse(init.body))
    const msg = { id: "m", type: "message", role: "assistant", content: [{ type: "text", text: "ok ".repeat(50) }], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } }
    return new Response(JSON.stringify(msg), { headers: { "content-type": "application/json" } })
  }
  const hooks = { beforeLLM: agents.compactor({ maxTokens: 60, keepTail: 20, summarize: () => "SUMMARY" }) }
  const rt = new AgentRuntime({ fetch, llm: { style: "anthropic", model: "claude" }, registry: { p: { name: "p", does: "persona", hooks } } })
  const h = spawnOk(rt, rt.root, "p")
  for (let i = 0; i < 3; i++) {
    rt.wake(h, `question ${i} ${"x".repeat(200)}`)
    assert.equal((await rt.wait(h)).status, "done")
  }
  const last = bodies.at(-1).messages
  assert.deepStrictEqual(last[0], { role: "user", content: "[Summary of earlier conversation]\nSUMMARY" })
  assert.ok(bodies.every((b) => b.messages.every((m) => m.role !== "system")), "the Messages API refuses system inside messages")
  await rt.close(rt.root)
})

test("a Handle carries the reference's fields, in its order: pools, limits, deadline, task key, sequence", async () => {
  const llm = scriptedLLM({ scripts: {} }, {})
  const clock = new VirtualClock()
  const registry = {
    lead: { name: "lead", does: "leads", model: "m", tools: [], team: ["worker"], budget: { maxTokens: 500, maxToolCalls: 9, maxChildren: 2, maxWallMs: 1000, maxTurns: 4 } },
    worker: { name: "worker", does: "works", model: "m", tools: [], team: [], budget: { maxTokens: 800 } },
  }
  const rt = new AgentRuntime({ registry, fetch: llm.fetch, clock })
  const root = rt.root
  assert.deepStrictEqual(Object.keys(root), [
    "id", "def", "parent", "depth", "children", "inbox", "state", "pool", "eff", "deadline", "usageTotal",
    "toolCallsTotal", "turnsTotal", "pendingRequest", "lastResult", "abort", "checkpoint", "drained", "wakeQueue",
    "taskKey", "runningChildren", "seq",
  ])
  assert.deepStrictEqual(root.pool, { tokens: Infinity, toolCalls: Infinity, children: Infinity })
  assert.deepStrictEqual(root.eff, { maxTurns: 6, maxConcurrent: 8, maxDepth: 3 })
  assert.equal(root.deadline, undefined)
  assert.equal(root.abort, null)
  assert.equal(root.seq, 0)

  const lead = spawnOk(rt, root, "lead")
  // The child's pools are carved from its own budget (and its parent's remaining ones).
  assert.deepStrictEqual(lead.pool, { tokens: 500, toolCalls: 9, children: 2 })
  assert.deepStrictEqual(lead.eff, { maxTurns: 4, maxConcurrent: 8, maxDepth: 3 })
  assert.equal(lead.deadline, clock.now() + 1000)
  assert.equal(root.seq, 1)
  const worker = spawnOk(rt, lead, "worker")
  // min(own 800, the parent's remaining 500)
  assert.equal(worker.pool.tokens, 500)
  assert.equal(worker.deadline, lead.deadline, "a child inherits the nearer deadline")
  assert.equal(lead.seq, 1)
  // maxChildren is checked against the children there are; the pool itself is not drawn down.
  assert.equal(lead.pool.children, 2)
  assert.deepStrictEqual([worker.taskKey, worker.checkpoint, worker.drained, worker.wakeQueue, worker.runningChildren], [undefined, undefined, [], [], 0])

  // The root runs under the runtime's own definition; a spawn under the caller's object, or,
  // when the spawn carries a budget, a copy of it with that budget over the definition's.
  assert.deepStrictEqual(root.def, { name: "root", does: "runtime root", model: "none" })
  assert.equal(lead.def, registry.lead)
  const capped = spawnOk(rt, root, "lead", { maxTurns: 2, maxDepth: 1 })
  assert.notEqual(capped.def, registry.lead)
  assert.deepStrictEqual(capped.def, { ...registry.lead, budget: { maxTurns: 2, maxTokens: 500, maxToolCalls: 9, maxWallMs: 1000, maxChildren: 2, maxDepth: 1 } })
  assert.deepStrictEqual(registry.lead.budget, { maxTokens: 500, maxToolCalls: 9, maxChildren: 2, maxWallMs: 1000, maxTurns: 4 }, "the registered definition is left as it was")
  assert.deepStrictEqual(capped.eff, { maxTurns: 2, maxConcurrent: 8, maxDepth: 1 })
  assert.equal(capped.tools, undefined, "a Handle has no fields but the reference's")

  // Fields are writable, as the reference's are: the written value stays on the object.
  worker.seq = 41
  assert.equal(worker.seq, 41)
  rt.concurrentTurns = 3
  assert.equal(rt.concurrentTurns, 3)
  // list() appends to the array it is given, and hands that array back.
  const acc = [{ id: "before", state: "idle", tokens: 0, inbox: 0 }]
  assert.equal(rt.list(lead, acc), acc)
  assert.deepStrictEqual(acc.map((v) => v.id), ["before", lead.id, worker.id])
  await rt.close(rt.root)
})

test("a handle's abort is its turn's: aborting it interrupts the turn; it stays, aborted, after the turn", async () => {
  const { rt, llm } = setup("subagent-lifecycle")
  const slow = spawnOk(rt, rt.root, "slow")
  assert.deepStrictEqual(rt.post(slow, { from: "root", channel: "peer", text: "for later" }), { ok: true })
  assert.equal(slow.abort, null)
  rt.wake(slow, "go")
  const waiting = rt.wait(slow)
  await llm.blockedStarted.promise
  assert.equal(slow.state, "running")
  assert.ok(slow.abort instanceof AbortController)
  assert.equal(slow.abort, slow.abort, "the same controller for the same turn")
  assert.deepStrictEqual(slow.drained.map((i) => i.text), ["for later"])
  const seam = slow.abort
  seam.abort()
  const r = await waiting
  assert.equal(r.isError, true)
  assert.equal(slow.state, "idle")
  assert.equal(llm.aborted, 1)
  // As in the reference, the last turn's controller stays on the handle, aborted.
  assert.equal(slow.abort, seam)
  assert.equal(seam.signal.aborted, true)
  // The next turn gets a controller of its own; rt.interrupt aborts that one too.
  llm.release()
  const again = await wakeWait(rt, slow, "once more")
  assert.equal(again.r.status, "done")
  assert.notEqual(slow.abort, seam)
  assert.equal(slow.abort.signal.aborted, false)
  await rt.close(rt.root)
})

test("maxWallMs cuts the LLM call in flight at the deadline: the turn settles incomplete at once and the model's connection is closed", async () => {
  // issue 27 item 4: before, a 300 ms budget ended only once the model's 6 s reply had come.
  const { startLLM } = await import("./support/llm.mjs")
  const late = { id: "x", choices: [{ index: 0, message: { role: "assistant", content: "late" }, finish_reason: "stop" }] }
  const llm = await startLLM(() => ({
    respond: async (res) => {
      await new Promise((r) => setTimeout(r, 6000))
      if (!res.destroyed) {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify(late))
      }
    },
  }))
  try {
    const registry = { slow: { name: "slow", does: "waits", model: "m", tools: [], team: [], budget: { maxWallMs: 300 } } }
    const rt = new AgentRuntime({ registry, llm: { baseUrl: `${llm.url}/v1`, model: "m", apiKey: "k" } })
    const h = spawnOk(rt, rt.root, "slow")
    const started = Date.now()
    rt.wake(h, "go")
    const r = await rt.wait(h)
    const took = Date.now() - started
    assert.ok(took >= 250 && took < 2000, `settled after ${took} ms`)
    assert.equal(r.status, "incomplete")
    assert.equal(r.isError, true)
    assert.equal(r.text, "budget exhausted (maxWallMs); partial work preserved")
    assert.equal(llm.requests.length, 1)
    const closed = await Promise.race([llm.requests[0].closed.then(() => "closed"), new Promise((ok) => setTimeout(() => ok("still open"), 1500))])
    assert.equal(closed, "closed", "the model's connection is closed when the call is cut")
    const again = rt.wake(h, "again")
    assert.equal(again.ok, false)
    assert.match(again.error, /budget exhausted \(maxWallMs\)/)
    await rt.close(rt.root)
  } finally {
    await llm.close()
  }
})
