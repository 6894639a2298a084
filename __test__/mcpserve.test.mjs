// SPEC §7C from JavaScript: buildMcpServer / exposedMcpTools against the official MCP SDK as
// the peer — in memory, over stdio (the SDK's client and our own loadMcp), and as a process
// that ends when its stdin does.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { McpError } from "@modelcontextprotocol/sdk/types.js"
import { buildMcpServer, createBuiltinTools, createToolkit, defineTool, exposedMcpTools, loadMcp } from "../index.js"
import { REPO, ENTRY_URL, runChild, within } from "./support/llm.mjs"

const schema = { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
const echo = defineTool({ name: "echo", description: "echo back text", inputSchema: schema, run: (a) => String(a.text ?? "") })
const boom = defineTool({ name: "boom", description: "always throws", run: () => { throw new Error("kaboom") } })

async function connected(tools, cfg, onCall) {
  const server = buildMcpServer(tools, cfg, onCall)
  const [clientT, serverT] = InMemoryTransport.createLinkedPair()
  await server.connect(serverT)
  const client = new Client({ name: "test-client", version: "1.0.0" })
  await client.connect(clientT)
  return { server, client }
}

test("in memory: initialize, tools/list verbatim, tools/call, a throwing tool, an unknown tool", async () => {
  // A raw Tool object (not defineTool) whose execute throws: the reference's isError text.
  const raw = { name: "raw.tool", description: "raw", inputSchema: { type: "object" }, source: "custom", execute: async () => { throw "plain string" } }
  const { client } = await connected([echo, boom, raw], { name: "gateway", version: "2.0.0" })
  try {
    assert.deepEqual(client.getServerVersion(), { name: "gateway", version: "2.0.0" })
    assert.ok(client.getServerCapabilities()?.tools)
    const { tools } = await client.listTools()
    assert.deepEqual(tools.map((t) => t.name), ["echo", "boom", "raw.tool"])
    assert.equal(tools[0].description, "echo back text")
    assert.deepEqual(tools[0].inputSchema, schema)

    const ok = await client.callTool({ name: "echo", arguments: { text: "hi" } })
    assert.deepEqual(ok.content, [{ type: "text", text: "hi" }])
    assert.equal(ok.isError, false)

    const bad = await client.callTool({ name: "boom", arguments: {} })
    assert.deepEqual(bad.content, [{ type: "text", text: "kaboom" }])
    assert.equal(bad.isError, true)
    const thrown = await client.callTool({ name: "raw.tool" })
    assert.deepEqual([thrown.content[0].text, thrown.isError], ["plain string", true])

    await assert.rejects(client.callTool({ name: "nope", arguments: {} }), (e) => {
      assert.ok(e instanceof McpError)
      assert.equal(e.code, -32602)
      assert.match(e.message, /Unknown tool: nope/)
      return true
    })
  } finally {
    await client.close()
  }
})

test("defaults: serverInfo is toolnexus 0.1.0; buildMcpServer itself applies no name filter", async () => {
  const { client } = await connected([echo, boom], { tools: ["echo"] })
  try {
    assert.deepEqual(client.getServerVersion(), { name: "toolnexus", version: "0.1.0" })
    // The filter is exposedMcpTools' job, as in the reference.
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ["echo", "boom"])
  } finally {
    await client.close()
  }
})

test("onCall sees every call with name, source, ms and isError; its failure changes nothing", async () => {
  const events = []
  let n = 0
  const onCall = async (ev) => {
    events.push(ev)
    if (++n === 1) throw new Error("observer broke")
  }
  const fromHttp = defineTool({ name: "h", description: "d", source: "http", run: () => ({ output: "soft", isError: true }) })
  const { client } = await connected([echo, fromHttp], undefined, onCall)
  try {
    assert.equal((await client.callTool({ name: "echo", arguments: { text: "a" } })).content[0].text, "a")
    assert.equal((await client.callTool({ name: "h", arguments: {} })).isError, true)
    await assert.rejects(client.callTool({ name: "zzz" }))
    assert.deepEqual(events.map(({ name, source, isError }) => ({ name, source, isError })), [
      { name: "echo", source: "native", isError: false },
      { name: "h", source: "http", isError: true },
    ])
    assert.ok(events.every((ev) => Number.isInteger(ev.ms) && ev.ms >= 0))
  } finally {
    await client.close()
  }
})

