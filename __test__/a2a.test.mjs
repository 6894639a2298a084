// Remote A2A agents (SPEC §7A): the descriptor, the config block, agentTools, the toolkit's
// `agents` option and `addAgent`, against scripted peers on 127.0.0.1 and the official
// @a2a-js/sdk server.

import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import { randomUUID } from "node:crypto"
import express from "express"
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from "@a2a-js/sdk/server"
import { TaskState } from "@a2a-js/sdk"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import { agent, agentTools, parseAgentsConfig, createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls } from "./support/llm.mjs"

const listen = async (server) => {
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  return `http://127.0.0.1:${server.address().port}`
}

/**
 * A peer speaking SPEC §7A's wire: the card at the well-known path, and each JSON-RPC call
 * answered by `answer(rpc)` (a result, `{ error }`, `{ http, body }` or `"hang"`).
 */
async function peer(card, answer) {
  const seen = []
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", async () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: body ? JSON.parse(body) : undefined })
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" })
        return res.end(JSON.stringify(card))
      }
      const rpc = JSON.parse(body)
      const out = await answer(rpc)
      if (out === "hang") return
      if (out?.http) {
        res.writeHead(out.http)
        return res.end(out.body)
      }
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify(out?.error ? { jsonrpc: "2.0", id: rpc.id, error: out.error } : { jsonrpc: "2.0", id: rpc.id, result: out }))
    })
  })
  const base = await listen(server)
  if (card && card.url === "SELF") card.url = base + "/"
  return {
    base,
    cardUrl: `${base}/.well-known/agent-card.json`,
    seen,
    rpcs: () => seen.filter((s) => s.method === "POST").map((s) => s.body),
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

/** console.warn's lines while `fn` runs. */
async function warnings(fn) {
  const seen = []
  const orig = console.warn
  console.warn = (...args) => seen.push(args.join(" "))
  try {
    const value = await fn()
    return { value, seen }
  } finally {
    console.warn = orig
  }
}

const DEAD = "http://127.0.0.1:9/.well-known/agent-card.json"

test("agent() is plain data with its four keys, unset ones included", () => {
  const headers = { Authorization: "Bearer ${TOKEN}" }
  const a = agent({ card: "http://x/card", headers, extra: 1 })
  assert.deepEqual(Object.keys(a), ["card", "headers", "timeout", "pollEvery"])
  assert.equal(a.headers, headers, "the caller's own headers object")
  assert.equal(a.timeout, undefined)
  assert.equal("extra" in a, false)
  assert.throws(() => agent(null), TypeError)
})

test("parseAgentsConfig: disabled wins, then enabled:false; malformed entries are skipped", () => {
  const parsed = parseAgentsConfig({
    a: { card: "http://x/1", headers: { A: "${B}" }, timeout: 60000, pollEvery: 500 },
    b: { card: "http://x/2", disabled: true },
    c: { card: "http://x/3", enabled: false },
    d: { card: "http://x/4", enabled: true, disabled: true },
    e: { headers: { x: "y" } },
    f: { card: 7 },
    g: "http://x/7",
    h: null,
    i: { card: "http://x/9", enabled: true },
  })
  assert.deepEqual(parsed, [
    { card: "http://x/1", headers: { A: "${B}" }, timeout: 60000, pollEvery: 500 },
    { card: "http://x/9", headers: undefined, timeout: undefined, pollEvery: undefined },
  ])
  assert.deepEqual(Object.keys(parsed[1]), ["card", "headers", "timeout", "pollEvery"])
  assert.deepEqual(parseAgentsConfig(undefined), [])
  assert.deepEqual(parseAgentsConfig(null), [])
})

test("agentTools: one tool per skill, then SendMessage and GetTask polls to completion", async () => {
  let polls = 0
  const p = await peer(
    { name: "research desk", url: "SELF", skills: [{ id: "search", name: "Search", description: "Search the web" }, { name: "Summarize" }] },
    (rpc) => {
      if (rpc.method === "SendMessage") return { id: "task-1", status: { state: "submitted" } }
      polls++
      if (polls < 2) return { id: "task-1", status: { state: "working" } }
      return { id: "task-1", status: { state: "completed" }, artifacts: [{ parts: [{ kind: "text", text: "3 results" }, { kind: "text", text: "found" }] }] }
    },
  )
  try {
    const tools = await agentTools(agent({ card: p.cardUrl, pollEvery: 10 }))
    assert.deepEqual(tools.map((t) => [t.name, t.description, t.source]), [
      ["research_desk_search", "Search the web", "a2a"],
      ["research_desk_Summarize", "Summarize", "a2a"],
    ])
    assert.deepEqual(tools[0].inputSchema, {
      type: "object",
      properties: { task: { type: "string", description: "The task to send to the agent, in natural language." } },
      required: ["task"],
      additionalProperties: false,
    })
    const r = await tools[0].execute({ task: "release notes" })
    assert.equal(r.output, "3 results\nfound")
    assert.equal(r.isError, false)
    assert.deepEqual(Object.keys(r.metadata), ["agent", "taskId", "state", "polls", "ms"])
    assert.deepEqual({ ...r.metadata, ms: 0 }, { agent: "research desk", taskId: "task-1", state: "completed", polls: 2, ms: 0 })
    const [send, get] = p.rpcs()
    assert.equal(send.method, "SendMessage")
    assert.deepEqual(send.params.message.parts, [{ kind: "text", text: "release notes" }])
    assert.equal(send.params.message.role, "user")
    assert.deepEqual(send.params.configuration, { blocking: false })
    assert.deepEqual(get.params, { id: "task-1" })
    assert.equal(p.seen[1].headers["content-type"], "application/json")
  } finally {
    p.close()
  }
})

test("failures are results: a failed task, a JSON-RPC error, a non-JSON reply, a cancel, a timeout", async () => {
  // Called when a poll of the task "slow" reaches the peer (which never answers it).
  let slowPolled = () => {}
  const p = await peer({ name: "flaky", url: "SELF", skills: [{ id: "risky" }] }, (rpc) => {
    const text = rpc.params?.message?.parts?.[0]?.text
    if (rpc.method === "GetTask" && rpc.params.id === "slow") {
      slowPolled()
      return "hang"
    }
    if (rpc.method === "GetTask") return { id: rpc.params.id, status: { state: "failed", message: { role: "agent", parts: [{ kind: "text", text: "quota exceeded" }] } } }
    if (text === "rpc-error") return { error: { code: -32601, message: "Method not found" } }
    if (text === "html") return { http: 200, body: "<html>" }
    if (text === "slow") return { id: "slow", status: { state: "working" } }
    return { id: "t-f", status: { state: "submitted" } }
  })
  try {
    const [t] = await agentTools(agent({ card: p.cardUrl, pollEvery: 5 }))
    const failed = await t.execute({ task: "go" })
    assert.equal(failed.output, "A2A task t-f failed: quota exceeded")
    assert.equal(failed.isError, true)
    assert.equal(failed.metadata.state, "failed")
    assert.deepEqual(await t.execute({ task: "rpc-error" }).then((r) => [r.output, r.isError]), ["Method not found", true])
    const html = await t.execute({ task: "html" })
    assert.equal(html.isError, true)
    assert.match(html.output, /not JSON/)
    assert.equal(p.rpcs().filter((r) => r.method === "GetTask" && r.params.id === "").length, 0, "no poll of an empty task id")
    // Aborted while GetTask is in flight: canceled.
    const ac = new AbortController()
    slowPolled = () => {
      slowPolled = () => {}
      ac.abort()
    }
    const canceled = await t.execute({ task: "slow" }, { signal: ac.signal })
    assert.equal(canceled.output, "A2A task slow canceled")
    assert.equal(canceled.metadata.state, "canceled")
    // ctx.timeout bounds the whole call, a hanging GetTask included.
    const t0 = Date.now()
    const timedOut = await t.execute({ task: "slow" }, { timeout: 300 })
    assert.equal(timedOut.output, "A2A task slow timed out after 300ms (state=working)")
    assert.ok(Date.now() - t0 < 1000, `took ${Date.now() - t0}ms`)
  } finally {
    p.close()
  }
})

test("agentTools rejects for a card it cannot resolve", async () => {
  await assert.rejects(agentTools(agent({ card: DEAD })), (e) => e instanceof TypeError && e.message === "fetch failed")
  const server = http.createServer((_req, res) => {
    res.writeHead(404)
    res.end("no card here")
  })
  const base = await listen(server)
  try {
    await assert.rejects(agentTools(agent({ card: base + "/card" })), { message: "HTTP 404: no card here" })
  } finally {
    server.close()
  }
})

test("createToolkit({ agents }): resolved beside the other sources; a failing agent only warns", async () => {
  process.env.TN_A2A_TEST_SECRET = "s3cret\nvalue"
  const p = await peer({ name: "desk", url: "SELF", skills: [{ id: "one" }, { id: "two" }] }, () => ({ id: "t", status: { state: "completed" }, artifacts: [{ parts: [{ kind: "text", text: "done" }] }] }))
  const mine = defineTool({ name: "desk_two", description: "mine", run: () => "mine" })
  try {
    const { value: tk, seen } = await warnings(() =>
      createToolkit({
        builtins: false,
        extraTools: [mine],
        agents: [agent({ card: p.cardUrl, pollEvery: 5 }), agent({ card: DEAD }), agent({ card: p.cardUrl, headers: { Authorization: "Bearer ${TN_A2A_TEST_SECRET}" } })],
      }),
    )
    assert.deepEqual(tk.tools().map((t) => [t.name, t.source]), [["desk_one", "a2a"], ["desk_two", "a2a"]])
    assert.deepEqual(seen, [
      `[toolnexus] A2A agent "${DEAD}" failed: fetch failed`,
      `[toolnexus] A2A agent "${p.cardUrl}" failed: Headers.append: the value of "Authorization" is an invalid header value.`,
      '[toolnexus] duplicate tool name "desk_two" — keeping first',
    ])
    assert.ok(!seen.join("\n").includes("s3cret"), "a header value never reaches a warning")
    const r = await tk.execute("desk_one", { task: "x" })
    assert.deepEqual([r.output, r.isError], ["done", false])
    assert.equal(tk.get("desk_one").source, "a2a")
    assert.equal((await tk.get("desk_one").execute({ task: "y" })).output, "done")
    await tk.close()
  } finally {
    delete process.env.TN_A2A_TEST_SECRET
    p.close()
  }
})

test("a config object's agents block is read after the agents option", async () => {
  const a = await peer({ name: "a", url: "SELF", skills: [{ id: "s" }] }, () => "hang")
  const b = await peer({ name: "b", url: "SELF", skills: [{ id: "s" }] }, () => "hang")
  try {
    const tk = await createToolkit({
      builtins: false,
      agents: [agent({ card: b.cardUrl })],
      mcpConfig: { mcpServers: {}, agents: { first: { card: a.cardUrl }, off: { card: DEAD, disabled: true } } },
    })
    assert.deepEqual(tk.tools().map((t) => t.name), ["b_s", "a_s"])
    await tk.close()
  } finally {
    a.close()
    b.close()
  }
})

test("addAgent: a card URL or a descriptor, first name wins, a failing card rejects", async () => {
  const p = await peer({ name: "late", url: "SELF", skills: [{ id: "s" }, { id: "t" }] }, () => ({ id: "x", status: { state: "completed" }, history: [{ role: "agent", parts: [{ kind: "text", text: "hi from history" }] }] }))
  try {
    const tk = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "late_t", description: "mine", run: () => "mine" })] })
    const { value: same, seen } = await warnings(() => tk.addAgent(p.cardUrl, { pollEvery: 5 }))
    assert.equal(same, tk)
    assert.deepEqual(tk.tools().map((t) => t.name), ["late_t", "late_s"])
    assert.deepEqual(seen, ['[toolnexus] duplicate tool name "late_t" — keeping first'])
    assert.equal((await tk.execute("late_s", { task: "q" })).output, "hi from history")
    assert.equal((await tk.execute("late_t", {})).output, "mine")
    await assert.rejects(tk.addAgent(agent({ card: DEAD })), { message: "fetch failed" })
    assert.equal(tk.tools().length, 2)
    const { seen: again } = await warnings(() => tk.addAgent(agent({ card: p.cardUrl })))
    assert.equal(again.length, 2)
    await tk.close()
  } finally {
    p.close()
  }
})

