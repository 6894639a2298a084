// SPEC §7D under stress and failure: a thousand handles in one tree behind both gates, failing
// tools and failing LLM calls crossing the handle boundary as results, interrupts and closes
// in the middle of turns, and the host process around a runtime (a terminated worker thread,
// a process that must exit by itself, a process.exit while turns run).
import test from "node:test"
import assert from "node:assert/strict"
import path from "node:path"
import { agents, defineTool } from "../index.js"
import { runChild, REPO } from "./support/llm.mjs"
import { scriptedLLM, VirtualClock, driveClock, flush, until, reply, toolCalls } from "./support/agents-mock.mjs"

const { AgentRuntime, isVerbError } = agents
const USAGE = { prompt_tokens: 30, completion_tokens: 10, total_tokens: 40 }
const ENTRY_PATH = path.join(REPO, "index.js")

const unhandled = []
process.on("unhandledRejection", (e) => unhandled.push(e))

function spawnOk(rt, parent, name, budget) {
  const h = rt.spawn(parent, name, budget)
  assert.ok(!isVerbError(h), `spawn ${name}: ${h?.error}`)
  return h
}

const userText = (body) => {
  const m = [...body.messages].reverse().find((x) => x.role === "user")
  return typeof m?.content === "string" ? m.content : ""
}

test("1,000 workers under one coordinator (maxConcurrent 8, maxConcurrentTurns 4): all done, no gate exceeded", async () => {
  const WORKERS = 1000
  let running = 0
  let maxRunning = 0
  let inFlight = 0
  let maxInFlight = 0
  const work = defineTool({
    name: "work",
    description: "does one unit of work",
    inputSchema: { type: "object", properties: { n: { type: "number" } } },
    run: async (a) => {
      await new Promise((r) => setImmediate(r))
      return `w(${a.n})`
    },
  })
  const fetch = async (_u, init) => {
    const body = JSON.parse(init.body)
    inFlight++
    maxInFlight = Math.max(maxInFlight, inFlight)
    try {
      await new Promise((r) => setImmediate(r))
      const tools = body.messages.filter((m) => m.role === "tool")
      if (tools.length === 0) {
        // A worker's first call: it is running from here until its final answer.
        running++
        maxRunning = Math.max(maxRunning, running)
        const n = Number(/job (\d+)/.exec(userText(body))?.[1])
        return reply(toolCalls([{ name: "work", args: { n } }]), USAGE)
      }
      running--
      return reply({ content: `finished ${tools[0].content}` }, USAGE)
    } finally {
      inFlight--
    }
  }
  const rt = new AgentRuntime({
    fetch,
    clock: new VirtualClock(),
    maxConcurrentTurns: 4,
    registry: {
      coordinator: { name: "coordinator", does: "fans out", model: "m-coord" },
      worker: { name: "worker", does: "works", model: "m-worker", tools: [work] },
    },
  })
  const coord = spawnOk(rt, rt.root, "coordinator", { maxConcurrent: 8, maxChildren: WORKERS })
  const workers = []
  for (let i = 0; i < WORKERS; i++) workers.push(spawnOk(rt, coord, "worker"))
  assert.deepStrictEqual(rt.spawn(coord, "worker"), { error: `maxChildren ${WORKERS} exceeded` })
  assert.equal(workers.at(-1).id, `root/coordinator.1/worker.${WORKERS}`)

  workers.forEach((w, i) => assert.deepStrictEqual(rt.wake(w, `job ${i}`), { ok: true }))
  assert.equal(workers.filter((w) => w.state === "running").length, 8, "admission is synchronous: exactly 8 admitted")
  const results = await Promise.all(workers.map((w) => rt.wait(w)))

  results.forEach((r, i) => {
    assert.equal(r.status, "done", `${workers[i].id}: ${r.text}`)
    assert.equal(r.text, `finished w(${i})`)
  })
  assert.ok(workers.every((w) => w.state === "idle" && w.turnsTotal === 2))
  assert.ok(rt.maxObservedConcurrentTurns <= 4, String(rt.maxObservedConcurrentTurns))
  assert.ok(maxInFlight <= 4, `LLM calls in flight reached ${maxInFlight}`)
  assert.ok(maxRunning <= 8, `running children reached ${maxRunning}`)
  assert.equal(running, 0)
  assert.equal(rt.trace.filter((l) => l.includes(": wake QUEUED")).length, WORKERS - 8)
  assert.equal(rt.trace.filter((l) => l.includes(": DEQUEUED wake")).length, WORKERS - 8)
  assert.equal(coord.usageTotal, WORKERS * 80, "every worker's usage rolled up")
  assert.equal(rt.list().length, WORKERS + 1)

  await rt.close(rt.root)
  assert.ok(rt.list().every((v) => v.state === "closed"))
  assert.deepStrictEqual(unhandled, [])
})

