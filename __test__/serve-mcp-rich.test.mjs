// A served toolkit as a complete MCP server (issue 55), with the official MCP SDK's client as the
// peer: results as content blocks and structured content, progress and log notifications.

import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { execFile } from "node:child_process"
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js"
import { buildMcpServer, createToolkit, defineTool, pending } from "../index.js"
import { REPO } from "./support/llm.mjs"
import { pySkip, python } from "./support/pypeer.mjs"

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function serving(tools, mcp = {}, capabilities = {}) {
  const tk = await createToolkit({ builtins: false, extraTools: tools })
  const srv = await tk.serve("127.0.0.1:0", { mcp })
  const client = new McpClient({ name: "rich-test", version: "1.0.0" }, { capabilities })
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  return {
    tk,
    srv,
    client,
    async close() {
      await client.close()
      await srv.stop()
      await tk.close()
    },
  }
}

test("a result's content blocks, structured content and metadata reach an MCP caller; the model still sees output", async () => {
  const picture = defineTool({
    name: "picture",
    description: "a picture and a link",
    run: () => ({
      output: "a red pixel",
      isError: false,
      metadata: { pixels: 1 },
      content: [
        { type: "text", text: "Here it is:" },
        { type: "image", data: PNG, mimeType: "image/png" },
        { type: "resource_link", uri: "file:///red.png", name: "red.png" },
        { type: "resource", resource: { uri: "test://r", mimeType: "text/plain", text: "inside" } },
      ],
    }),
  })
  const weather = defineTool({
    name: "weather",
    description: "structured weather",
    inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    outputSchema: {
      type: "object",
      properties: { city: { type: "string" }, celsius: { type: "number" } },
      required: ["city", "celsius"],
    },
    run: ({ city }) => ({ city, celsius: 21 }),
  })
  // Shaped like MCP but not a ToolResult: the reference's text (its JSON), as before.
  const plain = defineTool({ name: "plain", description: "", run: () => ({ content: [{ type: "text", text: "x" }] }) })
  const broken = defineTool({
    name: "broken",
    description: "",
    run: () => ({ output: "o", isError: false, content: [{ type: "hologram" }] }),
  })
  const s = await serving([picture, weather, plain, broken])
  try {
    const { tools } = await s.client.listTools()
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]))
    assert.deepEqual(byName.weather.outputSchema, weather.outputSchema)
    assert.equal(byName.picture.outputSchema, undefined)

    const pic = await s.client.callTool({ name: "picture", arguments: {} })
    assert.deepEqual(pic.content.map((b) => b.type), ["text", "image", "resource_link", "resource"])
    assert.equal(pic.content[1].data, PNG)
    assert.equal(pic.content[3].resource.text, "inside")
    assert.deepEqual(pic._meta, { "toolnexus/metadata": { pixels: 1 } })

    // The SDK client checks structuredContent against the declared outputSchema.
    const w = await s.client.callTool({ name: "weather", arguments: { city: "Oslo" } })
    assert.deepEqual(w.structuredContent, { city: "Oslo", celsius: 21 })
    assert.deepEqual(JSON.parse(w.content[0].text), { city: "Oslo", celsius: 21 })

    const p = await s.client.callTool({ name: "plain", arguments: {} })
    assert.deepEqual(p.content, [{ type: "text", text: '{"content":[{"type":"text","text":"x"}]}' }])

    const b = await s.client.callTool({ name: "broken", arguments: {} })
    assert.equal(b.isError, true)
    assert.match(b.content[0].text, /^tool broken returned content that is not MCP content blocks/)

    // In this library's own hands the same tools keep `output` for the model, the rest beside it.
    assert.equal((await s.tk.execute("picture", {})).output, "a red pixel")
    const local = await weather.execute({ city: "Rome" })
    assert.deepEqual(local, { output: '{"city":"Rome","celsius":21}', isError: false, structuredContent: { city: "Rome", celsius: 21 } })
  } finally {
    await s.close()
  }
})

