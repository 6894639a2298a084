// A2A streaming and cancel (issue 27), both ways: our server answers `message/stream` /
// `SendStreamingMessage` with server-sent events and `tasks/cancel` / `CancelTask` by stopping
// the run (its signal aborts); our agent() streams from an agent whose card says it streams,
// and tells the agent when a call it made is canceled.

import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import { startA2AServer, agent, agentTools, createToolkit, createClient, defineTool } from "../index.js"
import { startLLM, oaText, oaCalls } from "./support/llm.mjs"

async function post(url, method, params, headers = {}) {
  const res = await fetch(url.replace(/\/$/, "") + "/", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }),
  })
  return res
}
const message = (text, v1) =>
  v1 ? { message: { role: "ROLE_USER", messageId: "m1", parts: [{ text }] } } : { message: { kind: "message", role: "user", messageId: "m1", parts: [{ kind: "text", text }] } }

/** The `result`s of an event stream's JSON-RPC replies. */
const events = (text) =>
  text
    .split("\n\n")
    .filter((b) => b.startsWith("data: "))
    .map((b) => JSON.parse(b.slice(6)))

test("message/stream and SendStreamingMessage: the Task, working, its artifact, then the last status", async (t) => {
  const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: {}, runTask: async (text) => ({ text: `echo ${text}`, status: "done" }) })
  t.after(() => srv.stop())

  const v03 = await post(srv.url, "message/stream", message("a"))
  assert.equal(v03.headers.get("content-type"), "text/event-stream")
  const got = events(await v03.text())
  assert.ok(got.every((e) => e.jsonrpc === "2.0" && e.id === 9), JSON.stringify(got))
  assert.deepEqual(got.map((e) => e.result.kind), ["task", "status-update", "artifact-update", "status-update"])
  assert.equal(got[0].result.status.state, "submitted")
  assert.deepEqual([got[1].result.status.state, got[1].result.final], ["working", false])
  assert.deepEqual(got[2].result.artifact.parts, [{ kind: "text", text: "echo a" }])
  assert.deepEqual([got[3].result.status.state, got[3].result.final], ["completed", true])
  const id = got[0].result.id
  assert.ok(got.every((e) => (e.result.taskId ?? e.result.id) === id))

  const v1 = events(await (await post(srv.url, "SendStreamingMessage", message("b", true), { "A2A-Version": "1.0" })).text())
  assert.deepEqual(v1.map((e) => Object.keys(e.result)[0]), ["task", "statusUpdate", "artifactUpdate", "statusUpdate"])
  assert.equal(v1[0].result.task.status.state, "TASK_STATE_SUBMITTED")
  assert.deepEqual(v1[2].result.artifactUpdate.artifact.parts, [{ text: "echo b" }])
  assert.equal(v1[3].result.statusUpdate.status.state, "TASK_STATE_COMPLETED")
})

test("a run that fails or asks for input ends its stream with that status and its message", async (t) => {
  const srv = await startA2AServer({
    addr: "127.0.0.1:0",
    skills: [],
    a2a: {},
    runTask: async (text) => {
      if (text === "boom") throw new Error("it broke")
      return { status: "pending", pending: { prompt: "Which one?" } }
    },
  })
  t.after(() => srv.stop())
  const failed = events(await (await post(srv.url, "message/stream", message("boom"))).text()).at(-1).result
  assert.equal(failed.status.state, "failed")
  assert.equal(failed.final, true)
  assert.match(failed.status.message.parts[0].text, /it broke/)
  const asked = events(await (await post(srv.url, "message/stream", message("x"))).text()).at(-1).result
  assert.equal(asked.status.state, "input-required")
  assert.equal(asked.status.message.parts[0].text, "Which one?")
})

test("tasks/cancel and CancelTask stop a running Task: its run's signal aborts, the Task ends canceled", async (t) => {
  const aborted = []
  const srv = await startA2AServer({
    addr: "127.0.0.1:0",
    skills: [],
    a2a: {},
    runTask: (text, contextId, extra) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ text: "too late", status: "done" }), 10_000)
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer)
          aborted.push(text)
          resolve({ text: "stopped", status: "done" })
        })
      }),
  })
  t.after(() => srv.stop())
  for (const [method, v1] of [["tasks/cancel", false], ["CancelTask", true]]) {
    const headers = v1 ? { "A2A-Version": "1.0" } : {}
    const params = v1 ? { ...message(method, true), configuration: { returnImmediately: true } } : { ...message(method), configuration: { blocking: false } }
    const sent = await (await post(srv.url, v1 ? "SendMessage" : "message/send", params, headers)).json()
    const id = v1 ? sent.result.task.id : sent.result.id
    await new Promise((r) => setTimeout(r, 50))
    const canceled = await (await post(srv.url, method, { id }, headers)).json()
    assert.equal(v1 ? canceled.result.status.state : canceled.result.status.state, v1 ? "TASK_STATE_CANCELED" : "canceled", JSON.stringify(canceled))
    const again = await (await post(srv.url, method, { id }, headers)).json()
    assert.deepEqual(again.error, { code: -32002, message: `Task cannot be canceled: ${id}` })
    const got = await (await post(srv.url, v1 ? "GetTask" : "tasks/get", { id }, headers)).json()
    assert.equal(got.result.status.state, v1 ? "TASK_STATE_CANCELED" : "canceled")
  }
  assert.deepEqual(aborted, ["tasks/cancel", "CancelTask"])
  assert.deepEqual((await (await post(srv.url, "CancelTask", { id: "nope" })).json()).error, { code: -32001, message: "Task not found: nope" })
})