test("a client run calls an agent's tool and hands its answer to the model", async (t) => {
  const p = await peer({ name: "desk", url: "SELF", skills: [{ id: "ask" }] }, (rpc) =>
    rpc.method === "SendMessage"
      ? { id: "t-run", status: { state: "working" } }
      : { id: "t-run", status: { state: "completed" }, artifacts: [{ parts: [{ kind: "text", text: "the desk says 42" }] }] },
  )
  t.after(() => p.close())
  const llm = await startLLM((req) => {
    const tool = req.json.messages.find((m) => m.role === "tool")
    return tool ? oaText("relayed: " + tool.content) : oaCalls([{ id: "c1", name: "desk_ask", args: { task: "what is the answer?" } }])
  })
  t.after(() => llm.close())
  const tk = await createToolkit({ builtins: false, agents: [agent({ card: p.cardUrl, pollEvery: 5 })] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const res = await client.run("ask the desk", { toolkit: tk })
  assert.equal(res.text, "relayed: the desk says 42")
  assert.equal(p.rpcs()[0].params.message.parts[0].text, "what is the answer?")
  await tk.close()
})

// ---- the official @a2a-js/sdk (1.3.0) as the peer ----------------------------------------
//
// The SDK speaks A2A v1.0; SPEC §7A pins an earlier wire. What overlaps: the card path and
// the card's `name` / `skills` (our naming), the endpoint fallback to the card's origin (a
// v1.0 card has no top-level `url`), the method name `SendMessage` and a `kind: "text"` part
// read as text. What does not (so a task cannot complete over SPEC's wire): a request without
// an `A2A-Version: 1.0` header is taken as v0.3 and refused; SendMessage's result is
// `{ task: {...} }` rather than the task; states are `TASK_STATE_*`; parts have no `kind`;
// `configuration.blocking` is `returnImmediately`; roles are `ROLE_USER` / `ROLE_AGENT`.

async function sdkAgent() {
  const received = []
  const textPart = (value) => ({ content: { $case: "text", value }, filename: "", mediaType: "", metadata: {} })
  const executor = {
    async execute(ctx, bus) {
      const { taskId, contextId, userMessage } = ctx
      const text = userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("")
      received.push(text)
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined }, history: [userMessage], artifacts: [], metadata: {} }))
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: randomUUID(), name: "", description: "", parts: [textPart("echo: " + text)], metadata: {}, extensions: [] }, append: false, lastChunk: true, metadata: {} }))
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined }, metadata: {} }))
      bus.finished()
    },
    async cancelTask() {},
  }
  const app = express()
  const server = http.createServer(app)
  const base = await listen(server)
  const card = {
    name: "Echo Agent",
    description: "echoes what it is told",
    version: "1.0.0",
    supportedInterfaces: [{ url: base + "/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ["text"],
    defaultOutputModes: ["text"],
    skills: [{ id: "echo", name: "Echo", description: "Echo the task back", tags: ["test"] }],
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor)
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }))
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  return {
    cardUrl: base + "/.well-known/agent-card.json",
    received,
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

test("@a2a-js/sdk: its card resolves to our tools, named from the card", async () => {
  const sdk = await sdkAgent()
  try {
    const tools = await agentTools(agent({ card: sdk.cardUrl }))
    assert.deepEqual(tools.map((t) => [t.name, t.description, t.source]), [["Echo_Agent_echo", "Echo the task back", "a2a"]])
    const tk = await createToolkit({ builtins: false, agents: [agent({ card: sdk.cardUrl })] })
    assert.deepEqual(tk.tools().map((t) => t.name), ["Echo_Agent_echo"])
    await tk.close()
  } finally {
    sdk.close()
  }
})

test("@a2a-js/sdk: a v1.0 card (supportedInterfaces, no url) is spoken to in v1.0, and the task's text comes back", async () => {
  const sdk = await sdkAgent()
  try {
    // The card offers only a v1.0 JSON-RPC interface: agent() sends A2A-Version 1.0, v1.0's
    // message shape, and reads the `{ task }` reply and its TASK_STATE_* spellings.
    const [tool] = await agentTools(agent({ card: sdk.cardUrl, pollEvery: 5, timeout: 5000 }))
    const r = await tool.execute({ task: "hello there" })
    assert.deepEqual(sdk.received, ["hello there"])
    assert.equal(r.isError, false, r.output)
    assert.equal(r.output, "echo: hello there")
    assert.equal(r.metadata.state, "completed")
  } finally {
    sdk.close()
  }
})