test("ctx.progress reaches a caller that sent a progress token; ctx.log honours logging/setLevel", async () => {
  const work = defineTool({
    name: "work",
    description: "reports as it goes",
    run: async (_a, ctx) => {
      ctx.log("debug", "starting")
      ctx.progress(1, 3, "one")
      await sleep(20)
      ctx.log("warning", { disk: "low" }, "store")
      ctx.progress(2, 3)
      await sleep(20)
      ctx.progress(3)
      ctx.log("info", "done")
      return "worked"
    },
  })
  const bad = defineTool({
    name: "bad",
    description: "",
    run: (_a, ctx) => {
      ctx.log("loud", "x")
      return "unreached"
    },
  })
  const s = await serving([work, bad])
  try {
    const caps = s.client.getServerCapabilities()
    assert.ok(caps.logging, "logging is advertised")
    const logs = []
    s.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params))

    const progress = []
    const r = await s.client.request(
      { method: "tools/call", params: { name: "work", arguments: {}, _meta: { progressToken: "t1" } } },
      CallToolResultSchema,
      { onprogress: (p) => progress.push(p) },
    )
    assert.deepEqual(r.content, [{ type: "text", text: "worked" }])
    assert.deepEqual(progress, [
      { progress: 1, total: 3, message: "one" },
      { progress: 2, total: 3 },
      { progress: 3 },
    ])
    assert.deepEqual(logs, [
      { level: "debug", data: "starting" },
      { level: "warning", data: { disk: "low" }, logger: "store" },
      { level: "info", data: "done" },
    ])

    // From warning up only, for this client.
    logs.length = 0
    await s.client.setLoggingLevel("warning")
    await s.client.callTool({ name: "work", arguments: {} })
    assert.deepEqual(logs, [{ level: "warning", data: { disk: "low" }, logger: "store" }])

    const b = await s.client.callTool({ name: "bad", arguments: {} })
    assert.equal(b.isError, true)
    assert.match(b.content[0].text, /ctx\.log: unknown level "loud"/)
  } finally {
    await s.close()
  }
})

test("a call that reports nothing is answered with plain JSON; one that reports is an event stream", async () => {
  const quiet = defineTool({ name: "quiet", description: "", run: () => "hush" })
  const loud = defineTool({
    name: "loud",
    description: "",
    run: (_a, ctx) => {
      ctx.progress(1, 1)
      return "said"
    },
  })
  const s = await serving([quiet, loud])
  try {
    const post = (name) =>
      fetch(s.srv.url + "/mcp", {
        method: "POST",
        headers: MCP_HEADERS,
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name, arguments: {}, _meta: { progressToken: 9 } } }),
      })
    const q = await post("quiet")
    assert.equal(q.headers.get("content-type"), "application/json")
    assert.equal((await q.json()).result.content[0].text, "hush")
    const l = await post("loud")
    assert.equal(l.headers.get("content-type"), "text/event-stream")
    const sent = (await l.text()).split("\n").filter((x) => x.startsWith("data:") && x.length > 6).map((x) => JSON.parse(x.slice(5)))
    assert.deepEqual(sent.map((e) => e.method ?? "result"), ["notifications/progress", "result"])
    assert.deepEqual(sent[0].params, { progressToken: 9, progress: 1, total: 1 })
  } finally {
    await s.close()
  }
})

/** A tool that asks for a name, and greets whoever the answer names; `runs` counts its runs. */
function greeter(runs, extra = {}) {
  return defineTool({
    name: "greet",
    description: "asks who to greet",
    run: (_a, ctx) => {
      runs.push(ctx?.answer ?? null)
      const a = ctx?.answer
      if (!a) {
        return pending({
          kind: "input",
          prompt: "Who should I greet?",
          data: { schema: { type: "object", properties: { name: { type: "string" }, loud: { type: "boolean", default: false } }, required: ["name"] } },
          ...extra,
        })
      }
      return a.ok ? `hello ${a.data.name}${a.data.loud ? "!" : ""}` : `not greeting (${a.reason})`
    },
  })
}

