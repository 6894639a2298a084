// The platform's own rules, checked against Node in the same run (issue 43): paths as Node's
// `path` writes them, file errors as Node's `fs` words them, commands found as Node users'
// tools find them (PATHEXT and `.cmd` shims on Windows), a command's whole process tree ended
// by a timeout and by `close()`, and Task ids that are not file names on Windows. It runs in
// the normal suite on Linux and, through scripts/windows.sh, under wine with Node for Windows.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import net from "node:net"
import { FileTaskStore, createBuiltinTools, createClient, createToolkit, loadMcp } from "../index.js"
import { REPO, closedPort } from "./support/llm.mjs"
import crossSpawn from "cross-spawn"

const windows = process.platform === "win32"
const SERVER = path.join(REPO, "crates", "core", "tests", "fixtures", "mcp_server.mjs")
const tool = (name) => createBuiltinTools().find((t) => t.name === name)
const tmp = (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-platform-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 }))
  return dir
}
/** Node's own error for `f()`, which must throw. */
const nodeError = (f) => {
  try {
    f()
  } catch (e) {
    return e
  }
  assert.fail("expected Node to throw")
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
/** Whether a process is alive. */
const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

test("write creates the missing folders of a path written with this platform's separators", async (t) => {
  const dir = tmp(t)
  const file = path.join(dir, "sub", "deeper", "note.txt")
  const r = await tool("write").execute({ path: file, content: "hello" })
  assert.equal(r.isError, false, r.output)
  assert.equal(fs.readFileSync(file, "utf8"), "hello")
  // Relative to the working directory, with forward slashes too (both separate on Windows).
  const cwd = process.cwd()
  process.chdir(dir)
  try {
    assert.equal((await tool("write").execute({ path: "rel/a/b.txt", content: "x" })).isError, false)
  } finally {
    process.chdir(cwd)
  }
  assert.equal(fs.readFileSync(path.join(dir, "rel", "a", "b.txt"), "utf8"), "x")
})

test("file errors read as Node's fs words them on this platform", async (t) => {
  const dir = tmp(t)
  const missing = path.join(dir, "missing.txt")
  const node = nodeError(() => fs.readFileSync(missing))
  assert.deepEqual(await tool("read").execute({ path: missing }), { output: `read: ${node.message}`, isError: true })

  // A folder where a file is wanted: the code Node gives it, in Node's words.
  const folder = path.join(dir, "folder")
  fs.mkdirSync(folder)
  const asFile = nodeError(() => fs.readFileSync(folder))
  const r = await tool("read").execute({ path: folder })
  assert.equal(r.isError, true)
  assert.match(r.output, new RegExp(`^read: ${asFile.code}: `), `${r.output} (Node: ${asFile.message})`)

  // A file standing where a folder is wanted.
  const plain = path.join(dir, "plain")
  fs.writeFileSync(plain, "x")
  const under = path.join(plain, "child.txt")
  const nodeUnder = nodeError(() => fs.readFileSync(under))
  const ours = await tool("read").execute({ path: under })
  assert.equal(ours.output, `read: ${nodeUnder.message}`)
})

test("a command's timeout ends everything it started, at once", { timeout: 30_000 }, async (t) => {
  const dir = tmp(t)
  const mark = path.join(dir, "late.txt")
  // The shell starts Node, which starts another Node that would write the file in 3 s.
  const inner = `setTimeout(() => require('fs').writeFileSync(${JSON.stringify(mark)}, 'late'), 3000); setInterval(() => {}, 1000)`
  const outer = `require('child_process').spawn(process.execPath, ['-e', ${JSON.stringify(inner)}], { stdio: 'ignore' }); setInterval(() => {}, 1000)`
  const script = path.join(dir, "outer.js")
  fs.writeFileSync(script, outer)
  const started = Date.now()
  const r = await tool("bash").execute({ command: `"${process.execPath}" "${script}"`, timeout: 800 })
  const took = Date.now() - started
  assert.equal(r.isError, true)
  assert.match(r.output, /^bash: command timed out after 800ms/)
  assert.ok(took < 2_500, `returned after ${took} ms`)
  await sleep(4_000)
  assert.equal(fs.existsSync(mark), false, "a process the command started outlived its timeout")
})

test("a local MCP server named by a bare command is found on PATH, a .cmd shim on Windows, its arguments intact", { timeout: 60_000 }, async (t) => {
  const dir = tmp(t)
  const name = "tn-fixture-server"
  if (windows) {
    fs.writeFileSync(path.join(dir, `${name}.cmd`), `@"${process.execPath}" "${SERVER}" %*\r\n`)
  } else {
    fs.writeFileSync(path.join(dir, name), `#!/bin/sh\nexec "${process.execPath}" "${SERVER}" "$@"\n`, { mode: 0o755 })
  }
  // The same kind of command, run by cross-spawn (how the MCP SDK starts servers for the
  // reference), printing the arguments it got.
  const echo = path.join(dir, "echo-args.js")
  fs.writeFileSync(echo, "process.stdout.write(JSON.stringify(process.argv.slice(2)))")
  if (windows) fs.writeFileSync(path.join(dir, "tn-echo.cmd"), `@"${process.execPath}" "${echo}" %*\r\n`)
  else fs.writeFileSync(path.join(dir, "tn-echo"), `#!/bin/sh\nexec "${process.execPath}" "${echo}" "$@"\n`, { mode: 0o755 })
  const pathKey = Object.keys(process.env).find((k) => k.toUpperCase() === "PATH") ?? "PATH"
  const env = { [pathKey]: `${dir}${path.delimiter}${process.env[pathKey] ?? ""}` }
  // Arguments cmd.exe would take as commands, were they not quoted and escaped.
  const tricky = ["two words", 'a "quoted" & calc', "100% | more", "%PATH%", "^caret!", "trailing\\", "x\\\\\"y", ""]
  const viaSdk = crossSpawn.sync("tn-echo", ["--grandchild", ...tricky], { env: { ...process.env, ...env }, encoding: "utf8" })
  assert.equal(viaSdk.status, 0, String(viaSdk.stderr))
  const sdkArgv = JSON.parse(viaSdk.stdout)
  // Every argument arrives as written, but where cmd.exe itself gets `%` wrong (wine's cmd.exe
  // does not take the `%cd:~,%` that cross-spawn and we break `%VAR%` with): ours match cross-spawn's.
  const exact = tricky.filter((a) => !a.includes("%"))
  for (const a of exact) assert.ok(sdkArgv.includes(a), `cross-spawn: ${JSON.stringify(a)} not in ${JSON.stringify(sdkArgv)}`)
  if (!windows) assert.deepEqual(sdkArgv, ["--grandchild", ...tricky])
  const mcp = await loadMcp({ fx: { type: "local", command: [name, "--grandchild", ...tricky], environment: env, timeout: 30_000 } })
  try {
    assert.equal(mcp.status.fx, "connected")
    const whoami = mcp.tools.find((t) => t.name.endsWith("whoami"))
    const who = JSON.parse((await whoami.execute({})).output)
    assert.deepEqual(who.argv, sdkArgv)
    for (const a of exact) assert.ok(who.argv.includes(a), `${JSON.stringify(a)} not in ${JSON.stringify(who.argv)}`)
    assert.ok(alive(who.pid) && alive(who.grandchild), "the server and its child run")
    await mcp.close()
    // close() ends the server's whole tree: the shim's shell, the server and its child.
    const until = Date.now() + 5_000
    while ((alive(who.pid) || alive(who.grandchild)) && Date.now() < until) await sleep(100)
    assert.equal(alive(who.pid), false, "the server outlived close()")
    assert.equal(alive(who.grandchild), false, "the server's child outlived close()")
  } finally {
    await mcp.close()
  }
})

test("a missing command fails as Node's spawn does", async (t) => {
  const warned = []
  t.mock.method(console, "warn", (...args) => warned.push(args.map(String).join(" ")))
  const mcp = await loadMcp({ gone: { type: "local", command: ["tn-no-such-command-anywhere"], timeout: 10_000 } })
  await mcp.close()
  assert.equal(mcp.status.gone, "failed")
  assert.ok(warned.some((w) => w.includes("spawn tn-no-such-command-anywhere ENOENT")), warned.join("\n"))
})

test("a refused connection carries the code and errno Node's sockets give on this platform", async () => {
  const port = await closedPort()
  // Node's own socket error for the same refusal: its code, and libuv's number for it here.
  const node = await new Promise((resolve) => net.connect(port, "127.0.0.1").once("error", resolve))
  const client = createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: "k", retries: 0 })
  const toolkit = await createToolkit({ builtins: { disabled: true } })
  const ours = await client.run("x", { toolkit }).then(() => assert.fail("expected the run to fail"), (e) => e)
  assert.ok(ours instanceof TypeError, String(ours))
  assert.equal(ours.message, "fetch failed")
  assert.equal(ours.cause.code, node.code)
  assert.equal(ours.cause.errno, node.errno)
  assert.equal(node.code, "ECONNREFUSED")
})

test("any Task id is a Task the file store keeps, device names of Windows included", async (t) => {
  const dir = tmp(t)
  const store = new FileTaskStore(dir)
  const ids = ["con", "NUL", "com1", "lpt9.txt", "aux", "prn", "a/b", "..", "ok-1"]
  for (const id of ids) {
    await store.save({ kind: "task", id, contextId: "c", status: { state: "completed" } })
  }
  for (const id of ids) {
    const back = await store.get(id)
    assert.equal(back?.id, id, `Task ${JSON.stringify(id)}`)
  }
  // Every Task is a file of the folder, none a device or a path elsewhere.
  assert.equal(fs.readdirSync(dir).filter((f) => f.endsWith(".json")).length, ids.length)
})
