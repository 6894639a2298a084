// SPEC §2: the MCP source from JavaScript — real servers over stdio, streamable HTTP and SSE.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import http from "node:http"
import path from "node:path"
import os from "node:os"
import { randomUUID } from "node:crypto"
import { spawn } from "node:child_process"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import {
  answerToElicitResult,
  createToolkit,
  elicitationToRequest,
  expandEnvHeaders,
  listMcpTools,
  loadMcp,
  parseMcpConfig,
} from "../index.js"
import { REPO, cleanEnv, closedPort, runChild } from "./support/llm.mjs"

// An MCP config in the shape users write: the official server-everything over stdio, and a remote one switched off.
const FIXTURE = path.join(REPO, "__test__", "fixtures", "mcp-servers.json")
const SERVER = path.join(REPO, "crates", "core", "tests", "fixtures", "mcp_server.mjs")
const local = (...flags) => ({ type: "local", command: [process.execPath, SERVER, ...flags] })
const tag = (what) => `tn-js-${what}-${process.pid}-${Date.now()}`

/** Live (non-zombie) processes whose command line contains `needle`. */
function processesWith(needle) {
  const found = []
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const cmdline = fs.readFileSync(`/proc/${name}/cmdline`, "utf8")
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8")
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)
      if (cmdline.includes(needle) && state !== "Z" && Number(name) !== process.pid) found.push(Number(name))
    } catch {
      // gone while we looked
    }
  }
  return found
}

/**
 * Whether `pid` has ended: it is gone, or it is a zombie that is not ours to reap. A killed
 * grandchild is reparented to the machine's init, which reaps it when it will; a zombie of our own
 * would be a leak, so it counts as still there.
 */
function ended(pid) {
  let stat
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  } catch {
    return true
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return fields[0] === "Z" && Number(fields[1]) !== process.pid
}

async function noneLeft(needle, ms = 3000) {
  const t0 = Date.now()
  for (;;) {
    const left = processesWith(needle)
    if (!left.length || Date.now() - t0 > ms) return left
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** A real MCP server built on the official SDK: tools `echo`, `ask` (form elicitation), `visit` (URL). */
function sdkServer() {
  const server = new Server({ name: "sdk-fixture", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "echo", description: "Echo", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
      { name: "ask", description: "Asks the user", inputSchema: { type: "object" } },
      { name: "visit", inputSchema: { type: "object", properties: {} } },
    ],
  }))
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const { name, arguments: args } = req.params
    if (name === "echo") return { content: [{ type: "text", text: `echo: ${args?.text}` }], structuredContent: undefined }
    const params =
      name === "ask"
        ? { message: "Pick an environment", requestedSchema: { type: "object", properties: { env: { type: "string" } }, required: ["env"] } }
        : { mode: "url", message: "Authorize", url: "https://example.com/auth", elicitationId: "e-1" }
    const answer = await extra.sendRequest({ method: "elicitation/create", params }, ElicitResultSchema)
    return { content: [{ type: "text", text: JSON.stringify(answer) }] }
  })
  return server
}

/** Streamable HTTP at /mcp and the legacy SSE transport at /sse, on 127.0.0.1. */
async function startHttp() {
  const sessions = new Map()
  const sse = new Map()
  const seen = []
  const httpServer = http.createServer(async (req, res) => {
    seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization })
    const url = new URL(req.url, "http://127.0.0.1")
    try {
      if (url.pathname === "/mcp") {
        const sid = req.headers["mcp-session-id"]
        let transport = sid && sessions.get(sid)
        if (!transport) {
          transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => sessions.set(id, transport),
          })
          await sdkServer().connect(transport)
        }
        await transport.handleRequest(req, res)
      } else if (url.pathname === "/sse" && req.method === "GET") {
        const transport = new SSEServerTransport("/messages", res)
        sse.set(transport.sessionId, transport)
        await sdkServer().connect(transport)
      } else if (url.pathname === "/messages" && req.method === "POST") {
        const transport = sse.get(url.searchParams.get("sessionId"))
        if (!transport) return res.writeHead(404).end()
        await transport.handlePostMessage(req, res)
      } else {
        res.writeHead(405).end()
      }
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e))
    }
  })
  await new Promise((r) => httpServer.listen(0, "127.0.0.1", r))
  const base = `http://127.0.0.1:${httpServer.address().port}`
  return {
    base,
    seen,
    async close() {
      for (const t of [...sessions.values(), ...sse.values()]) await t.close().catch(() => {})
      httpServer.closeAllConnections()
      await new Promise((r) => httpServer.close(r))
    },
  }
}