test("a served pending reaches an SDK client as an elicitation; its answer runs the tool again, once", async () => {
  const runs = []
  const s = await serving([greeter(runs)], {}, { elicitation: {} })
  try {
    const asked = []
    let reply = { action: "accept", content: { name: "Ada" } }
    s.client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(req.params)
      return reply
    })
    const r = await s.client.callTool({ name: "greet", arguments: {} })
    assert.deepEqual(r.content, [{ type: "text", text: "hello Ada" }])
    assert.equal(r.isError, false)
    assert.equal(asked.length, 1)
    assert.equal(asked[0].message, "Who should I greet?")
    assert.equal(asked[0].requestedSchema.properties.name.type, "string")
    // The tool ran twice: once parking, once with the answer (the schema's default filled in).
    assert.equal(runs.length, 2)
    assert.equal(runs[0], null)
    assert.deepEqual(runs[1].data, { name: "Ada", loud: false })
    assert.equal(runs[1].ok, true)
    assert.match(runs[1].id, /^pnd-/)

    runs.length = 0
    reply = { action: "decline" }
    const d = await s.client.callTool({ name: "greet", arguments: {} })
    assert.deepEqual(d.content, [{ type: "text", text: "not greeting (declined)" }])
    assert.deepEqual(runs[1], { id: runs[1].id, ok: false, reason: "declined" })
  } finally {
    await s.close()
  }
})

test("a client that cannot answer gets the pending result as before: no elicitation capability, or an older protocol", async () => {
  const runs = []
  // The SDK client without the capability answers elicitation/create with an error.
  const s = await serving([greeter(runs)])
  try {
    const r = await s.client.callTool({ name: "greet", arguments: {} })
    assert.equal(r.isError, true)
    assert.deepEqual(r.content, [{ type: "text", text: "Who should I greet?" }])
    assert.equal(runs.length, 1)

    // A raw POST without a protocol header speaks 2025-03-26, which has no elicitation: plain JSON.
    const raw = await fetch(s.srv.url + "/mcp", {
      method: "POST",
      headers: MCP_HEADERS,
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "greet", arguments: {} } }),
    })
    assert.equal(raw.headers.get("content-type"), "application/json")
    const body = await raw.json()
    assert.deepEqual(body.result.content, [{ type: "text", text: "Who should I greet?" }])
    assert.equal(body.result.isError, true)
    // The Request rides along in the result's metadata, for a client that knows to look.
    assert.equal(body.result._meta["toolnexus/metadata"].pending.kind, "input")
  } finally {
    await s.close()
  }
})

test("an answer POSTed by another client, or for a request nobody made, is not taken", async () => {
  const runs = []
  const tk = await createToolkit({ builtins: false, extraTools: [greeter(runs)] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {}, auth: "s3cret" })
  try {
    const headers = { ...MCP_HEADERS, "mcp-protocol-version": "2025-11-25" }
    const call = await fetch(srv.url + "/mcp", {
      method: "POST",
      headers: { ...headers, authorization: "Bearer s3cret" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "greet", arguments: {} } }),
    })
    assert.equal(call.headers.get("content-type"), "text/event-stream")
    const reader = call.body.pipeThrough(new TextDecoderStream()).getReader()
    let text = ""
    while (!text.includes("elicitation/create")) text += (await reader.read()).value
    const request = JSON.parse(text.split("\n").find((l) => l.startsWith("data:") && l.length > 6).slice(5))
    assert.equal(request.method, "elicitation/create")
    const answer = (auth, id) =>
      fetch(srv.url + "/mcp", {
        method: "POST",
        headers: { ...headers, authorization: auth, "user-agent": "other" },
        body: JSON.stringify({ jsonrpc: "2.0", id, result: { action: "accept", content: { name: "Mallory" } } }),
      })
    // Another token is refused by the server's guard; an id nobody asked goes to rmcp, which refuses it.
    assert.equal((await answer("Bearer wrong", request.id)).status, 401)
    assert.equal((await answer("Bearer s3cret", "tn-424242")).status, 400)
    assert.equal(runs.length, 1, "nothing resumed the call")
    assert.equal((await answer("Bearer s3cret", request.id)).status, 202)
    while (!text.includes('"result"')) text += (await reader.read()).value
    const result = JSON.parse(text.split("\n").filter((l) => l.startsWith("data:")).at(-1).slice(5))
    assert.deepEqual(result.result.content, [{ type: "text", text: "hello Mallory" }])
    assert.equal(runs.length, 2)
  } finally {
    await srv.stop()
    await tk.close()
  }
})

