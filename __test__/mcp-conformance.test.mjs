// MCP conformance of our server and client (issue 27): JSON-RPC parse errors, unknown methods,
// batches per protocol version, a 10 MB tool result read by the official TypeScript and Python
// clients, a client's cancellation reaching the tool at every protocol version, and our client
// keeping a call alive while its server reports progress. The peers are the official SDKs: the
// TypeScript one from node_modules, the Python one installed by scripts/peers.sh (py-mcp), found
// through TOOLNEXUS_PEERS_DIR or .peers/ at the repository root.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { EmptyResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { createToolkit, defineTool, loadMcp } from "../index.js"
import { REPO, cleanEnv, deferred, within } from "./support/llm.mjs"
import { pySkip, python } from "./support/pypeer.mjs"

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }
const PEERS = process.env.TOOLNEXUS_PEERS_DIR ?? path.join(REPO, ".peers")
const PROGRAMS = path.join(REPO, "__test__", "peers", "mcp")
const JS_MCP2 = path.join(PEERS, "js-mcp2")
const v2Skip =
  !fs.existsSync(path.join(JS_MCP2, ".installed")) &&
  `the TypeScript MCP SDK v2 peer (js-mcp2) is not installed in ${PEERS} (eval "$(scripts/peers.sh)" installs it and sets TOOLNEXUS_PEERS_DIR)`

const echo = defineTool({
  name: "echo",
  description: "echo back text",
  inputSchema: { type: "object", properties: { text: { type: "string" } } },
  run: (a) => `echo: ${a.text}`,
})

