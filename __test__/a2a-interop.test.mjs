// A2A with the official SDKs (issue 27), both generations, as real peer processes: each SDK's
// own client (its card resolver, its transport choice, its validators) completes a task against
// our server. The peers are __test__/peers/a2a/*; their SDKs are installed by scripts/peers.sh
// (.ci/run does it), found through TOOLNEXUS_PEERS_DIR or .peers/ at the repository root.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import path from "node:path"
import { spawn } from "node:child_process"
import { startA2AServer, agent, agentTools, createToolkit, createClient, defineTool } from "../index.js"
import { REPO, cleanEnv, startLLM, oaText, oaCalls, sawToolResult } from "./support/llm.mjs"
import { rpc } from "./support/engines.mjs"

const PEERS = process.env.TOOLNEXUS_PEERS_DIR ?? path.join(REPO, ".peers")
const PROGRAMS = path.join(REPO, "__test__", "peers", "a2a")
const installed = (name) => fs.existsSync(path.join(PEERS, name, ".installed"))
const missing = ["js-v1", "js-v03", "py-v1", "py-v03"].filter((n) => !installed(n))
const skip = missing.length > 0 && `the A2A SDK peers ${missing.join(", ")} are not installed (eval "$(scripts/peers.sh)")`

/** A peer program's command line: node for the JS ones, python3 on the SDK's folder for the Python ones. */
function command(file, args) {
  const full = path.join(PROGRAMS, file)
  if (file.endsWith(".py")) {
    const sdk = path.join(PEERS, file.startsWith("py-v1") ? "py-v1" : "py-v03")
    return { cmd: "python3", args: [full, ...args], env: { PYTHONPATH: sdk } }
  }
  return { cmd: process.execPath, args: [full, ...args], env: {} }
}

/** Run a client peer against `url`: its one JSON line. */
function client(file, url, extra = []) {
  const { cmd, args, env } = command(file, [url, ...extra])
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: REPO, env: { ...cleanEnv(), TOOLNEXUS_PEERS_DIR: PEERS, A2A_CLIENT_TIMEOUT_MS: "15000", ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (err += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.on("close", (code) => {
      clearTimeout(timer)
      const line = out.split("\n").find((l) => l.startsWith("{"))
      resolve(line ? { ...JSON.parse(line), code } : { ok: false, error: `no answer (exit ${code}): ${err.slice(-500)}` })
    })
  })
}

const CLIENTS = [
  ["@a2a-js/sdk 1.3.0 (v1.0)", "js-v1-client.mjs", []],
  ["@a2a-js/sdk 1.3.0 with its v0.3 compatibility", "js-v1-client.mjs", ["--compat"]],
  ["@a2a-js/sdk 0.3.14 (v0.3)", "js-v03-client.mjs", []],
  ["a2a-sdk 1.3.0 (Python, v1.0)", "py-v1-client.py", []],
  ["a2a-sdk 0.3.26 (Python, v0.3)", "py-v03-client.py", []],
]

test("each official A2A SDK client completes a task against our server", { skip }, async (t) => {
  const srv = await startA2AServer({
    addr: "127.0.0.1:0",
    skills: [{ name: "echo", description: "Echoes the text" }],
    a2a: { name: "interop", description: "echoes" },
    runTask: async (text) => ({ text: `echo: ${text}`, status: "done" }),
  })
  t.after(() => srv.stop())
  const url = srv.url.replace(/\/$/, "")
  for (const [name, file, extra] of CLIENTS) {
    await t.test(name, async () => {
      const r = await client(file, url, extra)
      assert.equal(r.error, undefined, `${name}: ${r.error}`)
      assert.equal(r.ok, true, JSON.stringify(r))
      assert.equal(r.state, "completed", JSON.stringify(r))
      assert.equal(r.text, "echo: hello", JSON.stringify(r))
    })
  }
})

test("each official A2A SDK client streams a task from our server when its card says it streams", { skip }, async (t) => {
  const srv = await startA2AServer({
    addr: "127.0.0.1:0",
    skills: [{ name: "echo", description: "Echoes the text" }],
    a2a: { name: "interop", description: "echoes", streaming: true },
    runTask: async (text) => ({ text: `echo: ${text}`, status: "done" }),
  })
  t.after(() => srv.stop())
  const url = srv.url.replace(/\/$/, "")
  const card = await (await fetch(`${url}/.well-known/agent-card.json`)).json()
  assert.equal(card.capabilities.streaming, true)
  for (const [name, file, extra] of CLIENTS) {
    await t.test(name, async () => {
      const r = await client(file, url, [...extra, "--stream"])
      assert.equal(r.error, undefined, `${name}: ${r.error}`)
      assert.equal(r.ok, true, JSON.stringify(r))
      assert.equal(r.text, "echo: hello", JSON.stringify(r))
      // The SDK read our events: the Task, then updates, one of them the artifact.
      assert.ok(r.kinds.length >= 3, JSON.stringify(r))
      assert.ok(r.kinds.some((k) => /artifact/i.test(k)), JSON.stringify(r))
    })
  }
})