test("ctx.sample asks the caller's model; a caller without sampling makes it reject", async () => {
  const think = defineTool({
    name: "think",
    description: "asks the caller's model",
    run: async (_a, ctx) => {
      try {
        const r = await ctx.sample({ messages: ["What is 2+2?"], systemPrompt: "be brief" })
        return `model ${r.model} said ${r.content.text}`
      } catch (e) {
        return { output: `no sampling: ${e.message}`, isError: true }
      }
    },
  })
  const s = await serving([think], {}, { sampling: {} })
  try {
    const seen = []
    s.client.setRequestHandler(CreateMessageRequestSchema, (req) => {
      seen.push(req.params)
      return { role: "assistant", content: { type: "text", text: "4" }, model: "tiny", stopReason: "endTurn" }
    })
    const r = await s.client.callTool({ name: "think", arguments: {} })
    assert.deepEqual(r.content, [{ type: "text", text: "model tiny said 4" }])
    assert.deepEqual(seen, [
      { messages: [{ role: "user", content: { type: "text", text: "What is 2+2?" } }], systemPrompt: "be brief", maxTokens: 1000 },
    ])
  } finally {
    await s.close()
  }
  const plain = await serving([think])
  try {
    const r = await plain.client.callTool({ name: "think", arguments: {} })
    assert.equal(r.isError, true)
    // The session says the client offers no sampling: it is not even asked.
    assert.equal(r.content[0].text, "no sampling: sampling/createMessage: the caller does not offer sampling")
  } finally {
    await plain.close()
  }
  // Outside MCP there is nobody to ask.
  const tk = await createToolkit({ builtins: false, extraTools: [think] })
  try {
    const local = await tk.execute("think", {})
    assert.equal(local.isError, true)
  } finally {
    await tk.close()
  }
})

const catalog = {
  prompts: [
    {
      name: "review",
      description: "Review a topic",
      arguments: [{ name: "topic", description: "what to review", required: true }],
      get({ topic }) {
        return { description: `about ${topic}`, messages: [`Please review ${topic}.`, { role: "assistant", content: "Sure." }] }
      },
      complete: { topic: (v) => ["rust", "ruby", "go"].filter((x) => x.startsWith(v)) },
    },
  ],
  resources: [
    { uri: "notes://readme", name: "readme", description: "The readme", mimeType: "text/markdown", read: () => "# Notes" },
    { uri: "notes://logo", name: "logo", mimeType: "image/png", read: () => Buffer.from([137, 80, 78, 71]) },
  ],
  resourceTemplates: [
    {
      uriTemplate: "notes://{id}/text",
      name: "note",
      mimeType: "text/plain",
      read: ({ uri, params }) => ({ text: `note ${params.id} at ${uri}` }),
      complete: { id: () => ["1", "2"] },
    },
  ],
}

test("prompts, resources, templates and completion from the profile reach an SDK client", async () => {
  const s = await serving([], catalog)
  try {
    const caps = s.client.getServerCapabilities()
    assert.deepEqual(Object.keys(caps).sort(), ["completions", "logging", "prompts", "resources", "tools"])
    assert.equal(caps.resources.subscribe, true)

    const { prompts } = await s.client.listPrompts()
    assert.deepEqual(prompts, [
      { name: "review", description: "Review a topic", arguments: [{ name: "topic", description: "what to review", required: true }] },
    ])
    const got = await s.client.getPrompt({ name: "review", arguments: { topic: "rust" } })
    assert.equal(got.description, "about rust")
    assert.deepEqual(got.messages, [
      { role: "user", content: { type: "text", text: "Please review rust." } },
      { role: "assistant", content: { type: "text", text: "Sure." } },
    ])
    const missing = await s.client.getPrompt({ name: "review", arguments: {} }).then(() => null, (e) => e)
    assert.ok(missing instanceof McpError)
    assert.equal(missing.code, -32602)
    assert.match(missing.message, /missing required argument topic/)
    const unknown = await s.client.getPrompt({ name: "nope" }).then(() => null, (e) => e)
    assert.match(unknown.message, /Prompt nope not found/)

    const { resources } = await s.client.listResources()
    assert.deepEqual(resources.map((r) => r.uri), ["notes://readme", "notes://logo"])
    assert.deepEqual((await s.client.readResource({ uri: "notes://readme" })).contents, [
      { uri: "notes://readme", mimeType: "text/markdown", text: "# Notes" },
    ])
    assert.deepEqual((await s.client.readResource({ uri: "notes://logo" })).contents, [
      { uri: "notes://logo", mimeType: "image/png", blob: Buffer.from([137, 80, 78, 71]).toString("base64") },
    ])
    const { resourceTemplates } = await s.client.listResourceTemplates()
    assert.deepEqual(resourceTemplates, [{ uriTemplate: "notes://{id}/text", name: "note", mimeType: "text/plain" }])
    assert.deepEqual((await s.client.readResource({ uri: "notes://7/text" })).contents, [
      { uri: "notes://7/text", mimeType: "text/plain", text: "note 7 at notes://7/text" },
    ])
    const nowhere = await s.client.readResource({ uri: "notes://7/other" }).then(() => null, (e) => e)
    assert.equal(nowhere.code, -32002)

    const c = await s.client.complete({ ref: { type: "ref/prompt", name: "review" }, argument: { name: "topic", value: "r" } })
    assert.deepEqual(c.completion, { values: ["rust", "ruby"], total: 2, hasMore: false })
    const t = await s.client.complete({ ref: { type: "ref/resource", uri: "notes://{id}/text" }, argument: { name: "id", value: "" } })
    assert.deepEqual(t.completion.values, ["1", "2"])

    await s.client.subscribeResource({ uri: "notes://readme" })
    await s.client.unsubscribeResource({ uri: "notes://readme" })
    const bad = await s.client.subscribeResource({ uri: "notes://none" }).then(() => null, (e) => e)
    assert.equal(bad.code, -32002)
  } finally {
    await s.close()
  }
})