test("a config file starts server-everything over stdio and its echo tool answers", { timeout: 120_000 }, async () => {
  const mcp = await loadMcp(FIXTURE)
  assert.deepEqual(mcp.status, { everything: "connected", "switched-off": "disabled" })
  const echo = mcp.tools.find((t) => t.name === "everything_echo")
  assert.ok(echo, `tools: ${mcp.tools.map((t) => t.name).join(", ")}`)
  assert.equal(echo.source, "mcp")
  assert.equal(echo.inputSchema.type, "object")
  assert.equal(echo.inputSchema.additionalProperties, false)
  assert.ok(mcp.tools.every((t) => t.name.startsWith("everything_")))
  const r = await echo.execute({ message: "hello from toolnexus" })
  assert.deepEqual(r, { output: "Echo: hello from toolnexus", isError: false, metadata: { server: "everything" } })
  await mcp.close()
  await mcp.close()
  assert.deepEqual(await noneLeft("server-everything"), [], "npx and its server are gone after close()")
})

test("loadMcp over streamable HTTP: headers expand ${ENV}, elicitation goes through waitFor", { timeout: 30_000 }, async () => {
  const srv = await startHttp()
  process.env.TN_JS_MCP_TOKEN = "js-secret"
  const requests = []
  const waitFor = async (request) => {
    requests.push(request)
    return request.kind === "input" ? { id: request.id, ok: true, data: { env: "staging" } } : { id: request.id, ok: false, reason: "declined" }
  }
  try {
    const mcp = await loadMcp(
      { mcpServers: { web: { type: "remote", url: `${srv.base}/mcp`, headers: { Authorization: "Bearer ${TN_JS_MCP_TOKEN}" } } } },
      { waitFor },
    )
    assert.deepEqual(mcp.status, { web: "connected" })
    assert.deepEqual(mcp.tools.map((t) => t.name), ["web_echo", "web_ask", "web_visit"])
    assert.equal(mcp.tools[2].description, "")
    assert.deepEqual(await mcp.tools[0].execute({ text: "hi" }), { output: "echo: hi", isError: false, metadata: { server: "web" } })
    assert.ok(srv.seen.some((r) => r.authorization === "Bearer js-secret"), "the header reached the server, expanded")
    assert.equal((await mcp.tools[1].execute({})).output, '{"action":"accept","content":{"env":"staging"}}')
    assert.equal((await mcp.tools[2].execute({})).output, '{"action":"decline"}')
    assert.equal(requests.length, 2)
    assert.equal(requests[0].kind, "input")
    assert.equal(requests[0].prompt, "Pick an environment")
    assert.deepEqual(requests[0].data.schema.required, ["env"])
    assert.match(requests[0].id, /^elc-[0-9a-z]+-\d+$/)
    assert.deepEqual({ kind: requests[1].kind, url: requests[1].url }, { kind: "authorization", url: "https://example.com/auth" })
    await mcp.close()
  } finally {
    await srv.close()
  }
})

test("a remote server without streamable HTTP is reached over the SSE fallback", { timeout: 30_000 }, async () => {
  const srv = await startHttp()
  try {
    const mcp = await loadMcp({ old: { url: `${srv.base}/sse` } })
    assert.deepEqual(mcp.status, { old: "connected" })
    assert.equal((await mcp.tools[0].execute({ text: "via sse" })).output, "echo: via sse")
    await mcp.close()
  } finally {
    await srv.close()
  }
})

test("failures are isolated: missing command, exit at once, never answering, bad URL", { timeout: 30_000 }, async () => {
  const t0 = Date.now()
  const mcp = await loadMcp({
    missing: { command: ["/no/such/command-tn"] },
    exits: { ...local("--exit"), timeout: 20_000 },
    silent: { ...local("--hang-init"), timeout: 300 },
    badurl: { type: "remote", url: "::not a url::" },
    ok: local(),
    off: { ...local(), disabled: true },
  })
  assert.ok(Date.now() - t0 < 5000, `bounded: ${Date.now() - t0}ms`)
  assert.deepEqual(Object.entries(mcp.status), [
    ["missing", "failed"],
    ["exits", "failed"],
    ["silent", "failed"],
    ["badurl", "failed"],
    ["ok", "connected"],
    ["off", "disabled"],
  ])
  assert.equal(mcp.tools.length, 13)
  assert.equal((await mcp.tools[0].execute({ text: "still fine" })).output, "still fine")
  await mcp.close()
})

