// The MCP profile served over HTTP (SPEC §7C) by `toolkit.serve`, with the official MCP SDK's
// streamable-HTTP client as the peer: listing and calling, the name filter, onCall, both profiles
// on one port, and the faults a server meets (a malformed body, an oversized one, a client that
// hangs up mid-call, stop() with a call in flight or an idle event stream open, Origin, auth).

import test from "node:test"
import assert from "node:assert/strict"
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { McpError } from "@modelcontextprotocol/sdk/types.js"
import { createToolkit, defineTool } from "../index.js"
import { deferred, within } from "./support/llm.mjs"

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

function call(name, args, id = 1) {
  return JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } })
}

/** The JSON-RPC message of a reply to a POST on /mcp: a JSON body or the last SSE event. */
function message(text) {
  const t = text.trim()
  if (t.startsWith("{")) return JSON.parse(t)
  const data = t.split("\n").filter((l) => l.startsWith("data:"))
  return JSON.parse(data.at(-1).slice(5))
}

async function connect(url, requestInit) {
  const client = new McpClient({ name: "serve-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url + "/mcp"), requestInit ? { requestInit } : undefined))
  return client
}

const echo = defineTool({
  name: "echo",
  description: "echo back text",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  run: (a) => `echo: ${a.text}`,
})
const boom = defineTool({ name: "boom", description: "always throws", run: () => { throw new Error("kaboom") } })
const hidden = defineTool({ name: "hidden", description: "not exposed", run: () => "secret" })

test("the SDK's streamable-HTTP client lists the filtered tools verbatim and calls them; onCall sees each call", async () => {
  const calls = []
  const tk = await createToolkit({ builtins: false, extraTools: [echo, boom, hidden] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: { name: "gw", version: "9.9.9", tools: ["echo", "boom", "nope"] }, onCall: (ev) => calls.push(ev) })
  const client = await connect(srv.url)
  try {
    assert.deepEqual(client.getServerVersion(), { name: "gw", version: "9.9.9" })
    const { tools } = await client.listTools()
    assert.deepEqual(tools.map((t) => t.name), ["echo", "boom"], "the filter keeps order; unknown names are ignored")
    assert.deepEqual(tools[0].inputSchema, echo.inputSchema)
    assert.equal(tools[0].description, "echo back text")

    const ok = await client.callTool({ name: "echo", arguments: { text: "over http" } })
    assert.deepEqual(ok.content, [{ type: "text", text: "echo: over http" }])
    assert.equal(ok.isError, false)

    const bad = await client.callTool({ name: "boom", arguments: {} })
    assert.equal(bad.isError, true)
    assert.equal(bad.content[0].text, "kaboom")

    for (const name of ["hidden", "nope"]) {
      const err = await client.callTool({ name, arguments: {} }).then(() => null, (e) => e)
      assert.ok(err instanceof McpError, `${name}: an MCP error`)
      assert.equal(err.code, -32602)
      assert.match(err.message, new RegExp(`Unknown tool: ${name}`))
    }
    assert.deepEqual(
      calls.map(({ name, source, isError }) => ({ name, source, isError })),
      [
        { name: "echo", source: "native", isError: false },
        { name: "boom", source: "native", isError: true },
      ],
    )
    assert.ok(calls.every((c) => typeof c.ms === "number" && c.ms >= 0))
  } finally {
    await client.close()
    await srv.stop()
    await tk.close()
  }
})

test("both profiles on one port: the Agent Card and /mcp answer side by side", async () => {
  const tk = await createToolkit({ builtins: false, extraTools: [echo] })
  const srv = await tk.serve("127.0.0.1:0", { a2a: { name: "both" }, mcp: {} })
  const client = await connect(srv.url)
  try {
    const card = await (await fetch(srv.url + "/.well-known/agent-card.json")).json()
    assert.equal(card.name, "both")
    assert.equal(client.getServerVersion().name, "toolnexus")
    const res = await client.callTool({ name: "echo", arguments: { text: "x" } })
    assert.equal(res.content[0].text, "echo: x")
  } finally {
    await client.close()
    await srv.stop()
  }
})

test("faults: a malformed body and a 10 MiB body are refused, and the server goes on answering", async () => {
  const tk = await createToolkit({ builtins: false, extraTools: [echo] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  try {
    const malformed = await fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: "{not json" })
    assert.ok(malformed.status >= 400 && malformed.status < 500, `malformed JSON is a client error (got ${malformed.status})`)

    // A body well past the 4 MiB default cap, streamed in chunks with no declared length.
    const chunk = new Uint8Array(1024 * 1024).fill(0x20)
    let sent = 0
    const body = new ReadableStream({
      pull(controller) {
        if (sent++ < 10) controller.enqueue(chunk)
        else controller.close()
      },
    })
    const big = await fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body, duplex: "half" }).catch((e) => e)
    if (big instanceof Error) {
      // The server may close the connection before the client has finished sending.
      assert.match(String(big.cause?.code ?? big.cause ?? big), /EPIPE|ECONNRESET|UND_ERR|other side closed|SocketError/)
    } else {
      assert.equal(big.status, 413)
    }

    const ok = await fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: call("echo", { text: "still here" }) })
    assert.equal(ok.status, 200)
    assert.equal(message(await ok.text()).result.content[0].text, "echo: still here")
  } finally {
    await srv.stop()
  }
})