test("a profile without prompts or resources offers none (-32601), as before", async () => {
  const s = await serving([defineTool({ name: "t", description: "", run: () => "x" })])
  try {
    const caps = s.client.getServerCapabilities()
    assert.deepEqual(Object.keys(caps).sort(), ["logging", "tools"])
    const e = await s.client.request({ method: "prompts/list", params: {} }, CallToolResultSchema).then(() => null, (x) => x)
    assert.equal(e.code, -32601)
  } finally {
    await s.close()
  }
})

test("the official Python client answers a served pending and a sampling request, and reads prompts and resources", { skip: pySkip, timeout: 120_000 }, async () => {
  const runs = []
  const think = defineTool({
    name: "think",
    description: "asks the caller's model",
    run: async (_a, ctx) => (await ctx.sample({ messages: ["hi"] })).content.text,
  })
  const tk = await createToolkit({ builtins: false, extraTools: [greeter(runs), think] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: catalog })
  try {
    const { lines, failure } = await python("py-ask.py", [srv.url + "/mcp", "greet", "think"], 90_000)
    if (lines.length === 0) lines.push({ step: "failed", error: failure })
    const by = Object.fromEntries(lines.map((l) => [l.step === "call" ? l.tool : l.step, l]))
    assert.equal(by.failed, undefined, by.failed?.error)
    assert.deepEqual(by.greet, { step: "call", tool: "greet", isError: false, text: "hello py", asked: [{ message: "Who should I greet?", schema: true }] })
    assert.equal(by.think.text, "sampled: hi")
    assert.deepEqual(by.prompts.names, ["review"])
    assert.deepEqual(by.prompt.texts, ["Please review rust.", "Sure."])
    assert.deepEqual(by.resources.uris, ["notes://readme", "notes://logo"])
    assert.deepEqual(by.read.texts, ["# Notes"])
    assert.equal(runs.length, 2)
  } finally {
    await srv.stop()
    await tk.close()
  }
})

/** The SSE events of a response body, read until `done(events)` says enough (or the body ends). */
async function events(res, done = () => false) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  const got = []
  let text = ""
  for (;;) {
    const { value, done: end } = await reader.read()
    if (end) break
    text += value
    let cut
    while ((cut = text.indexOf("\n\n")) >= 0) {
      const block = text.slice(0, cut)
      text = text.slice(cut + 2)
      const ev = {}
      for (const line of block.split("\n")) {
        const i = line.indexOf(":")
        const [k, v] = [line.slice(0, i), line.slice(i + 1).trimStart()]
        ev[k] = ev[k] === undefined ? v : ev[k] + "\n" + v
      }
      got.push(ev)
    }
    if (done(got)) {
      await reader.cancel()
      break
    }
  }
  return got
}

