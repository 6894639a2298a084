// The `logger` option (issue 28 item 3): a client's, a toolkit's, a server's and an agent
// runtime's `[toolnexus] …` warnings go to their own `logger.warn` instead of `console.warn`,
// with the same text; without the option, `console.warn` (looked up at each warning) is used.

import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import { agent, createInProcessClient, createToolkit, defineTool, startA2AServer } from "../index.js"

/** A logger that keeps what it is told. */
const recording = () => {
  const lines = []
  return { lines, warn: (text) => lines.push(text) }
}

/** console.warn's lines while `fn` runs (console.warn replaced for that time). */
async function consoleWarnings(fn) {
  const lines = []
  const orig = console.warn
  console.warn = (...a) => lines.push(a.join(" "))
  try {
    return { value: await fn(), lines }
  } finally {
    console.warn = orig
  }
}

const tool = (name) => defineTool({ name, description: name, run: () => "ok" })
const settle = () => new Promise((r) => setTimeout(r, 20))

test("a toolkit's logger gets its assembly's warnings, with console.warn's text, and console.warn none", async () => {
  const options = {
    builtins: false,
    skillsDir: "/no/such/skills-dir-tn",
    extraTools: [tool("twin"), tool("twin")],
    skillProvider: () => {
      throw new Error("provider down")
    },
    mcpConfig: { mcpServers: { missing: { command: ["/no/such/command-tn"] } } },
  }
  // Without a logger: console.warn, as before.
  const plain = await consoleWarnings(() => createToolkit(options))
  await plain.value.close()
  assert.ok(plain.lines.length >= 4, plain.lines.join("\n"))

  const logger = recording()
  const routed = await consoleWarnings(() => createToolkit({ ...options, logger }))
  const tk = routed.value
  await settle()
  assert.deepEqual(routed.lines, [], "nothing reaches console.warn")
  assert.deepEqual([...logger.lines].sort(), [...plain.lines].sort(), "the same lines, to the logger")
  for (const want of ["skill provider failed: provider down", "skills dir not found", 'duplicate tool name "twin"', 'MCP server "missing" failed']) {
    assert.ok(logger.lines.some((l) => l.startsWith("[toolnexus] ") && l.includes(want)), `${want}: ${logger.lines.join("\n")}`)
  }

  // Later work of the toolkit's warns there too: a duplicate registered now.
  const before = logger.lines.length
  const later = await consoleWarnings(async () => {
    tk.register(tool("twin"))
    await settle()
  })
  assert.deepEqual(later.lines, [])
  assert.deepEqual(logger.lines.slice(before), ['[toolnexus] duplicate tool name "twin" — keeping first'])
  await tk.close()
})

/** An in-process client whose every request body carries `requestParams` key `key` (refused with a warning). */
const warningClient = (key, logger, delayMs = 0) =>
  createInProcessClient({
    model: "m",
    requestParams: { [key]: true },
    generate: async () => {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs))
      return { content: `done ${key}` }
    },
    ...(logger ? { logger } : {}),
  })

test("two clients with different loggers in one process, running at once, do not cross", async () => {
  const a = recording()
  const b = recording()
  const tk = await createToolkit({ builtins: false })
  const { value: results, lines } = await consoleWarnings(() =>
    Promise.all([
      ...[0, 1, 2].map(() => warningClient("stream", a, 5).run("go", { toolkit: tk })),
      ...[0, 1, 2].map(() => warningClient("tools", b, 3).run("go", { toolkit: tk })),
    ]),
  )
  assert.deepEqual(results.map((r) => r.text), ["done stream", "done stream", "done stream", "done tools", "done tools", "done tools"])
  await settle()
  assert.deepEqual(lines, [])
  assert.equal(a.lines.length, 3, a.lines.join("\n"))
  assert.equal(b.lines.length, 3, b.lines.join("\n"))
  assert.ok(a.lines.every((l) => l === '[toolnexus] requestParams key "stream" is not allowed — ignored (use bodyTransform)'), a.lines.join("\n"))
  assert.ok(b.lines.every((l) => l === '[toolnexus] requestParams key "tools" is not allowed — ignored (use bodyTransform)'), b.lines.join("\n"))
})