test("toolkit.serve: a canceled Task aborts its run: no model call after the cancel", async (t) => {
  let started
  let release
  const running = new Promise((r) => (started = r))
  const slow = defineTool({
    name: "slow",
    description: "waits",
    inputSchema: { type: "object", properties: {} },
    // As in the reference, a run's tools get no signal: this one ends when the test says so.
    run: () =>
      new Promise((resolve) => {
        release = () => resolve("finished")
        started()
      }),
  })
  const llm = await startLLM([oaCalls([{ id: "c1", name: "slow", args: {} }]), oaText("done")])
  t.after(() => llm.close())
  const tk = await createToolkit({ builtins: false, extraTools: [slow] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: {} })
  t.after(() => srv.stop())
  const sent = await (await post(srv.url, "message/send", { ...message("go"), configuration: { blocking: false } })).json()
  await running
  const canceled = await (await post(srv.url, "tasks/cancel", { id: sent.result.id })).json()
  assert.equal(canceled.result.status.state, "canceled")
  release()
  await new Promise((r) => setTimeout(r, 300))
  assert.equal(llm.requests.length, 1, "the aborted run made no second model call")
  const got = await (await post(srv.url, "tasks/get", { id: sent.result.id })).json()
  assert.equal(got.result.status.state, "canceled", "the Task stays canceled")
})