test("initialize hands out a session; a stream the tool closes is resumed with Last-Event-ID, by its client only", async () => {
  let release
  const gate = new Promise((r) => (release = r))
  const slow = defineTool({
    name: "slow",
    description: "closes its stream, then finishes",
    run: async (_a, ctx) => {
      ctx.progress(1, 2)
      ctx.closeStream()
      await gate
      ctx.progress(2, 2)
      return "finished"
    },
  })
  const tk = await createToolkit({ builtins: false, extraTools: [slow] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  try {
    const url = srv.url + "/mcp"
    const init = await fetch(url, {
      method: "POST",
      headers: MCP_HEADERS,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      }),
    })
    const session = init.headers.get("mcp-session-id")
    assert.match(session, /^[0-9a-f]{32}$/)
    await init.text()
    const headers = { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
    const call = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "slow", arguments: {}, _meta: { progressToken: "p" } } }),
    })
    assert.equal(call.headers.get("content-type"), "text/event-stream")
    // The stream ends where the tool closed it: a priming event, then the first progress.
    const first = await events(call)
    assert.equal(first.length, 2)
    assert.equal(first[0].data, "")
    assert.equal(first[0].retry, "1000")
    const stream = first[0].id.split("-")[0]
    assert.equal(first[1].id, `${stream}-1`)
    assert.equal(JSON.parse(first[1].data).params.progress, 1)

    // Another session cannot read it: it gets the stream that carries nothing.
    const other = await fetch(url, {
      headers: { accept: "text/event-stream", "mcp-session-id": "f".repeat(32), "last-event-id": first[1].id },
    })
    const nothing = await Promise.race([events(other, (e) => e.length > 0), new Promise((r) => setTimeout(() => r("quiet"), 300))])
    assert.equal(nothing, "quiet")

    release()
    const resumed = await fetch(url, { headers: { accept: "text/event-stream", "mcp-session-id": session, "last-event-id": first[1].id } })
    const rest = await events(resumed)
    assert.deepEqual(rest.map((e) => e.id), [`${stream}-2`, `${stream}-3`])
    assert.equal(JSON.parse(rest[0].data).params.progress, 2)
    assert.deepEqual(JSON.parse(rest[1].data), { jsonrpc: "2.0", id: 5, result: { content: [{ type: "text", text: "finished" }], isError: false } })
    // From the priming event on, everything again.
    const again = await events(await fetch(url, { headers: { accept: "text/event-stream", "mcp-session-id": session, "last-event-id": `${stream}-0` } }))
    assert.equal(again.length, 3)

    assert.equal((await fetch(url, { method: "DELETE", headers: { "mcp-session-id": session } })).status, 200)
  } finally {
    await srv.stop()
    await tk.close()
  }
})

test("buildMcpServer over an SDK transport: elicitation, sampling, progress and prompts through the session", async () => {
  const runs = []
  const think = defineTool({
    name: "think",
    description: "",
    run: async (_a, ctx) => {
      ctx.progress(1, 1)
      return (await ctx.sample({ messages: ["hi"] })).content.text
    },
  })
  const server = buildMcpServer([greeter(runs), think], { prompts: catalog.prompts })
  const [clientT, serverT] = InMemoryTransport.createLinkedPair()
  await server.connect(serverT)
  const client = new McpClient({ name: "mem", version: "1.0.0" }, { capabilities: { elicitation: {}, sampling: {} } })
  client.setRequestHandler(ElicitRequestSchema, () => ({ action: "accept", content: { name: "Mem", loud: true } }))
  client.setRequestHandler(CreateMessageRequestSchema, (req) => ({
    role: "assistant",
    content: { type: "text", text: `echo ${req.params.messages[0].content.text}` },
    model: "m",
  }))
  await client.connect(clientT)
  try {
    const g = await client.callTool({ name: "greet", arguments: {} })
    assert.deepEqual(g.content, [{ type: "text", text: "hello Mem!" }])
    assert.equal(runs.length, 2)
    const progress = []
    const t = await client.callTool({ name: "think", arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) })
    assert.deepEqual(t.content, [{ type: "text", text: "echo hi" }])
    assert.deepEqual(progress, [1])
    const p = await client.getPrompt({ name: "review", arguments: { topic: "go" } })
    assert.equal(p.messages[0].content.text, "Please review go.")
  } finally {
    await client.close()
    await server.close()
  }
})