async function post(url, body, headers = {}) {
  const res = await fetch(url + "/mcp", { method: "POST", headers: { ...MCP_HEADERS, ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, type: res.headers.get("content-type"), text, json: text ? JSON.parse(text) : undefined }
}

async function serving(tools, t) {
  const tk = await createToolkit({ builtins: false, extraTools: tools })
  const srv = await tk.serve("127.0.0.1:0", { mcp: {} })
  t.after(async () => {
    await srv.stop()
    await tk.close()
  })
  return srv
}

const rpc = (id, method, params) => ({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) })

test("a body that is not JSON is a Parse error: HTTP 400, -32700, id null; not JSON-RPC is one too", async (t) => {
  const srv = await serving([echo], t)
  for (const body of ["{not json", "", "[1, 2"]) {
    const r = await post(srv.url, body)
    assert.equal(r.status, 400, JSON.stringify(body))
    assert.match(r.type, /application\/json/)
    assert.equal(r.json.jsonrpc, "2.0")
    assert.equal(r.json.error.code, -32700)
    assert.match(r.json.error.message, /^Parse error/)
    assert.equal(r.json.id, null)
  }
  const notRpc = await post(srv.url, { hello: "world" })
  assert.deepEqual([notRpc.status, notRpc.json.error.code, notRpc.json.id], [400, -32700, null])
  const noAccept = await post(srv.url, rpc(1, "ping"), { accept: "application/json" })
  assert.deepEqual([noAccept.status, noAccept.json.error.code], [406, -32000])
  const textBody = await post(srv.url, rpc(1, "ping"), { "content-type": "text/plain" })
  assert.deepEqual([textBody.status, textBody.json.error.code], [415, -32000])
})

test("a method the server does not offer is -32601 Method not found, on the wire and through the SDK client", async (t) => {
  const srv = await serving([echo], t)
  for (const method of ["no/such/method", "prompts/list", "resources/list", "completion/complete"]) {
    const r = await post(srv.url, rpc(7, method, {}))
    assert.equal(r.status, 200, method)
    assert.deepEqual(r.json, { jsonrpc: "2.0", id: 7, error: { code: -32601, message: "Method not found" } }, method)
  }
  const client = new McpClient({ name: "conformance", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  t.after(() => client.close())
  const err = await client.request({ method: "no/such/method", params: {} }, EmptyResultSchema).then(() => null, (e) => e)
  assert.ok(err instanceof McpError)
  assert.equal(err.code, -32601)
  assert.match(err.message, /Method not found/)
})

test("batches: answered as an array under 2025-03-26 (also with no version header), refused from 2025-06-18 on", async (t) => {
  const srv = await serving([echo], t)
  const batch = [
    rpc(1, "tools/list"),
    { jsonrpc: "2.0", method: "notifications/initialized" },
    rpc("two", "tools/call", { name: "echo", arguments: { text: "in a batch" } }),
    rpc(3, "no/such/method"),
  ]
  for (const headers of [{}, { "mcp-protocol-version": "2025-03-26" }]) {
    const r = await post(srv.url, batch, headers)
    assert.equal(r.status, 200, JSON.stringify(headers))
    assert.match(r.type, /application\/json/)
    assert.ok(Array.isArray(r.json), "an array of responses")
    assert.deepEqual(r.json.map((m) => m.id), [1, "two", 3], "one response per request, none for the notification")
    assert.deepEqual(r.json[0].result.tools.map((x) => x.name), ["echo"])
    assert.equal(r.json[1].result.content[0].text, "echo: in a batch")
    assert.deepEqual(r.json[2].error, { code: -32601, message: "Method not found" })
  }
  const notes = await post(srv.url, [{ jsonrpc: "2.0", method: "notifications/initialized" }])
  assert.equal(notes.status, 202, "a batch of notifications only is accepted with no body")
  assert.equal(notes.text, "")
  for (const version of ["2025-06-18", "2025-11-25"]) {
    const r = await post(srv.url, batch, { "mcp-protocol-version": version })
    assert.equal(r.status, 400, version)
    assert.equal(r.json.error.code, -32600, version)
    assert.equal(r.json.id, null)
    assert.match(r.json.error.message, /^Invalid Request/)
  }
  const empty = await post(srv.url, [])
  assert.deepEqual([empty.status, empty.json.error.code], [400, -32600])
})

const TEN_MB = 10 * 1024 * 1024
const big = defineTool({ name: "big", description: "10 MB of text", run: () => "x".repeat(TEN_MB) })

test("a 10 MB tool result is one plain JSON response, read whole by the official TypeScript client", { timeout: 60_000 }, async (t) => {
  const srv = await serving([big, echo], t)
  const raw = await fetch(srv.url + "/mcp", { method: "POST", headers: MCP_HEADERS, body: JSON.stringify(rpc(1, "tools/call", { name: "big", arguments: {} })) })
  assert.equal(raw.status, 200)
  assert.match(raw.headers.get("content-type"), /^application\/json/, "a result needs no event stream")
  assert.equal((await raw.json()).result.content[0].text.length, TEN_MB)

  const client = new McpClient({ name: "conformance", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  t.after(() => client.close())
  const res = await client.callTool({ name: "big", arguments: {} })
  assert.equal(res.isError, false)
  assert.equal(res.content[0].text.length, TEN_MB)
})

test("a 10 MB tool result reaches the official Python client (it caps one SSE event at 1 MiB)", { skip: pySkip, timeout: 120_000 }, async (t) => {
  const srv = await serving([big, echo], t)
  const run = async (tool) => {
    const { lines, failure } = await python("py-client.py", [srv.url + "/mcp", tool], 90_000)
    return lines[0] ?? { ok: false, error: failure }
  }
  const small = await run("echo")
  assert.equal(small.ok, true, small.error)
  const got = await run("big")
  assert.equal(got.ok, true, got.error)
  assert.equal(got.isError, false)
  assert.equal(got.length, TEN_MB)
  assert.equal(got.head, "x".repeat(16))
})

/**
 * A fetch for the SDK's transport that asks for `version` in `initialize` (the SDK always asks
 * for its newest) and records the version header of every later POST.
 */
function speaking(version, seen) {
  return async (url, init = {}) => {
    let body = init.body
    if (typeof body === "string" && body.includes('"initialize"')) {
      const msg = JSON.parse(body)
      if (msg.method === "initialize") body = JSON.stringify({ ...msg, params: { ...msg.params, protocolVersion: version } })
    }
    const headers = new Headers(init.headers)
    if (init.method === "POST" && typeof body === "string") {
      const msg = JSON.parse(body)
      if (msg.method !== "initialize") seen.push([msg.method, headers.get("mcp-protocol-version")])
    }
    return fetch(url, { ...init, body })
  }
}

for (const version of ["2025-03-26", "2025-06-18", "2025-11-25"]) {
  test(`protocol ${version}: the SDK client's AbortSignal cancels the call, and the tool's ctx.signal aborts`, { timeout: 30_000 }, async (t) => {
    const started = deferred()
    const aborted = deferred()
    const waiting = defineTool({
      name: "waiting",
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
    const srv = await serving([waiting, echo], t)
    const seen = []
    const client = new McpClient({ name: "conformance", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp"), { fetch: speaking(version, seen) }))
    t.after(() => client.close())

    const ac = new AbortController()
    const call = client.callTool({ name: "waiting", arguments: {} }, undefined, { signal: ac.signal, timeout: 20_000 }).then(() => null, (e) => e)
    await within(5_000, started.promise, "the tool to start")
    ac.abort("the user gave up")
    assert.ok((await call) !== null, "the call is abandoned")
    assert.equal(await within(5_000, aborted.promise, "the tool's ctx.signal to abort"), "aborted")
    assert.deepEqual(seen.find(([m]) => m === "tools/call"), ["tools/call", version], "the server agreed to the version asked for")
    const cancel = seen.find(([m]) => m === "notifications/cancelled")
    assert.ok(cancel, "the client sent notifications/cancelled on a POST of its own")
    assert.equal(cancel[1], version, "with the negotiated version in its header")

    const after = await client.callTool({ name: "echo", arguments: { text: "after" } })
    assert.equal(after.content[0].text, "echo: after")
  })
}

test("notifications/cancelled on a POST of its own: another client's (other credentials) is ignored, the caller's cancels", { timeout: 30_000 }, async (t) => {
  const started = deferred()
  const aborted = deferred()
  const gated = defineTool({
    name: "gated",
    description: "waits for its signal",
    run: (_a, ctx) =>
      new Promise((resolve) => {
        ctx?.signal?.addEventListener("abort", () => {
          aborted.resolve("aborted")
          resolve("gave up")
        })
        started.resolve()
      }),
  })
  const srv = await serving([gated], t)
  const reply = post(srv.url, rpc(41, "tools/call", { name: "gated", arguments: {} }), { authorization: "Bearer one" }).catch((e) => e)
  await within(5_000, started.promise, "the call to start")
  const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 41, reason: "enough" } }
  const other = await post(srv.url, cancel, { authorization: "Bearer two" })
  assert.equal(other.status, 202)
  const early = await Promise.race([aborted.promise, new Promise((r) => setTimeout(() => r("still running"), 300))])
  assert.equal(early, "still running", "another client's cancellation is not this call's")
  const own = await post(srv.url, cancel, { authorization: "Bearer one" })
  assert.equal(own.status, 202)
  assert.equal(await within(5_000, aborted.promise, "the tool's ctx.signal to abort"), "aborted")
  await within(5_000, reply, "the cancelled call's HTTP exchange to end")
})

test("our MCP client: progress notifications keep a call alive past its timeout; silence still times out", { timeout: 60_000 }, async (t) => {
  // 3 s: the server's start and tool list must fit in it too (2 s was cut short on a loaded machine).
  const server = { type: "local", command: [process.execPath, path.join(PROGRAMS, "progress-server.mjs")], timeout: 3000 }
  const mcp = await loadMcp({ slow: server })
  t.after(() => mcp.close())
  const tool = (name) => mcp.tools.find((x) => x.name === `slow_${name}`)
  assert.ok(tool("reporting") && tool("silent"), `tools: ${mcp.tools.map((x) => x.name)}`)
  const t0 = Date.now()
  const [reporting, silent] = await Promise.all([tool("reporting").execute({ seconds: 6 }), tool("silent").execute({ seconds: 6 })])
  assert.equal(reporting.isError, false, reporting.output)
  assert.equal(reporting.output, "reporting: done after 6 s (progressToken sent)")
  assert.ok(Date.now() - t0 >= 5_500, "the call ran its 6 s")
  assert.equal(silent.isError, true, "a call that reports nothing is cut off at 3 s")
  assert.match(silent.output, /Request timed out/)
})

test("every protocol version the server negotiates answers ping and the rest: raw, and the official TypeScript client", async (t) => {
  const srv = await serving([echo], t)
  for (const version of ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]) {
    const r = await post(srv.url, rpc("p", "ping"), { "mcp-protocol-version": version })
    assert.equal(r.status, 200, `${version}: ${r.text}`)
    assert.deepEqual(r.json, { jsonrpc: "2.0", id: "p", result: {} }, version)
  }
  for (const version of ["2025-03-26", "2025-06-18", "2025-11-25"]) {
    const seen = []
    const client = new McpClient({ name: "conformance", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp"), { fetch: speaking(version, seen) }))
    assert.deepEqual(await client.ping(), {}, version)
    assert.deepEqual((await client.listTools()).tools.map((x) => x.name), ["echo"])
    assert.equal((await client.callTool({ name: "echo", arguments: { text: "hi" } })).content[0].text, "echo: hi")
    await client.close()
    assert.ok(seen.some(([m, v]) => m === "ping" && v === version), `${version}: ${JSON.stringify(seen)}`)
  }
})

test("the official Python client, by handshake (initialize) and by server/discover (2026-07-28): list, call and ping", { skip: pySkip, timeout: 120_000 }, async (t) => {
  const srv = await serving([echo], t)
  const { lines: got, failure } = await python("py-versions.py", [srv.url + "/mcp", "echo"], 100_000)
  const lines = got.length === 2 ? got : [{ error: failure }]
  const byWay = Object.fromEntries(lines.map((l) => [l.way, l]))
  for (const [way, version] of [["initialize", "2025-11-25"], ["discover", "2026-07-28"]]) {
    const l = byWay[way]
    assert.ok(l, JSON.stringify(lines))
    assert.equal(l.error, undefined, `${way}: ${l.error}`)
    assert.equal(l.version, version, way)
    assert.deepEqual(l.tools, ["echo"], way)
    assert.equal(l.call, "echo: hi", way)
    assert.equal(l.isError, false, way)
    assert.equal(l.ping, "ok", way)
  }
})

test("a server that speaks only protocol 2026-07-28 (the official SDK v2, legacy: reject) is reached by server/discover: list and call", { skip: v2Skip, timeout: 60_000 }, async (t) => {
  const child = spawn(process.execPath, [path.join(PROGRAMS, "modern-only-server.mjs"), JS_MCP2], { env: cleanEnv(), stdio: ["ignore", "pipe", "inherit"] })
  t.after(() => child.kill())
  const url = await within(20_000, new Promise((resolve) => child.stdout.once("data", (d) => resolve(String(d).trim()))), "the server's URL")
  // It refuses `initialize` itself, naming the versions it speaks.
  const refused = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  })
  assert.equal(refused.status, 400)
  assert.deepEqual((await refused.json()).error.data.supported, ["2026-07-28"])
  const mcp = await loadMcp({ modern: { url, timeout: 10_000 } })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { modern: "connected" })
  assert.deepEqual(mcp.tools.map((x) => x.name), ["modern_echo", "modern_deploy"])
  assert.deepEqual(await mcp.tools[0].execute({ text: "hi" }), { output: "echo: hi", isError: false, metadata: { server: "modern" } })
})

async function startModern(t) {
  const child = spawn(process.execPath, [path.join(PROGRAMS, "modern-only-server.mjs"), JS_MCP2], { env: cleanEnv(), stdio: ["ignore", "pipe", "inherit"] })
  t.after(() => child.kill())
  return within(20_000, new Promise((resolve) => child.stdout.once("data", (d) => resolve(String(d).trim()))), "the server's URL")
}

test("protocol 2026-07-28: a question the server asks in a call's result (input required) goes to waitFor, and the call is retried with the answer", { skip: v2Skip, timeout: 60_000 }, async (t) => {
  const url = await startModern(t)
  const asked = []
  const waitFor = async (request) => {
    asked.push(request)
    return { id: request.id, ok: true, data: { confirm: true } }
  }
  const mcp = await loadMcp({ modern: { url, timeout: 10_000 } }, { waitFor })
  t.after(() => mcp.close())
  const deploy = mcp.tools.find((x) => x.name === "modern_deploy")
  const result = await deploy.execute({ env: "prod" })
  assert.deepEqual(result, { output: "deployed to prod (no note; state deploy:prod)", isError: false, metadata: { server: "modern" } })
  assert.equal(asked.length, 1)
  assert.equal(asked[0].kind, "input")
  assert.equal(asked[0].prompt, "Deploy to prod?")
  assert.match(asked[0].id, /^elc-/)
  assert.deepEqual(Object.keys(asked[0].data.schema.properties), ["confirm", "note"])
  // A declined question is the server's to answer.
  const declined = await loadMcp({ modern: { url, timeout: 10_000 } }, { waitFor: async (r) => ({ id: r.id, ok: false, reason: "declined" }) })
  t.after(() => declined.close())
  const no = await declined.tools.find((x) => x.name === "modern_deploy").execute({ env: "prod" })
  assert.equal(no.output, "not deployed (decline)")
})

test("protocol 2026-07-28: with no waitFor the call parks on the server's question, and the answer finishes it from another connection on the same store", { skip: v2Skip, timeout: 60_000 }, async (t) => {
  const url = await startModern(t)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-mrtr-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const store = `sqlite:${path.join(dir, "state.db")}`
  const first = await loadMcp({ modern: { url, timeout: 10_000 } }, { store })
  t.after(() => first.close())
  const parked = await first.tools.find((x) => x.name === "modern_deploy").execute({ env: "staging" })
  assert.equal(parked.isError, true)
  const request = parked.metadata.pending
  assert.equal(request.kind, "input")
  assert.equal(request.prompt, "Deploy to staging?")
  assert.equal(parked.output, "Deploy to staging?")
  await first.close()

  const second = await loadMcp({ modern: { url, timeout: 10_000 } }, { store })
  t.after(() => second.close())
  const deploy = second.tools.find((x) => x.name === "modern_deploy")
  const done = await deploy.execute({ env: "staging" }, { answer: { id: request.id, ok: true, data: { confirm: true, note: "go" } } })
  assert.deepEqual(done, { output: "deployed to staging (go; state deploy:staging)", isError: false, metadata: { server: "modern" } })
  // Once: the same answer again finds nothing kept, so the server asks again.
  const again = await deploy.execute({ env: "staging" }, { answer: { id: request.id, ok: true, data: { confirm: true } } })
  assert.equal(again.metadata.pending.kind, "input")
  assert.notEqual(again.metadata.pending.id, request.id)
})