test("without a logger, console.warn as it is at each warning gets the text", async () => {
  const tk = await createToolkit({ builtins: false })
  const client = warningClient("messages")
  const first = await consoleWarnings(() => client.run("go", { toolkit: tk }))
  assert.deepEqual(first.lines, ['[toolnexus] requestParams key "messages" is not allowed — ignored (use bodyTransform)'])
  // A console.warn replaced later is the one used next time.
  const second = await consoleWarnings(() => client.run("again", { toolkit: tk }))
  assert.equal(second.lines.length, 1)
})

test("a logger whose warn throws, rejects or is missing never fails the run; the text falls back to console.warn", async () => {
  const tk = await createToolkit({ builtins: false })
  const unhandled = []
  const onUnhandled = (e) => unhandled.push(e)
  process.on("unhandledRejection", onUnhandled)
  try {
    for (const logger of [
      {
        warn() {
          throw new Error("logger down")
        },
      },
      { warn: async () => Promise.reject(new Error("logger rejected")) },
      { warn: "not a function" },
    ]) {
      const { value: r, lines } = await consoleWarnings(async () => {
        const r = await warningClient("stream", logger).run("go", { toolkit: tk })
        await settle()
        return r
      })
      assert.equal(r.status, "done")
      assert.equal(r.text, "done stream")
      assert.deepEqual(lines, ['[toolnexus] requestParams key "stream" is not allowed — ignored (use bodyTransform)'])
    }
    // A throwing logger on a toolkit: createToolkit still resolves.
    const { value: tk2, lines } = await consoleWarnings(async () => {
      const t = await createToolkit({ builtins: false, skillsDir: "/no/such/skills-dir-tn", logger: { warn: () => { throw new Error("x") } } })
      await settle()
      return t
    })
    assert.equal(tk2.tools().length, 1, "the skill tool")
    assert.ok(lines.some((l) => l.includes("skills dir not found")), lines.join("\n"))
  } finally {
    process.off("unhandledRejection", onUnhandled)
  }
  assert.deepEqual(unhandled, [])
})

test("logger.warn is called as a method of the logger (a class-based logger works)", async () => {
  class Sink {
    lines = []
    warn(text) {
      this.lines.push(text)
    }
  }
  const logger = new Sink()
  const tk = await createToolkit({ builtins: false })
  await warningClient("tools", logger).run("go", { toolkit: tk })
  await settle()
  assert.equal(logger.lines.length, 1)
})