test("a served toolkit's skills are prompts (arguments from the frontmatter) and their files resources", async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tn-skills-"))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const dir = path.join(root, "release-notes")
  fs.mkdirSync(path.join(dir, "templates"), { recursive: true })
  fs.writeFileSync(path.join(dir, "SKILL.md"), "---\nname: release-notes\ndescription: Write release notes\narguments: version, audience\n---\nWrite the notes from the changelog.\n")
  fs.writeFileSync(path.join(dir, "templates", "notes.md"), "# {{version}}\n")
  fs.writeFileSync(path.join(dir, "logo.bin"), Buffer.from([0xff, 0x00, 0xfe]))
  // A file past the cap is listed, and refused when read.
  const huge = path.join(dir, "huge.txt")
  fs.writeFileSync(huge, "")
  fs.truncateSync(huge, 9 * 1024 * 1024)

  const tk = await createToolkit({ builtins: false, skillsDir: root })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  const client = new McpClient({ name: "skills", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  try {
    const { prompts } = await client.listPrompts()
    assert.deepEqual(prompts, [
      {
        name: "release-notes",
        description: "Write release notes",
        arguments: [
          { name: "version", required: false },
          { name: "audience", required: false },
        ],
      },
    ])
    const got = await client.getPrompt({ name: "release-notes", arguments: { version: "2.0" } })
    assert.deepEqual(got.messages, [
      { role: "user", content: { type: "text", text: "Write the notes from the changelog.\n\nArguments:\n- version: 2.0" } },
    ])
    const { resources } = await client.listResources()
    assert.deepEqual(resources.map((r) => [r.uri, r.mimeType]), [
      ["skill://release-notes/SKILL.md", "text/markdown"],
      ["skill://release-notes/huge.txt", "text/plain"],
      ["skill://release-notes/logo.bin", "application/octet-stream"],
      ["skill://release-notes/templates/notes.md", "text/markdown"],
    ])
    const notes = await client.readResource({ uri: "skill://release-notes/templates/notes.md" })
    assert.equal(notes.contents[0].text, "# {{version}}\n")
    const logo = await client.readResource({ uri: "skill://release-notes/logo.bin" })
    assert.equal(logo.contents[0].blob, Buffer.from([0xff, 0x00, 0xfe]).toString("base64"))
    const big = await client.readResource({ uri: "skill://release-notes/huge.txt" }).then(() => null, (e) => e)
    assert.match(big.message, /more than the 8388608 served/)
    // Only the files listed: no path of the server's own is reachable.
    const outside = await client.readResource({ uri: "skill://release-notes/../../etc/passwd" }).then(() => null, (e) => e)
    assert.equal(outside.code, -32002)
  } finally {
    await client.close()
    await srv.stop()
  }
  const off = await tk.serve("127.0.0.1:0", { mcp: { skills: false } })
  const c2 = new McpClient({ name: "skills", version: "1.0.0" })
  await c2.connect(new StreamableHTTPClientTransport(new URL(off.url + "/mcp")))
  try {
    assert.equal(c2.getServerCapabilities().prompts, undefined)
  } finally {
    await c2.close()
    await off.stop()
    await tk.close()
  }
})

test("protocol 2026-07-28 (the official Python client): a served pending is an input_required result, its sealed state taken once", { skip: pySkip, timeout: 120_000 }, async () => {
  const runs = []
  const tk = await createToolkit({ builtins: false, extraTools: [greeter(runs)] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  try {
    const { lines, failure } = await python("py-mrtr.py", [srv.url + "/mcp", "greet"], 90_000)
    const by = Object.fromEntries(lines.map((l) => [l.step, l]))
    assert.equal(by.failed, undefined, by.failed?.error ?? failure)
    assert.equal(by.version?.version, "2026-07-28", failure)
    assert.equal(by.asked.kind, "InputRequiredResult")
    assert.equal(by.asked.requests.elicitation.method, "elicitation/create")
    assert.equal(by.asked.requests.elicitation.params.message, "Who should I greet?")
    assert.deepEqual(by.answered, { step: "answered", text: "hello py", kind: "CallToolResult" })
    assert.match(by.replayed.error, /requestState: it was answered already; nothing was run/)
    assert.match(by.edited.error, /requestState: .*changed; nothing was run/)
    // Parked once, run once with the answer; the replay and the edit ran nothing.
    assert.equal(runs.length, 2)
    assert.deepEqual(runs[1].data, { name: "py", loud: false })
  } finally {
    await srv.stop()
    await tk.close()
  }
})

test("a resource's update reaches the clients subscribed to it: over HTTP on their GET stream, and over an SDK transport", async () => {
  const tk = await createToolkit({ builtins: false })
  const srv = await tk.serve("127.0.0.1:0", { mcp: { resources: catalog.resources } })
  const subscribed = new McpClient({ name: "sub", version: "1.0.0" })
  const bystander = new McpClient({ name: "other", version: "1.0.0" })
  const seen = { subscribed: [], bystander: [] }
  subscribed.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => seen.subscribed.push(n.params.uri))
  bystander.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => seen.bystander.push(n.params.uri))
  await subscribed.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  await bystander.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  try {
    await subscribed.subscribeResource({ uri: "notes://readme" })
    // The SDK client opens its GET stream on its own after connecting; give it a moment.
    let told = 0
    for (let i = 0; i < 50 && told === 0; i++) {
      await sleep(20)
      told = srv.notifyResourceUpdated("notes://readme")
    }
    assert.equal(told, 1)
    for (let i = 0; i < 50 && seen.subscribed.length === 0; i++) await sleep(20)
    assert.deepEqual(seen.subscribed, ["notes://readme"])
    assert.equal(srv.notifyResourceUpdated("notes://logo"), 0, "nobody subscribed to that one")
    await subscribed.unsubscribeResource({ uri: "notes://readme" })
    assert.equal(srv.notifyResourceUpdated("notes://readme"), 0)
    await sleep(50)
    assert.deepEqual(seen.bystander, [])
  } finally {
    await subscribed.close()
    await bystander.close()
    await srv.stop()
    await tk.close()
  }

  const server = buildMcpServer([], { resources: catalog.resources })
  const [clientT, serverT] = InMemoryTransport.createLinkedPair()
  await server.connect(serverT)
  const mem = new McpClient({ name: "mem", version: "1.0.0" })
  const got = []
  mem.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => got.push(n.params.uri))
  await mem.connect(clientT)
  try {
    assert.equal(server.notifyResourceUpdated("notes://readme"), false)
    await mem.subscribeResource({ uri: "notes://readme" })
    assert.equal(server.notifyResourceUpdated("notes://readme"), true)
    for (let i = 0; i < 50 && got.length === 0; i++) await sleep(10)
    assert.deepEqual(got, ["notes://readme"])
  } finally {
    await mem.close()
    await server.close()
  }
})