test("a client's abort reaches the tool's ctx.signal", async () => {
  let aborted
  const seen = new Promise((resolve) => (aborted = resolve))
  const wait = defineTool({
    name: "wait",
    description: "waits for its signal",
    run: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => { aborted("aborted"); resolve("stopped") })),
  })
  const { client } = await connected([wait])
  try {
    const ac = new AbortController()
    const call = client.callTool({ name: "wait", arguments: {} }, undefined, { signal: ac.signal })
    setTimeout(() => ac.abort("enough"), 50)
    await assert.rejects(call)
    assert.equal(await within(5000, seen, "the tool's signal aborted"), "aborted")
  } finally {
    await client.close()
  }
})

test("tools the core owns run through the same server; a changed copy runs its own execute", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-mcpserve-"))
  const file = path.join(dir, "note.txt")
  fs.writeFileSync(file, "hello from disk\n")
  const read = createBuiltinTools().find((t) => t.name === "read")
  let copies = 0
  const copy = { ...read, name: "read_copy", execute: (args, ctx) => (copies++, read.execute(args, ctx)) }
  const tk = await createToolkit({ builtins: false, extraTools: [echo] })
  const { client } = await connected([read, copy, ...tk.tools()])
  try {
    const { tools } = await client.listTools()
    assert.deepEqual(tools.map((t) => t.name), ["read", "read_copy", "echo"])
    assert.deepEqual(tools[0].inputSchema, read.inputSchema)
    for (const name of ["read", "read_copy"]) {
      const r = await client.callTool({ name, arguments: { path: file } })
      assert.equal(r.isError, false, r.content[0].text)
      assert.match(r.content[0].text, /hello from disk/)
    }
    assert.equal(copies, 1)
    const missing = await client.callTool({ name: "read", arguments: { path: path.join(dir, "nope") } })
    assert.equal(missing.isError, true)
    assert.equal((await client.callTool({ name: "echo", arguments: { text: "tk" } })).content[0].text, "tk")
  } finally {
    await client.close()
    await tk.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("exposedMcpTools: the caller's own objects, in order; unknown names ignored; no filter is the list itself", () => {
  const a = defineTool({ name: "a", description: "a", run: () => "a" })
  const b = defineTool({ name: "b", description: "b", run: () => "b" })
  const c = defineTool({ name: "c", description: "c", run: () => "c" })
  const all = [a, b, c]
  const picked = exposedMcpTools(all, { tools: ["c", "nope", "a"] })
  assert.equal(picked.length, 2)
  assert.ok(picked[0] === a && picked[1] === c)
  assert.equal(exposedMcpTools(all), all)
  assert.equal(exposedMcpTools(all, {}), all)
  assert.equal(exposedMcpTools(all, { tools: null }), all)
  assert.deepEqual(exposedMcpTools(all, { tools: [] }), [])
})

test("close: the client sees the connection end; the server can connect again", async () => {
  const { server, client } = await connected([echo])
  let closed = false
  client.onclose = () => (closed = true)
  await server.close()
  assert.equal(closed, true)
  assert.equal(server.transport, undefined)
  const [clientT, serverT] = InMemoryTransport.createLinkedPair()
  await server.connect(serverT)
  const again = new Client({ name: "again", version: "1" })
  await again.connect(clientT)
  assert.equal((await again.callTool({ name: "echo", arguments: { text: "2" } })).content[0].text, "2")
  await again.close()
})

test("any object with the transport surface: a failed send goes to onerror, a failed start rejects connect", async () => {
  const server = buildMcpServer([echo])
  const errors = []
  server.onerror = (e) => errors.push(e.message)
  let started = false
  const transport = {
    async start() {
      started = true
    },
    async send() {
      throw new Error("pipe closed")
    },
    async close() {
      this.onclose?.()
    },
  }
  await server.connect(transport)
  assert.ok(started && typeof transport.onmessage === "function")
  transport.onmessage({ jsonrpc: "2.0", id: 1, method: "ping" })
  await within(5000, (async () => { while (!errors.length) await new Promise((r) => setTimeout(r, 10)) })(), "onerror")
  assert.deepEqual(errors, ["pipe closed"])
  let closed = 0
  server.onclose = () => closed++
  await server.close()
  assert.equal(closed, 1)

  const broken = { start: async () => { throw new Error("cannot start") }, send: async () => {}, close: async () => {} }
  await assert.rejects(buildMcpServer([echo]).connect(broken), /cannot start/)
})

// ---- stdio: a server script as its own process ----

const require = createRequire(import.meta.url)
const STDIO_URL = pathToFileURL(require.resolve("@modelcontextprotocol/sdk/server/stdio.js")).href

function serverScript(dir) {
  const file = path.join(dir, "server.mjs")
  fs.writeFileSync(
    file,
    `import { buildMcpServer, defineTool } from ${JSON.stringify(ENTRY_URL)}
import { StdioServerTransport } from ${JSON.stringify(STDIO_URL)}
const tools = [
  defineTool({ name: "search", description: "Search the docs", inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] }, run: ({ q }) => "results for " + q }),
  defineTool({ name: "slow", description: "answers later", run: () => new Promise((r) => setTimeout(() => r("late"), 200)) }),
]
const server = buildMcpServer(tools, { name: "stdio-demo", version: "3.1.4" })
await server.connect(new StdioServerTransport())
`,
  )
  return file
}

test("stdio: the SDK's StdioClientTransport spawns a buildMcpServer script", { timeout: 30_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-mcpserve-stdio-"))
  try {
    const client = new Client({ name: "stdio-client", version: "1" })
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [serverScript(dir)], cwd: REPO }))
    assert.deepEqual(client.getServerVersion(), { name: "stdio-demo", version: "3.1.4" })
    const { tools } = await client.listTools()
    assert.deepEqual(tools.map((t) => t.name), ["search", "slow"])
    const r = await client.callTool({ name: "search", arguments: { q: "mcp" } })
    assert.deepEqual(r.content, [{ type: "text", text: "results for mcp" }])
    assert.equal((await client.callTool({ name: "slow", arguments: {} })).content[0].text, "late")
    await client.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("stdio: loadMcp spawns a buildMcpServer script and calls its tools", { timeout: 30_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-mcpserve-load-"))
  try {
    const src = await loadMcp({ docs: { type: "local", command: [process.execPath, serverScript(dir)] } })
    try {
      assert.deepEqual(src.status, { docs: "connected" })
      const search = src.tools.find((t) => /search$/.test(t.name))
      assert.ok(search, src.tools.map((t) => t.name).join(","))
      assert.deepEqual(search.inputSchema.required, ["q"])
      const r = await search.execute({ q: "load" })
      assert.deepEqual([r.output, r.isError], ["results for load", false])
    } finally {
      await src.close()
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("stdio: the server process answers, then ends by itself when its stdin closes", { timeout: 30_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-mcpserve-eof-"))
  try {
    const child = spawn(process.execPath, [serverScript(dir)], { cwd: REPO, stdio: ["pipe", "pipe", "pipe"] })
    const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })))
    let buf = ""
    const replies = []
    let wake
    child.stdout.on("data", (d) => {
      buf += d
      let nl
      while ((nl = buf.indexOf("\n")) >= 0) {
        replies.push(JSON.parse(buf.slice(0, nl)))
        buf = buf.slice(nl + 1)
        wake?.()
      }
    })
    const send = (m) => child.stdin.write(JSON.stringify(m) + "\n")
    const reply = async (id) => {
      for (;;) {
        const found = replies.find((r) => r.id === id)
        if (found) return found
        await within(10_000, new Promise((r) => (wake = r)), `reply ${id}`)
      }
    }
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } })
    assert.equal((await reply(1)).result.serverInfo.name, "stdio-demo")
    send({ jsonrpc: "2.0", method: "notifications/initialized" })
    // A call in flight when stdin closes is still answered before the process ends.
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "slow", arguments: {} } })
    child.stdin.end()
    assert.equal((await reply(2)).result.content[0].text, "late")
    const end = await within(5000, exited, "the server process exits")
    assert.deepEqual(end, { code: 0, signal: null })
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("an in-memory round trip in a script of its own ends the process by itself", { timeout: 30_000 }, async () => {
  const r = await runChild(`
    import { buildMcpServer, createBuiltinTools, defineTool } from ENTRY
    import { Client } from "@modelcontextprotocol/sdk/client/index.js"
    import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
    const slow = defineTool({ name: "slow", description: "d", run: () => new Promise((r) => setTimeout(() => r("done"), 100)) })
    // A tool of the core's own, run natively.
    const bash = createBuiltinTools().find((t) => t.name === "bash")
    const server = buildMcpServer([slow, bash])
    const [c, s] = InMemoryTransport.createLinkedPair()
    await server.connect(s)
    const client = new Client({ name: "c", version: "1" })
    await client.connect(c)
    const res = await client.callTool({ name: "slow", arguments: {} })
    const sh = await client.callTool({ name: "bash", arguments: { command: "sleep 0.3; echo native" } })
    console.log("got:" + res.content[0].text + "," + sh.content[0].text.trim())
    await client.close()
  `)
  assert.equal(r.timedOut, false, r.stderr)
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), "got:done,native")
})