/** A scripted A2A v1.0 agent on a real server: its card (no `url`, one 1.0 interface) and each JSON-RPC call recorded. */
async function v1Agent({ streaming, answer }) {
  const calls = []
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", async () => {
      const base = `http://127.0.0.1:${server.address().port}`
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" })
        return res.end(
          JSON.stringify({
            name: "v1agent",
            description: "",
            version: "1",
            capabilities: { streaming },
            supportedInterfaces: [{ url: base + "/rpc", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
            skills: [{ id: "s", name: "s", description: "d", tags: ["s"] }],
          }),
        )
      }
      const rpc = JSON.parse(body)
      calls.push({ method: rpc.method, params: rpc.params, version: req.headers["a2a-version"], accept: req.headers.accept })
      await answer(rpc, res)
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  return {
    card: `http://127.0.0.1:${server.address().port}/.well-known/agent-card.json`,
    calls,
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

const reply = (res, id, result) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({ jsonrpc: "2.0", id, result }))
}

test("agent(): a card that says it streams is streamed from: one SendStreamingMessage, no polling", async (t) => {
  const peer = await v1Agent({
    streaming: true,
    answer: (rpc, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      const ev = (result) => res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result })}\n\n`)
      ev({ task: { id: "t7", contextId: "c", status: { state: "TASK_STATE_SUBMITTED" } } })
      ev({ statusUpdate: { taskId: "t7", contextId: "c", status: { state: "TASK_STATE_WORKING" } } })
      ev({ artifactUpdate: { taskId: "t7", contextId: "c", artifact: { artifactId: "a", parts: [{ text: "streamed " }] } } })
      ev({ artifactUpdate: { taskId: "t7", contextId: "c", append: true, artifact: { artifactId: "a", parts: [{ text: "answer" }] } } })
      ev({ statusUpdate: { taskId: "t7", contextId: "c", status: { state: "TASK_STATE_COMPLETED" } } })
      res.end()
    },
  })
  t.after(() => peer.close())
  const [tool] = await agentTools(agent({ card: peer.card, pollEvery: 10 }))
  const out = await tool.execute({ task: "hi" })
  assert.equal(out.isError, false, out.output)
  assert.equal(out.output, "streamed \nanswer", "each text part of the appended artifact, as a Task's output reads them")
  assert.deepEqual(out.metadata.taskId, "t7")
  assert.equal(out.metadata.polls, 0)
  assert.deepEqual(peer.calls.map((c) => c.method), ["SendStreamingMessage"])
  assert.equal(peer.calls[0].version, "1.0")
  assert.equal(peer.calls[0].accept, "text/event-stream")
  assert.equal(peer.calls[0].params.message.parts[0].text, "hi")
})

test("agent(): a call canceled by its signal tells the agent (CancelTask with the task's id)", async (t) => {
  let cancelSeen
  const canceled = new Promise((r) => (cancelSeen = r))
  const peer = await v1Agent({
    streaming: false,
    answer: (rpc, res) => {
      if (rpc.method === "CancelTask") cancelSeen(rpc.params)
      const state = rpc.method === "CancelTask" ? "TASK_STATE_CANCELED" : "TASK_STATE_WORKING"
      const task = { id: "t9", contextId: "c", status: { state } }
      reply(res, rpc.id, rpc.method === "SendMessage" ? { task } : task)
    },
  })
  t.after(() => peer.close())
  const [tool] = await agentTools(agent({ card: peer.card, pollEvery: 20 }))
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 100)
  const out = await tool.execute({ task: "long" }, { signal: ac.signal })
  assert.equal(out.isError, true)
  assert.equal(out.output, "A2A task t9 canceled")
  const params = await Promise.race([canceled, new Promise((_, no) => setTimeout(() => no(new Error("no CancelTask reached the agent")), 5000))])
  assert.deepEqual(params, { id: "t9" })
})

test("a served toolkit's tool reports (ctx.progress, ctx.log) reach a streaming A2A caller as working status updates", async (t) => {
  const llm = await startLLM((req) =>
    (req.json?.messages ?? []).some((m) => m.role === "tool") ? oaText("all done") : oaCalls([{ id: "c1", name: "build", args: {} }]),
  )
  t.after(() => llm.close())
  const build = defineTool({
    name: "build",
    description: "reports as it goes",
    run: async (_a, ctx) => {
      ctx.progress(1, 2)
      await new Promise((r) => setTimeout(r, 5))
      ctx.progress(2, 2, "linked")
      ctx.log("warning", "slow disk")
      return "built"
    },
  })
  const tk = await createToolkit({ builtins: false, extraTools: [build] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const srv = await tk.serve("127.0.0.1:0", { client, a2a: {} })
  t.after(() => srv.stop())

  const got = events(await (await post(srv.url, "message/stream", message("go"))).text()).map((e) => e.result)
  const working = got.filter((e) => e.kind === "status-update" && e.status.state === "working")
  assert.deepEqual(
    working.map((e) => e.status.message?.parts[0].text),
    [undefined, "1/2", "linked", "warning: slow disk"],
  )
  assert.ok(working.every((e) => e.final === false))
  assert.deepEqual(working[2].status.message.parts[1], {
    kind: "data",
    data: { type: "progress", name: "build", id: "c1", turn: 0, progress: 2, total: 2, message: "linked" },
  })
  assert.equal(working[2].status.message.kind, "message")
  assert.equal(got.at(-1).status.state, "completed")
  // The Task's saved states are untouched: a read after the end shows it completed, no report.
  const read = await (await post(srv.url, "tasks/get", { id: got[0].id })).json()
  assert.equal(read.result.status.state, "completed")

  // v1.0 callers get the same, in their shapes; a caller that does not stream gets the result only.
  const v1 = events(await (await post(srv.url, "SendStreamingMessage", message("go", true), { "A2A-Version": "1.0" })).text())
  const v1working = v1.filter((e) => e.result.statusUpdate?.status.state === "TASK_STATE_WORKING")
  assert.deepEqual(v1working.map((e) => e.result.statusUpdate.status.message?.parts[0].text), [undefined, "1/2", "linked", "warning: slow disk"])
  assert.deepEqual(v1working[1].result.statusUpdate.status.message.parts[1].data.progress, 1)
  const sent = await (await post(srv.url, "message/send", message("go"))).json()
  assert.equal(sent.result.status.state, "completed")
  assert.equal(sent.result.artifacts[0].parts[0].text, "all done")
})

test("a runTask of one's own reports to the Task's caller when it starts the run with the Task's signal", async (t) => {
  const llm = await startLLM((req) =>
    (req.json?.messages ?? []).some((m) => m.role === "tool") ? oaText("fine") : oaCalls([{ id: "c1", name: "step", args: {} }]),
  )
  t.after(() => llm.close())
  const step = defineTool({ name: "step", description: "one step", run: (_a, ctx) => (ctx.progress(1, 1, "stepped"), "ok") })
  const toolkit = await createToolkit({ builtins: false, extraTools: [step] })
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const srv = await startA2AServer({
    addr: "127.0.0.1:0",
    skills: [],
    a2a: {},
    runTask: (text, _contextId, extra) => client.run(text, { toolkit, signal: extra?.signal }),
  })
  t.after(() => srv.stop())
  const said = (got) => got.filter((e) => e.result.kind === "status-update").map((e) => e.result.status.message?.parts[0].text)
  assert.deepEqual(said(events(await (await post(srv.url, "message/stream", message("go"))).text())), [undefined, "stepped", undefined])
  // A signal of its own (not the Task's) reports to no one: the tool gets no ctx, as in the reference.
  const mine = await startA2AServer({
    addr: "127.0.0.1:0",
    skills: [],
    a2a: {},
    runTask: (text) => client.run(text, { toolkit, signal: new AbortController().signal }),
  })
  t.after(() => mine.stop())
  const got = events(await (await post(mine.url, "message/stream", message("go"))).text())
  assert.equal(got.at(-1).result.status.state, "completed")
  assert.deepEqual(said(got), [undefined, undefined])
  assert.equal(llm.requests.filter((r) => r.json?.messages?.some((m) => m.role === "tool" && /reading 'progress'/.test(m.content))).length, 1)
})