const INSPECTOR = path.join(process.env.TOOLNEXUS_PEERS_DIR ?? path.join(REPO, ".peers"), "js-mcp-inspector", "node_modules", ".bin", "mcp-inspector")

test("the MCP Inspector's CLI lists and reads a served toolkit's skills as prompts and resources", {
  skip: !fs.existsSync(INSPECTOR) && `the MCP Inspector peer (js-mcp-inspector) is not installed (eval "$(scripts/peers.sh)")`,
  timeout: 120_000,
}, async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tn-insp-"))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(path.join(root, "notes"))
  fs.writeFileSync(path.join(root, "notes", "SKILL.md"), "---\nname: notes\ndescription: Take notes\narguments: topic\n---\nWrite notes about the topic.\n")
  fs.writeFileSync(path.join(root, "notes", "ref.md"), "# ref\n")
  const tk = await createToolkit({ builtins: false, skillsDir: root })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  const inspect = (...args) =>
    new Promise((resolve, reject) =>
      execFile(process.execPath, [INSPECTOR, "--cli", srv.url + "/mcp", "--transport", "http", ...args], { timeout: 60_000 }, (e, out, err) =>
        e ? reject(new Error(`${e.message}\n${err}`)) : resolve(JSON.parse(out)),
      ),
    )
  try {
    const { prompts } = await inspect("--method", "prompts/list")
    assert.deepEqual(prompts, [{ name: "notes", description: "Take notes", arguments: [{ name: "topic", required: false }] }])
    const got = await inspect("--method", "prompts/get", "--prompt-name", "notes", "--prompt-args", "topic=rust")
    assert.equal(got.messages[0].content.text, "Write notes about the topic.\n\nArguments:\n- topic: rust")
    const { resources } = await inspect("--method", "resources/list")
    assert.deepEqual(resources.map((r) => r.uri), ["skill://notes/SKILL.md", "skill://notes/ref.md"])
    const read = await inspect("--method", "resources/read", "--uri", "skill://notes/ref.md")
    assert.equal(read.contents[0].text, "# ref\n")
  } finally {
    await srv.stop()
    await tk.close()
  }
})