/** A real HTTP server on 127.0.0.1; `answer(req, body)` → `{ status, body }`. */
async function serveJson(answer) {
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      const out = answer(req, body)
      res.writeHead(out.status ?? 200, { "content-type": "application/json" })
      res.end(JSON.stringify(out.body))
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

test("a toolkit's tool warns to the toolkit's logger even inside another client's run; a plain toolkit's to the client's", async () => {
  // An A2A agent whose card names an endpoint on another origin: its first call warns about trustedOrigins.
  const endpoint = await serveJson((req, body) => {
    const rpc = JSON.parse(body)
    return { body: { jsonrpc: "2.0", id: rpc.id, result: { id: "t1", contextId: "c1", kind: "task", status: { state: "completed" }, artifacts: [{ artifactId: "a", parts: [{ kind: "text", text: "done" }] }] } } }
  })
  const home = await serveJson(() => ({ body: { name: "desk", url: endpoint.url + "/", skills: [{ id: "ask", name: "ask", description: "ask" }] } }))
  const descriptor = () => agent({ card: home.url + "/.well-known/agent-card.json", headers: { Authorization: "Bearer secret-token-1" } })
  /** A client that calls the toolkit's one agent tool, then answers. */
  const callingClient = (tk, logger) => {
    const name = tk.tools()[0].name
    return createInProcessClient({
      model: "m",
      logger,
      generate: (req) => (req.messages.some((m) => m.role === "tool") ? { content: "finished" } : { toolCalls: [{ id: "c1", name, arguments: { task: "hi" } }] }),
    })
  }
  try {
    const ofToolkit = recording()
    const ofClient = recording()
    const tk = await createToolkit({ builtins: false, agents: [descriptor()], logger: ofToolkit })
    const { value: r, lines } = await consoleWarnings(async () => {
      const r = await callingClient(tk, ofClient).run("go", { toolkit: tk })
      await settle()
      return r
    })
    assert.equal(r.text, "finished")
    assert.deepEqual(lines, [])
    assert.deepEqual(ofClient.lines, [])
    assert.equal(ofToolkit.lines.length, 1, ofToolkit.lines.join("\n"))
    assert.match(ofToolkit.lines[0], /^\[toolnexus\] A2A agent .*trustedOrigins/)

    // A toolkit without a logger: its tool's warning goes to the running client's.
    const plainTk = await createToolkit({ builtins: false, agents: [descriptor()] })
    const viaClient = recording()
    const second = await consoleWarnings(async () => {
      await callingClient(plainTk, viaClient).run("go", { toolkit: plainTk })
      await settle()
    })
    assert.deepEqual(second.lines, [])
    assert.equal(viaClient.lines.length, 1, viaClient.lines.join("\n"))
    assert.match(viaClient.lines[0], /trustedOrigins/)

    // toolkit.execute outside any run: the toolkit's logger.
    const third = recording()
    const direct = await createToolkit({ builtins: false, agents: [descriptor()], logger: third })
    const { lines: directLines } = await consoleWarnings(async () => {
      assert.equal((await direct.execute(direct.tools()[0].name, { task: "x" })).output, "done")
      await settle()
    })
    assert.deepEqual(directLines, [])
    assert.equal(third.lines.length, 1, third.lines.join("\n"))
  } finally {
    endpoint.close()
    home.close()
  }
})

test("serving: the server's warnings go to the serve options' logger, else the toolkit's, else console.warn", async () => {
  const ofToolkit = recording()
  const tk = await createToolkit({ logger: ofToolkit }) // builtins on: bash, write, edit, apply_patch
  const open = /^\[toolnexus\] serve: 0\.0\.0\.0:0 .*bash, write, edit, apply_patch/
  const one = await consoleWarnings(async () => {
    const srv = await tk.serve("0.0.0.0:0", { a2a: {} })
    await srv.stop()
    await settle()
  })
  assert.deepEqual(one.lines, [])
  assert.equal(ofToolkit.lines.length, 1, ofToolkit.lines.join("\n"))
  assert.match(ofToolkit.lines[0], open)

  const ofServer = recording()
  const two = await consoleWarnings(async () => {
    const srv = await tk.serve("0.0.0.0:0", { a2a: {}, logger: ofServer })
    await srv.stop()
    await settle()
  })
  assert.deepEqual(two.lines, [])
  assert.equal(ofToolkit.lines.length, 1, "the toolkit's logger is not told")
  assert.match(ofServer.lines[0] ?? "", open)

  // startA2AServer takes one too.
  const ofStart = recording()
  const three = await consoleWarnings(async () => {
    const srv = await startA2AServer({ addr: "0.0.0.0:0", mcp: {}, mcpTools: [tool("bash")], skills: [], runTask: async () => ({}), logger: ofStart })
    await srv.stop()
    await settle()
  })
  assert.deepEqual(three.lines, [])
  assert.equal(ofStart.lines.length, 1, ofStart.lines.join("\n"))
  assert.match(ofStart.lines[0], /^\[toolnexus\] serve: 0\.0\.0\.0:0 .*bash/)
  await tk.close()
})

test("an agent runtime's logger gets its durable store's warnings (a write the engine refused)", async () => {
  const { agents } = await import("../index.js")
  const fs = await import("node:fs")
  const os = await import("node:os")
  const path = await import("node:path")
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-logger-"))
  const store = `sqlite:${path.join(dir, "state.db")}`
  const registry = { w: { name: "w", does: "works", model: "m" } }
  const mine = recording()
  const other = recording()
  try {
    const { lines } = await consoleWarnings(async () => {
      const first = new agents.AgentRuntime({ store, registry, logger: mine })
      // Another runtime on the same store works beside it: their writes merge, nobody warns.
      const second = new agents.AgentRuntime({ store, registry, logger: other })
      second.spawn(second.root, "w")
      first.spawn(first.root, "w")
      for (let i = 0; i < 20; i++) await settle()
      assert.deepEqual([mine.lines, other.lines], [[], []])
      // The database file goes away under the first one: its next write is refused.
      fs.rmSync(dir, { recursive: true, force: true })
      first.spawn(first.root, "w")
      for (let i = 0; i < 100 && mine.lines.length === 0; i++) await settle()
    })
    assert.deepEqual(lines, [])
    assert.deepEqual(other.lines, [])
    assert.equal(mine.lines.length, 1, mine.lines.join("\n"))
    assert.match(mine.lines[0], /^\[toolnexus\] agent runtime: could not save its state \(.*\); it goes on in memory and saves again at its next transition$/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
