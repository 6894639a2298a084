// Local MCP servers end with the process that started them, however it ends: process.exit
// without close(), a Ctrl-C to its process group, SIGTERM, SIGKILL. Each case runs a host in a
// child process in its own process group; its servers (one of them wrapped in `sh -c`, as npx
// or a script would wrap it) ignore stdin EOF and each start a grandchild.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { ENTRY_URL, cleanEnv } from "./support/llm.mjs"

const sdk = (p) => import.meta.resolve(`@modelcontextprotocol/sdk/${p}`)

// An MCP server on the official SDK that keeps running after stdin closes and writes its pid
// and its grandchild's pid to the file named by its first argument.
const SERVER = `
import fs from "node:fs"
import { spawn } from "node:child_process"
import { Server } from ${JSON.stringify(sdk("server/index.js"))}
import { StdioServerTransport } from ${JSON.stringify(sdk("server/stdio.js"))}
import { CallToolRequestSchema, ListToolsRequestSchema } from ${JSON.stringify(sdk("types.js"))}
const grandchild = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
const server = new Server({ name: "orphan", version: "1.0.0" }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "ping", inputSchema: { type: "object" } }] }))
server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: "pong" }] }))
await server.connect(new StdioServerTransport())
process.stdin.on("end", () => {})
setInterval(() => {}, 1000)
fs.writeFileSync(process.argv[2], JSON.stringify({ server: process.pid, grandchild: grandchild.pid }))
`

// The host: a toolkit over both servers, never closed. Prints READY once both answer.
const HOST = `
import { createToolkit } from ${JSON.stringify(ENTRY_URL)}
const [mode, dir] = process.argv.slice(2)
const server = dir + "/server.mjs"
const toolkit = await createToolkit({
  mcpConfig: {
    mcpServers: {
      plain: { type: "local", command: [process.execPath, server, dir + "/plain.json"] },
      wrapped: { type: "local", command: ["/bin/sh", "-c", '"$0" "$@"; exit $?', process.execPath, server, dir + "/wrapped.json"] },
    },
  },
})
const answers = [await toolkit.execute("plain_ping", {}), await toolkit.execute("wrapped_ping", {})].map((r) => r.output)
// "exit": leave by process.exit when told to (once the test has seen the process tree). The
// handler is in place before READY is printed, so the signal cannot arrive ahead of it.
if (mode === "exit") process.on("SIGUSR2", () => process.exit(0))
console.log("READY " + JSON.stringify({ status: toolkit.mcpStatus(), answers }))
setInterval(() => {}, 1000)
`

/** Live (non-zombie) process ids among `pids`. */
function living(pids) {
  return pids.filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
    } catch {
      return false
    }
  })
}

/** Every descendant of `root`, through /proc's parent links. */
function descendants(root) {
  const parents = new Map()
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8")
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone while we looked
    }
  }
  const found = [root]
  for (let i = 0; i < found.length; i++) {
    for (const [pid, ppid] of parents) if (ppid === found[i] && !found.includes(pid)) found.push(pid)
  }
  return found.slice(1)
}

async function noneLiving(pids, ms) {
  const t0 = Date.now()
  for (;;) {
    const left = living(pids)
    if (!left.length || Date.now() - t0 > ms) return left
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** Start a host in its own process group; resolves once its servers answer. */
async function startHost(t, mode) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-orphans-"))
  fs.writeFileSync(path.join(dir, "server.mjs"), SERVER)
  fs.writeFileSync(path.join(dir, "host.mjs"), HOST)
  const child = spawn(process.execPath, [path.join(dir, "host.mjs"), mode, dir], {
    detached: true,
    env: cleanEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  })
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })))
  let stdout = ""
  let stderr = ""
  child.stderr.on("data", (d) => (stderr += d))
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`host not ready: ${stdout}\n${stderr}`)), 20_000)
    child.stdout.on("data", (d) => {
      stdout += d
      const line = stdout.split("\n").find((l) => l.startsWith("READY "))
      if (line) {
        clearTimeout(timer)
        resolve(JSON.parse(line.slice(6)))
      }
    })
    exited.then(({ code, signal }) => reject(new Error(`host ended early (${code ?? signal}): ${stderr}`)))
  })
  assert.deepEqual(ready, { status: { plain: "connected", wrapped: "connected" }, answers: ["pong", "pong"] })
  const servers = ["plain", "wrapped"].map((n) => JSON.parse(fs.readFileSync(path.join(dir, `${n}.json`), "utf8")))
  const pids = servers.flatMap((s) => [s.server, s.grandchild])
  const tree = descendants(child.pid)
  t.after(() => {
    for (const pid of living([child.pid, ...pids, ...tree])) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // already gone
      }
    }
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return { child, exited, pids, tree, stderr: () => stderr }
}

/** The host's tree before it ends: both servers, their grandchildren, the `sh` wrapper and a watcher per server. */
function assertTree(pids, tree) {
  for (const pid of pids) assert.ok(tree.includes(pid), `${pid} not under the host: ${tree}`)
  assert.equal(tree.length, 7, `${tree}`)
}

test("process.exit without close() leaves no server or grandchild", { timeout: 30_000 }, async (t) => {
  const host = await startHost(t, "exit")
  assertTree(host.pids, host.tree)
  process.kill(host.child.pid, "SIGUSR2")
  assert.deepEqual(await host.exited, { code: 0, signal: null }, host.stderr())
  assert.deepEqual(await noneLiving([...host.pids, ...host.tree], 3000), [])
})

for (const [what, signal, group] of [
  ["a Ctrl-C (SIGINT) to the host's process group", "SIGINT", true],
  ["SIGTERM to the host", "SIGTERM", false],
  ["SIGKILL to the host", "SIGKILL", false],
]) {
  test(`${what} leaves no server or grandchild`, { timeout: 30_000 }, async (t) => {
    const host = await startHost(t, "stay")
    assertTree(host.pids, host.tree)
    assert.deepEqual(living(host.pids), host.pids)
    process.kill(group ? -host.child.pid : host.child.pid, signal)
    assert.deepEqual(await host.exited, { code: null, signal }, host.stderr())
    assert.deepEqual(await noneLiving([...host.pids, ...host.tree], 4000), [])
  })
}