test("a child whose tool throws: an isError tool result, the child and its parent carry on", async () => {
  const afterTool = []
  const explode = defineTool({
    name: "explode",
    description: "always fails",
    inputSchema: { type: "object", properties: {} },
    run: () => {
      throw new Error("disk on fire")
    },
  })
  const fetch = async (_u, init) => {
    const body = JSON.parse(init.body)
    const tools = body.messages.filter((m) => m.role === "tool")
    if (body.model === "m-fragile") {
      return reply(tools.length ? { content: `recovered after: ${tools[0].content}` } : toolCalls([{ name: "explode", args: {} }]), USAGE)
    }
    return reply(tools.length ? { content: `parent saw: ${tools[0].content}` } : toolCalls([{ name: "task", args: { agent: "fragile", prompt: "try it" } }]), USAGE)
  }
  const rt = new AgentRuntime({
    fetch,
    clock: new VirtualClock(),
    hooks: { afterTool: (ev) => void afterTool.push({ name: ev.name, result: ev.result }) },
    registry: {
      boss: { name: "boss", does: "delegates", model: "m-boss", team: ["fragile"] },
      fragile: { name: "fragile", does: "has a broken tool", model: "m-fragile", tools: [explode] },
    },
  })
  const boss = spawnOk(rt, rt.root, "boss")
  rt.wake(boss, "go")
  const r = await rt.wait(boss)
  assert.equal(r.status, "done")
  assert.match(r.text, /^parent saw: recovered after: .*disk on fire/)
  const exploded = afterTool.find((x) => x.name === "explode")
  assert.ok(exploded, JSON.stringify(afterTool))
  assert.equal(exploded.result.isError, true)
  assert.match(exploded.result.output, /disk on fire/)
  const task = afterTool.find((x) => x.name === "task")
  assert.equal(task.result.isError, false, "the child finished; only its tool failed")
  assert.equal(boss.state, "idle")
  await rt.close(rt.root)
})

test("a child whose LLM call fails: status error, handle idle, nothing thrown to the host", async () => {
  let failing = true
  let attempts = 0
  const fetch = async (_u, init) => {
    const body = JSON.parse(init.body)
    if (body.model === "m-flaky") {
      attempts++
      if (failing) throw new Error("connection reset by peer")
      return reply({ content: "flaky is back" }, USAGE)
    }
    const tools = body.messages.filter((m) => m.role === "tool")
    return reply(tools.length ? { content: `parent got: ${tools[0].content}` } : toolCalls([{ name: "task", args: { agent: "flaky", prompt: "try" } }]), USAGE)
  }
  const rt = new AgentRuntime({
    fetch,
    clock: new VirtualClock(),
    registry: {
      boss: { name: "boss", does: "delegates", model: "m-boss", team: ["flaky"] },
      flaky: { name: "flaky", does: "unreliable", model: "m-flaky" },
    },
  })
  const h = spawnOk(rt, rt.root, "flaky")
  assert.deepStrictEqual(rt.wake(h, "hello"), { ok: true })
  const r = await rt.wait(h)
  assert.equal(r.status, "error")
  assert.equal(r.isError, true)
  assert.match(r.text, /connection reset by peer/)
  assert.equal(h.state, "idle")
  assert.ok(attempts >= 1)
  assert.ok(rt.trace.some((l) => l.startsWith(`${h.id}: running→idle (error:`)), rt.trace.join("\n"))

  // Through a parent: the failure is a tool result the parent's model reads, not an exception.
  const boss = spawnOk(rt, rt.root, "boss")
  rt.wake(boss, "delegate")
  const rb = await rt.wait(boss)
  assert.equal(rb.status, "done")
  assert.match(rb.text, /^parent got: \[error\] .*connection reset by peer/)

  // The handle is alive: once the model answers again, so does it.
  failing = false
  rt.wake(h, "again")
  const again = await rt.wait(h)
  assert.equal(again.status, "done")
  assert.equal(again.text, "flaky is back")
  await rt.close(rt.root)
  assert.deepStrictEqual(unhandled, [])
})