test("a client that hangs up mid-call aborts the tool's ctx.signal; the server keeps serving", async () => {
  const started = deferred()
  const aborted = deferred()
  const slow = defineTool({
    name: "slow",
    description: "waits for its signal",
    run: (_a, ctx) =>
      new Promise((resolve) => {
        started.resolve()
        ctx?.signal?.addEventListener("abort", () => {
          aborted.resolve("aborted")
          resolve("gave up")
        })
      }),
  })
  const tk = await createToolkit({ builtins: false, extraTools: [slow, echo] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  try {
    const controller = new AbortController()
    const pending = fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: call("slow", {}), signal: controller.signal }).catch((e) => e)
    await within(5_000, started.promise, "the tool to start")
    controller.abort()
    await pending
    assert.equal(await within(5_000, aborted.promise, "the tool's signal"), "aborted")
    const ok = await fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: call("echo", { text: "after" }) })
    assert.equal(message(await ok.text()).result.content[0].text, "echo: after")
  } finally {
    await srv.stop()
  }
})

test("stop() lets a call in flight finish, ends an idle event stream at once, and frees the port", async () => {
  const release = deferred()
  const started = deferred()
  const gated = defineTool({
    name: "gated",
    description: "answers when released",
    run: async () => {
      started.resolve()
      await release.promise
      return "finished"
    },
  })
  const tk = await createToolkit({ builtins: false, extraTools: [gated] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  // An idle GET event stream, as an MCP client opens for server-initiated messages.
  const stream = await fetch(srv.url + "/mcp", { headers: { accept: "text/event-stream" } })
  assert.equal(stream.status, 200)
  const inflight = fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: call("gated", {}) }).then(async (r) => message(await r.text()))
  await within(5_000, started.promise, "the call to start")
  const t0 = Date.now()
  const stopped = srv.stop()
  setTimeout(() => release.resolve(), 100)
  const reply = await within(5_000, inflight, "the call in flight")
  assert.equal(reply.result.content[0].text, "finished", "the call in flight completes")
  await within(4_000, stopped, "stop()")
  assert.ok(Date.now() - t0 < 4_000, "an idle stream does not hold stop() for the whole grace")
  await stream.body?.cancel().catch(() => {})
  const after = await fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: call("gated", {}) }).catch((e) => e)
  assert.ok(after instanceof Error, "nothing listens on the port after stop()")
})

test("guards on /mcp: a foreign Origin is refused, loopback ones pass; with auth the SDK client needs its token", async () => {
  const tk = await createToolkit({ builtins: false, extraTools: [echo] })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {}, auth: { token: "s3cret" }, allowedOrigins: ["https://app.example"] })
  try {
    const body = call("echo", { text: "o" })
    const auth = { authorization: "Bearer s3cret" }
    const at = (headers) => fetch(srv.url + "/mcp", { method: "POST", headers: { ...MCP_HEADERS, ...headers }, body }).then((r) => r.status)
    assert.equal(await at({}), 401)
    assert.equal(await at({ authorization: "Bearer wrong" }), 401)
    assert.equal(await at({ ...auth }), 200)
    assert.equal(await at({ ...auth, origin: "http://evil.example" }), 403)
    assert.equal(await at({ ...auth, origin: "http://localhost:5173" }), 200)
    assert.equal(await at({ ...auth, origin: "https://app.example" }), 200)

    const refused = await connect(srv.url).then(() => null, (e) => e)
    assert.ok(refused instanceof Error, "the SDK client without the token is refused")
    const client = await connect(srv.url, { headers: auth })
    const res = await client.callTool({ name: "echo", arguments: { text: "with token" } })
    assert.equal(res.content[0].text, "echo: with token")
    await client.close()
  } finally {
    await srv.stop()
  }
})