test("the declarations take the MCP SDK's own transports (strict TypeScript)", { timeout: 60_000 }, async (t) => {
  const TSC = path.join(REPO, "node_modules", ".bin", "tsc")
  if (!fs.existsSync(TSC)) return t.skip(`tsc not installed at ${TSC}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-mcpserve-tsc-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, "node_modules"))
  fs.symlinkSync(REPO, path.join(dir, "node_modules", "toolnexus"), "dir")
  fs.symlinkSync(path.join(REPO, "node_modules", "@modelcontextprotocol"), path.join(dir, "node_modules", "@modelcontextprotocol"), "dir")
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
  fs.writeFileSync(
    path.join(dir, "consumer.ts"),
    `import { buildMcpServer, defineTool, exposedMcpTools, type MCPServeConfig, type OnCall, type OnCallEvent, type Tool } from "toolnexus"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
const echo = defineTool({ name: "echo", description: "echo", run: (a) => String(a.text ?? "") })
const cfg: MCPServeConfig = { name: "gw", version: "1.0.0", tools: ["echo"] }
const onCall: OnCall = async (ev: OnCallEvent) => { const ms: number = ev.ms; const bad: boolean = ev.isError; void ms; void bad }
const exposed: Tool[] = exposedMcpTools([echo], cfg)
const server = buildMcpServer(exposed, cfg, onCall)
const [, serverT] = InMemoryTransport.createLinkedPair()
export async function main(): Promise<void> {
  await server.connect(serverT)
  await buildMcpServer([echo]).connect(new StdioServerTransport())
  await server.close()
}
`,
  )
  const args = ["--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom"]
  const TYPES = path.join(REPO, "node_modules", "@types")
  if (fs.existsSync(path.join(TYPES, "node"))) args.push("--typeRoots", TYPES, "--types", "node")
  args.push("consumer.ts")
  const r = await new Promise((resolve) => {
    const child = spawn(TSC, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (out += d))
    child.on("close", (code) => resolve({ code, out }))
  })
  assert.equal(r.code, 0, r.out)
})