test("interrupts mid-turn, while holding and while queued on the turn gate, free the gate", async () => {
  const llm = scriptedLLM({
    usagePerCall: USAGE,
    scripts: {
      "m-slow": [{ always: true, text: "slow-done", blocksUntil: "released-or-aborted" }],
      "m-quick": [{ always: true, text: "quick-done" }],
    },
  })
  const rt = new AgentRuntime({
    fetch: llm.fetch,
    clock: new VirtualClock(),
    maxConcurrentTurns: 1,
    registry: { slow: { name: "slow", does: "slow", model: "m-slow" }, quick: { name: "quick", does: "quick", model: "m-quick" } },
  })
  const holder = spawnOk(rt, rt.root, "slow")
  const queued = spawnOk(rt, rt.root, "quick")
  rt.wake(holder, "hold the only slot")
  await llm.blockedStarted.promise
  rt.post(queued, { from: "external", channel: "external", text: "keep me" })
  rt.wake(queued, "wait for the gate")
  await flush()
  assert.equal(queued.state, "running")
  assert.equal(llm.countFor("m-quick"), 0, "the gate holds it back")

  rt.interrupt(queued)
  const rq = await rt.wait(queued)
  assert.equal(rq.status, "interrupted")
  assert.equal(queued.state, "idle")
  assert.equal(queued.inbox.length, 1, "its drained item is back")

  rt.interrupt(holder)
  const rh = await rt.wait(holder)
  assert.equal(rh.status, "interrupted")
  assert.equal(llm.aborted, 1)

  // The slot was released by the interrupted holder: new turns get through.
  const third = spawnOk(rt, rt.root, "quick")
  rt.wake(third, "go")
  assert.equal((await rt.wait(third)).text, "quick-done")
  rt.wake(queued, "again")
  const again = await rt.wait(queued)
  assert.equal(again.text, "quick-done")
  assert.equal(queued.inbox.length, 0)
  assert.equal(rt.maxObservedConcurrentTurns, 1)
  await rt.close(rt.root)
})

test("a parent closed while 50 children run: every handle closed, every onClose once, no stray rejection", async () => {
  const CHILDREN = 50
  const llm = scriptedLLM({ usagePerCall: USAGE, scripts: { "m-slow": [{ always: true, text: "slow-done", blocksUntil: "released-or-aborted" }] } })
  const closes = new Map()
  const onClose = async (h, reason) => {
    closes.set(h.id, [...(closes.get(h.id) ?? []), reason])
    await new Promise((r) => setImmediate(r))
  }
  const clock = new VirtualClock()
  const rt = new AgentRuntime({
    fetch: llm.fetch,
    clock,
    maxConcurrentTurns: 64,
    registry: {
      coordinator: { name: "coordinator", does: "parent", model: "m-slow", onClose },
      slow: { name: "slow", does: "slow", model: "m-slow", onClose },
    },
  })
  const coord = spawnOk(rt, rt.root, "coordinator", { maxConcurrent: 64 })
  const kids = Array.from({ length: CHILDREN }, () => spawnOk(rt, coord, "slow"))
  for (const k of kids) rt.wake(k, "work")
  await until(() => llm.blocked === CHILDREN, "all children in their LLM call")
  assert.ok(kids.every((k) => k.state === "running"))
  const waits = kids.map((k) => rt.wait(k))

  await driveClock(rt.close(coord), clock, 200)

  assert.equal(coord.state, "closed")
  assert.ok(kids.every((k) => k.state === "closed"))
  assert.equal(closes.size, CHILDREN + 1)
  for (const [id, reasons] of closes) assert.equal(reasons.length, 1, `${id} closed ${reasons.length} times`)
  const results = await Promise.all(waits)
  for (const r of results) {
    assert.equal(r.isError, true)
    assert.ok(["closed", "interrupted"].includes(r.status), r.status)
  }
  assert.equal(llm.aborted, CHILDREN, "every in-flight call was aborted")
  assert.equal(llm.blocked, 0)
  await flush()
  assert.deepStrictEqual(unhandled, [])
  // close ≠ loss: the closed tree is still there to read.
  assert.equal(rt.list().length, CHILDREN + 1)
})

// ---- the host process around a runtime ----

function endedCleanly(r, stdout) {
  const why = `code ${r.code} signal ${r.signal} timedOut ${r.timedOut}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`
  assert.equal(r.timedOut, false, why)
  assert.equal(r.signal, null, why)
  assert.equal(r.code, 0, why)
  if (stdout !== undefined) assert.equal(r.stdout, stdout, why)
}