test("the official JS SDK clients read a served tool's progress and logs as working status updates", { skip }, async (t) => {
  const llm = await startLLM((req) => (sawToolResult(req) ? oaText("built") : oaCalls([{ id: "c1", name: "build", args: {} }])))
  t.after(() => llm.close())
  const build = defineTool({
    name: "build",
    description: "reports as it goes",
    run: async (_a, ctx) => {
      ctx.progress(1, 2, "compiling")
      await new Promise((r) => setTimeout(r, 5))
      ctx.log("notice", "cache warm")
      return "ok"
    },
  })
  const tk = await createToolkit({ builtins: false, extraTools: [build] })
  const llmClient = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const srv = await tk.serve("127.0.0.1:0", { client: llmClient, a2a: { name: "builder", streaming: true } })
  t.after(() => srv.stop())
  const url = srv.url.replace(/\/$/, "")
  for (const [name, file, extra] of CLIENTS.filter(([, f]) => f.endsWith(".mjs"))) {
    await t.test(name, async () => {
      const r = await client(file, url, [...extra, "--stream"])
      assert.equal(r.ok, true, JSON.stringify(r))
      assert.equal(r.text, "built", JSON.stringify(r))
      assert.deepEqual(r.said, ["compiling", "notice: cache warm"], JSON.stringify(r))
    })
  }
})

/** Start a server peer: resolves { url, stop } once its card answers. */
async function server(file, extra = []) {
  const peer = await started(file, extra)
  // Some print their URL before they listen (a bound socket handed to uvicorn).
  for (let i = 0; ; i++) {
    const ok = await fetch(`${peer.url}/.well-known/agent-card.json`).then((r) => r.ok, () => false)
    if (ok) return peer
    if (i === 200) {
      peer.stop()
      throw new Error(`${file}: its card never answered`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Start a server peer: resolves { url, stop } once it printed its URL. */
function started(file, extra) {
  const { cmd, args, env } = command(file, ["0", ...extra])
  const child = spawn(cmd, args, { cwd: REPO, env: { ...cleanEnv(), TOOLNEXUS_PEERS_DIR: PEERS, ...env }, stdio: ["ignore", "pipe", "pipe"] })
  let err = ""
  child.stderr.on("data", (d) => (err += d))
  return new Promise((resolve, reject) => {
    let out = ""
    child.stdout.on("data", (d) => {
      out += d
      const line = out.split("\n").find((l) => l.startsWith("http"))
      if (line) resolve({ url: line.trim().replace(/\/$/, ""), stop: () => child.kill("SIGKILL") })
    })
    child.once("exit", (code) => reject(new Error(`${file} exited (${code}): ${err.slice(-500)}`)))
  })
}

const SERVERS = [
  ["@a2a-js/sdk 1.3.0 (v1.0)", "js-v1-server.mjs", []],
  ["@a2a-js/sdk 0.3.14 (v0.3)", "js-v03-server.mjs", []],
  ["a2a-sdk 1.3.0 (Python, v1.0)", "py-v1-server.py", []],
  ["a2a-sdk 0.3.26 (Python, v0.3)", "py-v03-server.py", []],
]

// Each SDK server's card says it streams: our agent() streams from it (message/stream or
// SendStreamingMessage, once SPEC's SendMessage is refused where the card also has a `url`).
test("our agent() completes a task with each official A2A SDK server", { skip }, async (t) => {
  for (const [name, file, extra] of SERVERS) {
    await t.test(name, async () => {
      const peer = await server(file, extra)
      try {
        const tools = await agentTools(agent({ card: `${peer.url}/.well-known/agent-card.json`, pollEvery: 20, timeout: 20_000 }))
        assert.ok(tools.length > 0, "the card's skills are tools")
        const r = await tools[0].execute({ task: "hello" })
        assert.equal(r.isError, false, JSON.stringify(r))
        assert.equal(r.output, "echo: hello")
        // A send that does not stream answers at once (blocking: false) and is polled.
        assert.equal(r.metadata.polls, 0, `streamed, not polled: ${JSON.stringify(r.metadata)}`)
      } finally {
        peer.stop()
      }
    })
  }
})

test("our own peers still get SPEC's wire: SendMessage answers the bare submitted Task, no kind, no contextId made up", async (t) => {
  const srv = await startA2AServer({ addr: "127.0.0.1:0", skills: [], a2a: { name: "spec" }, runTask: async (text) => ({ text, status: "done" }) })
  t.after(() => srv.stop())
  const sent = await rpc(srv.url.replace(/\/$/, ""), "SendMessage", { message: { role: "user", parts: [{ kind: "text", text: "x" }] } })
  assert.deepEqual(Object.keys(sent.result), ["id", "status"])
  assert.deepEqual(sent.result.status, { state: "submitted" })
})