const SECRET = "SECRET-5d1c"
const secretUrl = (base, p) => `${base.replace("http://", `http://user:pw-${SECRET}@`)}${p}?api_key=${SECRET}#frag-${SECRET}`
const assertClean = (text, what) => {
  for (const leak of [SECRET, "user:", "api_key"]) assert.ok(!text.includes(leak), `${what} leaks ${leak}: ${text}`)
}

test("credentials in a remote server's URL reach no warning, status or thrown error", { timeout: 30_000 }, async (t) => {
  const failing = http.createServer((req, res) => res.writeHead(500, { "content-type": "text/plain" }).end("boom"))
  await new Promise((r) => failing.listen(0, "127.0.0.1", r))
  t.after(() => failing.close())
  const closed = `http://127.0.0.1:${await closedPort()}`
  const broken = `http://127.0.0.1:${failing.address().port}`
  const config = {
    mcpServers: {
      closed: { url: secretUrl(closed, "/mcp"), timeout: 5000 },
      broken: { type: "remote", url: secretUrl(broken, "/mcp") },
      odd: secretUrl(closed, "/x"),
    },
  }
  const asPath = secretUrl("http://127.0.0.1:1", "/mcp.json")
  const r = await runChild(`
    import { createToolkit, listMcpTools, loadMcp, parseMcpConfig } from ENTRY
    const warned = []
    const warn = console.warn
    console.warn = (...args) => { warned.push(args.map(String).join(" ")); warn(...args) }
    const config = ${JSON.stringify(config)}
    const toolkit = await createToolkit({ mcpConfig: config })
    const status = toolkit.mcpStatus()
    const listed = (await listMcpTools(config)).status
    await toolkit.close()
    const thrown = []
    for (const f of [() => parseMcpConfig(${JSON.stringify(asPath)}), () => loadMcp(${JSON.stringify(asPath)}), () => listMcpTools(${JSON.stringify(asPath)})]) {
      try { await f(); thrown.push("nothing thrown") } catch (e) { thrown.push(String(e?.stack ?? e)) }
    }
    console.log(JSON.stringify({ status, listed, thrown, warned }))
  `, { timeoutMs: 25_000 })
  assert.equal(r.code, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  const failed = { closed: "failed", broken: "failed", odd: "failed" }
  assert.deepEqual([out.status, out.listed], [failed, failed])
  assertClean(r.stdout, "stdout")
  assertClean(r.stderr, "stderr")
  for (const name of Object.keys(failed)) {
    const lines = r.stderr.split("\n").filter((l) => l.startsWith(`[toolnexus] MCP server "${name}" failed: `))
    assert.equal(lines.length, 2, r.stderr)
  }
  // A 500 is the server's answer, said as such (no fall back to the legacy SSE transport).
  assert.ok(r.stderr.includes(`[toolnexus] MCP server "broken" failed: the server answered HTTP 500`), r.stderr)
  assert.ok(r.stderr.includes(`${closed}/x`), r.stderr)
  assert.equal(out.thrown.length, 3)
  for (const e of out.thrown) assert.match(e, /ENOENT: no such file or directory, open 'http:\/\/127\.0\.0\.1:1\/mcp\.json'/)
})

test("credentials in a remote server's URL reach no tool result", { timeout: 30_000 }, async () => {
  const srv = await startHttp()
  let stopped = false
  try {
    const mcp = await loadMcp({ web: { url: secretUrl(srv.base, "/mcp") } })
    assert.deepEqual(mcp.status, { web: "connected" })
    assert.equal((await mcp.tools[0].execute({ text: "hi" })).output, "echo: hi")
    await srv.close()
    stopped = true
    const r = await mcp.tools[0].execute({ text: "hi" })
    assert.equal(r.isError, true)
    assertClean(JSON.stringify(r), "the tool result")
    await mcp.close()
  } finally {
    if (!stopped) await srv.close()
  }
})

test("results map as the reference maps them; timeouts and a dying server are error results", { timeout: 30_000 }, async () => {
  const mcp = await loadMcp({ fx: local() })
  const run = (name, args, ctx) => mcp.tools.find((t) => t.name === `fx_${name}`).execute(args, ctx)
  assert.deepEqual(await run("multi", {}), { output: "one\n\ntwo", isError: false, metadata: { server: "fx" } })
  assert.equal((await run("structured", {})).output, '{"2":"x","b":1,"a":[1.5,2]}')
  assert.deepEqual(await run("fail", {}), { output: "first\n\nsecond", isError: true, metadata: { server: "fx" } })
  assert.equal((await run("fail_blank", {})).output, "MCP tool returned an error")
  assert.equal((await run("rpc_error", {})).output, "MCP error -32602: bad arguments")
  assert.deepEqual(await run("slow", { ms: 5000 }, { timeout: 150 }), {
    output: "MCP error -32001: Request timed out",
    isError: true,
    metadata: { server: "fx" },
  })
  const t0 = Date.now()
  assert.deepEqual(await run("die", {}), { output: "MCP error -32000: Connection closed", isError: true, metadata: { server: "fx" } })
  assert.ok(Date.now() - t0 < 3000)
  assert.equal((await run("echo", { text: "x" })).output, "MCP error -32000: Connection closed")
  await mcp.close()
})

test("close() ends every child process, grandchildren included", { timeout: 30_000 }, async () => {
  const mark = tag("close")
  const mcp = await loadMcp({ a: local("--grandchild", "--tag", mark), b: local("--grandchild", "--ignore-eof", "--tag", mark) })
  assert.equal(processesWith(mark).length, 4)
  const who = JSON.parse((await mcp.tools.find((t) => t.name === "a_whoami").execute({})).output)
  process.kill(who.pid, 0)
  await mcp.close()
  assert.deepEqual(await noneLeft(mark), [])
  // The server is our own child: close() has reaped it, so its pid is gone.
  assert.throws(() => process.kill(who.pid, 0), { code: "ESRCH" })
  assert.ok(ended(who.grandchild), `grandchild ${who.grandchild} still running or left for us to reap`)
})

test("the signal bounds the load: an abort rejects with its reason and leaves nothing running", { timeout: 30_000 }, async () => {
  const mark = tag("abort")
  const reason = new Error("deadline")
  const ctrl = new AbortController()
  setTimeout(() => ctrl.abort(reason), 150)
  const t0 = Date.now()
  await assert.rejects(loadMcp({ hang: { ...local("--hang-list", "--grandchild", "--tag", mark), timeout: 60_000 } }, { signal: ctrl.signal }), (e) => e === reason)
  assert.ok(Date.now() - t0 < 2000)
  assert.deepEqual(await noneLeft(mark), [])
  // createToolkit passes the same signal to its MCP load.
  const ctrl2 = new AbortController()
  setTimeout(() => ctrl2.abort(), 150)
  await assert.rejects(
    createToolkit({ mcpConfig: { hang: { ...local("--hang-list", "--tag", mark), timeout: 60_000 } }, signal: ctrl2.signal }),
    (e) => e === ctrl2.signal.reason,
  )
  assert.deepEqual(await noneLeft(mark), [])
})

test("listMcpTools lists unfiltered original names and disconnects", { timeout: 30_000 }, async () => {
  const mark = tag("list")
  const inv = await listMcpTools({
    srv: { ...local("--grandchild", "--ignore-eof", "--tag", mark), tools: { echo: true } },
    bad: { command: ["node", "/no/such/script.mjs"] },
    off: { url: "https://example.com/mcp", enabled: false },
  })
  assert.deepEqual(inv.status, { srv: "connected", bad: "failed", off: "disabled" })
  assert.deepEqual(Object.keys(inv.tools), ["srv"])
  assert.equal(inv.tools.srv.length, 13)
  assert.deepEqual(inv.tools.srv[0], {
    name: "echo",
    description: "Echo the text back",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  })
  assert.equal(inv.tools.srv[12].name, "weird name.v2")
  assert.deepEqual(processesWith(mark), [])
})

test("createToolkit({ mcpConfig }): MCP tools first, stable Tool objects, real mcpStatus, close", { timeout: 30_000 }, async () => {
  const mine = { name: "mine", description: "", inputSchema: { type: "object" }, source: "custom", execute: async () => ({ output: "m", isError: false }) }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-mcp-cfg-"))
  const cfgPath = path.join(dir, "mcp.json")
  fs.writeFileSync(cfgPath, JSON.stringify({ mcpServers: { fx: { ...local(), tools: { echo: true, structured: true } }, gone: { url: "http://127.0.0.1:9/mcp", timeout: 2000 } } }))
  try {
    const tk = await createToolkit({ mcpConfig: cfgPath, extraTools: [mine], disableTools: ["fx_structured"], builtins: false })
    assert.deepEqual(tk.mcpStatus(), { fx: "connected", gone: "failed" })
    const tools = tk.tools()
    assert.deepEqual(tools.map((t) => [t.name, t.source]), [["fx_echo", "mcp"], ["mine", "custom"]])
    assert.equal(tk.tools()[0], tools[0], "the same Tool object every time")
    assert.equal(tk.get("fx_echo"), tools[0])
    assert.equal(tk.get("mine"), mine)
    assert.equal(tk.get("fx_structured"), undefined)
    assert.equal((await tools[0].execute({ text: "direct" })).output, "direct")
    assert.deepEqual(await tk.execute("fx_echo", { text: "routed" }), { output: "routed", isError: false, metadata: { server: "fx" } })
    assert.deepEqual(tk.toOpenAI()[0].function, { name: "fx_echo", description: "Echo the text back", parameters: tools[0].inputSchema })
    await tk.close()
    await tk.close()
    assert.equal((await tk.execute("fx_echo", { text: "after" })).isError, true)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("createToolkit's waitFor answers MCP elicitation", { timeout: 30_000 }, async () => {
  const srv = await startHttp()
  try {
    const tk = await createToolkit({
      mcpConfig: { web: { url: `${srv.base}/mcp` } },
      waitFor: async (request) => ({ id: request.id, ok: true, data: { env: "prod" } }),
    })
    assert.equal((await tk.execute("web_ask", {})).output, '{"action":"accept","content":{"env":"prod"}}')
    await tk.close()
    // Without waitFor the capability is not advertised, and the server's request fails the call.
    const plain = await createToolkit({ mcpConfig: { web: { url: `${srv.base}/mcp` } } })
    const r = await plain.execute("web_ask", {})
    assert.equal(r.isError, true)
    await plain.close()
  } finally {
    await srv.close()
  }
})

test("parseMcpConfig, expandEnvHeaders and the elicitation mappings", () => {
  const cfg = parseMcpConfig(FIXTURE)
  assert.deepEqual(Object.keys(cfg), ["everything", "switched-off"])
  assert.deepEqual(parseMcpConfig({ a: { url: "u" }, builtins: false, agents: [], a2a: {}, mcpServer: {} }), { a: { url: "u" } })
  assert.deepEqual(parseMcpConfig({ servers: { s: {} } }), { s: {} })
  assert.throws(() => parseMcpConfig("does-not-exist.json"), /ENOENT/)
  process.env.TN_JS_HDR = "v1"
  assert.deepEqual(expandEnvHeaders({ A: "x ${TN_JS_HDR} ${TN_JS_UNSET_HDR}y" }), { A: "x v1 y" })
  assert.equal(expandEnvHeaders(undefined), undefined)
  const req = elicitationToRequest({ message: "m", requestedSchema: { type: "object" } })
  assert.deepEqual(Object.keys(req), ["id", "kind", "prompt", "data"])
  assert.deepEqual(answerToElicitResult({ id: "a", ok: true }), { action: "accept", content: {} })
  assert.throws(() => elicitationToRequest(undefined), TypeError)
  assert.throws(() => answerToElicitResult(null), TypeError)
})

test("loadMcp accepts any waitFor, as the reference does (a non-function fails only when an elicitation calls it)", async () => {
  const lenient = await loadMcp({}, { waitFor: "nope" })
  assert.deepEqual(lenient.status, {})
  const empty = await loadMcp({})
  assert.deepEqual(empty, { tools: [], status: {}, close: empty.close })
})

const TSC = path.join(REPO, "node_modules", ".bin", "tsc")
const CONSUMER = `
import {
  parseMcpConfig, expandEnvHeaders, loadMcp, listMcpTools, elicitationToRequest, answerToElicitResult, createToolkit,
  type McpConfig, type McpSource, type McpInventory, type ToolInfo, type ServerConfig, type LocalServer, type RemoteServer,
  type ElicitResult, type Request, type Answer, type McpStatus,
} from "toolnexus"

export async function main(): Promise<string> {
  const config: McpConfig = parseMcpConfig("examples/mcp.json")
  const local: LocalServer = { type: "local", command: ["node", "server.mjs"], env: { A: "1" }, cwd: "/tmp", timeout: 500, tools: { a: true } }
  const remote: RemoteServer = { url: "https://example.com/mcp", headers: { Authorization: "Bearer \${TOKEN}" }, enabled: false }
  const servers: Record<string, ServerConfig> = { ...config, local, remote }
  const headers: Record<string, string> | undefined = expandEnvHeaders(remote.headers)
  const waitFor = async (request: Request): Promise<Answer> => ({ id: request.id, ok: true, data: { env: "prod" } })
  const mcp: McpSource = await loadMcp(servers, { waitFor, signal: AbortSignal.timeout(1000) })
  const s: McpStatus | undefined = mcp.status["local"]
  const out = await mcp.tools[0]?.execute({ a: 1 })
  await mcp.close()
  const inv: McpInventory = await listMcpTools("mcp.json", { signal: new AbortController().signal })
  const info: ToolInfo | undefined = inv.tools["local"]?.[0]
  const req: Request = elicitationToRequest({ mode: "url", message: "Authorize", url: "https://x" })
  const res: ElicitResult = answerToElicitResult({ id: req.id, ok: false, reason: "declined" })
  const tk = await createToolkit({ mcpConfig: servers, waitFor, signal: AbortSignal.timeout(1000) })
  const st: Record<string, McpStatus> = tk.mcpStatus()
  await tk.close()
  return [s, out?.output, info?.inputSchema.type, res.action, headers?.Authorization, Object.keys(st).length].join("|")
}

// @ts-expect-error - a local server needs a command
const noCommand: LocalServer = { type: "local" }
// @ts-expect-error - the action is accept, decline or cancel
const badAction: ElicitResult = { action: "maybe" }
void noCommand; void badAction
`

test("the MCP declarations type-check a strict TypeScript consumer", { skip: fs.existsSync(TSC) ? false : `tsc not installed at ${TSC}`, timeout: 55_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-tsc-mcp-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, "node_modules"))
  fs.symlinkSync(REPO, path.join(dir, "node_modules", "toolnexus"), "dir")
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
  fs.writeFileSync(path.join(dir, "consumer.ts"), CONSUMER)
  const args = ["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom"]
  const types = path.join(REPO, "node_modules", "@types")
  if (fs.existsSync(path.join(types, "node"))) args.push("--typeRoots", types, "--types", "node")
  args.push("consumer.ts")
  const r = await new Promise((resolve) => {
    const child = spawn(TSC, args, { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (out += d))
    child.on("close", (code) => resolve({ code, out }))
  })
  assert.equal(r.code, 0, r.out)
})

// The reference's MCP doc pages, run unchanged (three of them start a server script built
// with `buildMcpServer`).
const DOCS = path.resolve(REPO, "..", "ref", "site", "src", "content", "docs", "api", "javascript", "mcp")
const RUNNER = path.resolve(REPO, "..", "shared", "tools", "docs-examples.mjs")
const TSX = path.join(REPO, "node_modules", ".bin", "tsx")
const docsMissing = [DOCS, RUNNER, TSX].filter((p) => !fs.existsSync(p))

test("the reference's MCP doc examples pass", { skip: docsMissing.length ? `missing ${docsMissing.join(", ")}` : false, timeout: 180_000 }, async (t) => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-mcp-docs-"))
  t.after(() => fs.rmSync(out, { recursive: true, force: true }))
  const args = [RUNNER, "--docs", DOCS, "--pkg", REPO, "--out", out, "--tsx", TSX, "--timeout", "120"]
  const fixtures = path.resolve(REPO, "..", "shared", "fixtures")
  if (fs.existsSync(fixtures)) args.push("--root", fixtures)
  const r = await new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: REPO, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stdout += d))
    child.on("close", (code) => resolve({ code, stdout }))
  })
  assert.match(r.stdout.trimEnd(), /15 passed, 0 failed$/, r.stdout)
  assert.equal(r.code, 0, r.stdout)
})