test("a worker thread running agent turns is terminated; the process that hosted it carries on", async () => {
  const r = await runChild(
    `
    import { Worker } from "node:worker_threads"
    const entry = ${JSON.stringify(ENTRY_PATH)}
    const worker = new Worker(\`
      const t = require(\${JSON.stringify(entry)})
      const { parentPort } = require("node:worker_threads")
      let calls = 0
      const fetch = (_u, init) => {
        calls++
        if (calls === 3) parentPort.postMessage("running")
        return new Promise((_, reject) => init.signal?.addEventListener("abort", () => reject(init.signal.reason), { once: true }))
      }
      const rt = new t.agents.AgentRuntime({ fetch, maxConcurrentTurns: 3, registry: { w: { name: "w", does: "w", model: "m" } } })
      for (let i = 0; i < 6; i++) {
        const h = rt.spawn(rt.root, "w")
        rt.wake(h, "go " + i)
        rt.wait(h).then((res) => parentPort.postMessage("settled " + res.status))
      }
    \`, { eval: true, execArgv: [] })
    worker.on("error", (e) => { console.error("worker error", e); process.exit(5) })
    await new Promise((resolve) => worker.once("message", resolve))
    const code = await worker.terminate()
    const t = await import(ENTRY)
    const rt = new t.agents.AgentRuntime({
      fetch: async () => new Response(JSON.stringify({ choices: [{ message: { role: "assistant", content: "main alive" } }] }), { headers: { "content-type": "application/json" } }),
      registry: { m: { name: "m", does: "m", model: "m" } },
    })
    const h = rt.spawn(rt.root, "m")
    rt.wake(h, "hi")
    const res = await rt.wait(h)
    await rt.close(rt.root)
    console.log("terminated", code, res.status, res.text)
  `,
    { timeoutMs: 60_000 },
  )
  endedCleanly(r)
  // Nothing in the worker holds its loop (the pending fetches are plain Promises), so it may
  // have ended by itself (0, or undefined when it was gone before terminate() was called) before
  // terminate() reached it (1); either way the host carries on.
  assert.match(r.stdout, /^terminated (0|1|undefined) done main alive\n$/)
})

test("a process with a suspended handle and a wait() that never settles exits by itself", async () => {
  const r = await runChild(
    `
    const { agents, defineTool, pending } = await import(ENTRY)
    const gate = defineTool({
      name: "needs_approval",
      description: "needs a human",
      inputSchema: { type: "object", properties: {} },
      run: (_a, ctx) => (ctx?.answer ? "approved" : pending({ kind: "approval", prompt: "ok?" })),
    })
    let hangStarted
    const hanging = new Promise((r) => (hangStarted = r))
    const fetch = async (_u, init) => {
      const body = JSON.parse(init.body)
      if (body.model === "m-hang") {
        hangStarted()
        return new Promise(() => {})
      }
      const tools = body.messages.filter((m) => m.role === "tool")
      const message = tools.length
        ? { role: "assistant", content: "done" }
        : { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "needs_approval", arguments: "{}" } }] }
      return new Response(JSON.stringify({ choices: [{ message }] }), { headers: { "content-type": "application/json" } })
    }
    const rt = new agents.AgentRuntime({
      fetch,
      registry: {
        asker: { name: "asker", does: "asks", model: "m-ask", tools: [gate] },
        hang: { name: "hang", does: "never answers", model: "m-hang" },
      },
    })
    const a = rt.spawn(rt.root, "asker")
    rt.wake(a, "please")
    const ra = await rt.wait(a)
    const b = rt.spawn(rt.root, "hang")
    rt.wake(b, "forever")
    rt.wait(b).then(() => console.log("unexpected settle"))
    rt.wait(b, { timeoutMs: 3_600_000 }).then(() => console.log("unexpected timeout"))
    await hanging
    console.log("parked", ra.status, a.state, b.state)
  `,
    { timeoutMs: 30_000 },
  )
  endedCleanly(r, "parked pending suspended running\n")
})

test("process.exit(0) while LLM calls and a tool are in flight ends with code 0, no crash", async () => {
  const r = await runChild(
    `
    const { agents, defineTool } = await import(ENTRY)
    let toolStarted
    const toolRunning = new Promise((r) => (toolStarted = r))
    const stuck = defineTool({
      name: "stuck",
      description: "never returns",
      inputSchema: { type: "object", properties: {} },
      run: () => {
        toolStarted()
        return new Promise(() => {})
      },
    })
    let inFlight = 0
    const fetch = async (_u, init) => {
      const body = JSON.parse(init.body)
      if (body.model === "m-tool") {
        return new Response(JSON.stringify({ choices: [{ message: { role: "assistant", content: null, tool_calls: [{ id: "s1", type: "function", function: { name: "stuck", arguments: "{}" } }] } }] }), { headers: { "content-type": "application/json" } })
      }
      inFlight++
      return new Promise((_, reject) => init.signal?.addEventListener("abort", () => reject(init.signal.reason), { once: true }))
    }
    const rt = new agents.AgentRuntime({
      fetch,
      registry: { hang: { name: "hang", does: "hangs", model: "m-hang" }, tooly: { name: "tooly", does: "tools", model: "m-tool", tools: [stuck] } },
    })
    for (let i = 0; i < 3; i++) rt.wake(rt.spawn(rt.root, "hang"), "go")
    rt.wake(rt.spawn(rt.root, "tooly"), "go")
    await toolRunning
    while (inFlight < 3) await new Promise((r) => setImmediate(r))
    console.log("exiting", rt.list().map((v) => v.state).join(","))
    process.exit(0)
  `,
    { timeoutMs: 30_000 },
  )
  endedCleanly(r, "exiting running,running,running,running\n")
  assert.doesNotMatch(r.stderr, /FATAL|Segmentation|Abort|panicked/i)
})
