// The addon must never take its host down, and must never keep it up when the user's own code
// would have let it end. Every case runs in a child process, because what is checked is how a
// process ends: with the exit code asked for, never by a signal, and at the moment plain Node
// would end it.

import test from "node:test"
import assert from "node:assert/strict"
import { spawn } from "node:child_process"
import fs from "node:fs"
import path from "node:path"
import { REPO, ENTRY_URL, startLLM, oaText, oaCalls, sse, oaDeltaText, SSE_DONE, runChild } from "./support/llm.mjs"

const ENTRY_PATH = path.join(REPO, "index.js")

/** A child that ended on its own, with `code`, and was not killed by a signal or the timeout. */
function endedWith(r, code) {
  const detail = `signal=${r.signal} timedOut=${r.timedOut}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`
  assert.equal(r.timedOut, false, `the child did not end by itself\n${detail}`)
  assert.equal(r.signal, null, `the child died from a signal\n${detail}`)
  assert.equal(r.code, code, detail)
  assert.doesNotMatch(r.stderr, /panicked|fatal runtime error|Thread Local Storage/, detail)
}

// ---- worker threads -------------------------------------------------------------------------

const WORKERS = `
  import { Worker } from "node:worker_threads"
  const entry = ${JSON.stringify(ENTRY_PATH)}
  const inWorker = (body) => new Promise((resolve, reject) => {
    const w = new Worker(\`const t = require(\${JSON.stringify(entry)}); const { parentPort } = require("node:worker_threads"); (async () => { \${body} })().then(() => parentPort.postMessage("done"), (e) => { console.error(e); process.exit(3) })\`, { eval: true, execArgv: [] })
    w.on("error", reject)
    w.on("exit", resolve)
  })
`

test("a worker that was the only one to load the addon ends, then a second worker loads it", async () => {
  const r = await runChild(`${WORKERS}
    console.log("first", await inWorker(""))
    console.log("second", await inWorker("await t.createToolkit({ builtins: { disabled: true } })"))
  `)
  endedWith(r, 0)
  assert.equal(r.stdout, "first 0\nsecond 0\n")
})

test("the main thread loads the addon after the only worker that had it ended", async () => {
  const r = await runChild(`${WORKERS}
    await inWorker("await t.createToolkit({ builtins: { disabled: true } })")
    const t = await import(ENTRY)
    const tk = await t.createToolkit({ builtins: { disabled: true }, extraTools: [t.defineTool({ name: "x", description: "x", run: () => "ok" })] })
    console.log((await tk.execute("x", {})).output)
  `)
  endedWith(r, 0)
  assert.equal(r.stdout, "ok\n")
})

test("two workers hold the addon; the second builds a toolkit after the first ended", async () => {
  const r = await runChild(`${WORKERS}
    const second = new Worker(\`
      const t = require(\${JSON.stringify(entry)})
      const { parentPort } = require("node:worker_threads")
      parentPort.once("message", async () => {
        await t.createToolkit({ builtins: { disabled: true } })
        parentPort.postMessage("built")
        parentPort.close()
      })
      parentPort.postMessage("loaded")
    \`, { eval: true, execArgv: [] })
    await new Promise((r) => second.once("message", r))
    await inWorker("await t.createToolkit({ builtins: { disabled: true } })")
    second.postMessage("go")
    console.log(await new Promise((r) => second.once("message", r)))
  `)
  endedWith(r, 0)
  assert.equal(r.stdout, "built\n")
})

test("workers load, run and end one after another many times", async () => {
  const llm = await startLLM([oaText("hi")])
  try {
    const r = await runChild(`${WORKERS}
      for (let i = 0; i < 12; i++) {
        const code = await inWorker(\`
          const c = t.createClient({ baseUrl: ${JSON.stringify(llm.url + "/v1")}, apiKey: "k", model: "m", style: "openai" })
          const out = await c.run("x", { toolkit: await t.createToolkit({ builtins: { disabled: true } }) })
          if (out.text !== "hi") process.exit(4)
        \`)
        if (code !== 0) { console.log("worker", i, "exited", code); process.exit(1) }
      }
      console.log("all")
    `, { timeoutMs: 30_000 })
    endedWith(r, 0)
    assert.equal(r.stdout, "all\n")
  } finally {
    await llm.close()
  }
})

// ---- process.exit while a run waits on JavaScript -------------------------------------------

/** A child with a scripted endpoint that asks for tool `wait` once, then answers "done". */
async function withToolEndpoint(fn) {
  const llm = await startLLM((req) => (req.json.messages.some((m) => m.role === "tool") ? oaText("done") : oaCalls([{ id: "c1", name: "wait", args: {} }])))
  try {
    return await fn(`${llm.url}/v1`)
  } finally {
    await llm.close()
  }
}

const SETUP = (url, clientExtra = "", toolRun = `() => new Promise(() => {})`) => `
  const t = await import(ENTRY)
  const tool = t.defineTool({ name: "wait", description: "waits", run: ${toolRun} })
  const toolkit = await t.createToolkit({ builtins: { disabled: true }, extraTools: [tool] })
  const c = t.createClient({ baseUrl: ${JSON.stringify(url)}, apiKey: "k", model: "m", style: "openai", ${clientExtra} })
`

const EXIT_SOON = `(setTimeout(() => process.exit(7), 20), new Promise(() => {}))`
const SUSPEND = `(args, ctx) => (ctx?.answer ? "ok" : t.pending({ kind: "approval", prompt: "go?" }))`

const exitCases = {
  "an async tool": ["", `() => ${EXIT_SOON}`],
  "waitFor": [`waitFor: () => ${EXIT_SOON}`, SUSPEND],
  "a beforeLLM hook": [`hooks: { beforeLLM: () => ${EXIT_SOON} }`, `() => "ok"`],
  "an afterTool hook": [`hooks: { afterTool: () => ${EXIT_SOON} }`, `() => "ok"`],
  "onMetric": [`onMetric: () => ${EXIT_SOON}`, `() => "ok"`],
  "a user fetch": [`fetch: () => ${EXIT_SOON}`, `() => "ok"`],
}

for (const [what, [clientExtra, toolRun]] of Object.entries(exitCases)) {
  test(`process.exit while a run awaits ${what} ends with the code asked for`, async () => {
    await withToolEndpoint(async (url) => {
      const r = await runChild(`${SETUP(url, clientExtra, toolRun)}
        await c.run("go", { toolkit })
        console.log("not reached")
      `)
      endedWith(r, 7)
      assert.equal(r.stdout, "")
    })
  })
}

test("an uncaught exception while a run awaits a tool ends the process as Node does (code 1)", async () => {
  await withToolEndpoint(async (url) => {
    const r = await runChild(`${SETUP(url, "", `() => (setTimeout(() => { throw new Error("boom in a timer") }, 20), new Promise(() => {}))`)}
      await c.run("go", { toolkit })
    `)
    endedWith(r, 1)
    assert.match(r.stderr, /boom in a timer/)
  })
})

test("process.exit with a stream iterator abandoned mid-run ends with the code asked for", async () => {
  const llm = await startLLM([{ sse: [sse(oaDeltaText("a")), sse(oaDeltaText("b")), sse(oaDeltaText("c")), SSE_DONE] }])
  try {
    const r = await runChild(`${SETUP(llm.url + "/v1")}
      const it = c.stream("go", { toolkit })[Symbol.asyncIterator]()
      await it.next()
      setTimeout(() => process.exit(9), 20)
    `)
    endedWith(r, 9)
  } finally {
    await llm.close()
  }
})

test("a CLI's SIGINT handler calling process.exit(130) while a waitFor prompt is open", async () => {
  await withToolEndpoint(async (url) => {
    const source = `${SETUP(url, `waitFor: () => { console.log("prompt open"); return new Promise(() => {}) }`, SUSPEND)}
      process.on("SIGINT", () => process.exit(130))
      setInterval(() => {}, 1000) // a CLI waiting for input
      await c.run("go", { toolkit })
    `.replaceAll("ENTRY", JSON.stringify(ENTRY_URL))
    const child = spawn(process.execPath, ["--input-type=module", "-e", source], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stderr.on("data", (d) => (stderr += d))
    const ready = new Promise((resolve) =>
      child.stdout.on("data", (d) => {
        stdout += d
        if (stdout.includes("prompt open")) resolve()
      }),
    )
    const killer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    await ready
    child.kill("SIGINT")
    const [code, signal] = await new Promise((resolve) => child.on("exit", (c, s) => resolve([c, s])))
    clearTimeout(killer)
    endedWith({ code, signal, stdout, stderr, timedOut: false }, 130)
  })
})

// ---- a run that can never finish does not keep Node alive -----------------------------------

const neverCases = {
  "a tool whose Promise never settles": ["", `() => new Promise(() => {})`],
  "a hook whose Promise never settles": [`hooks: { beforeTool: () => new Promise(() => {}) }`, `() => "ok"`],
  "a waitFor whose Promise never settles": [`waitFor: () => new Promise(() => {})`, SUSPEND],
  "a tool that never settles, under timeoutMs (an unreferenced deadline, as in the reference)": [`timeoutMs: 60000`, `() => new Promise(() => {})`],
}

for (const [what, [clientExtra, toolRun]] of Object.entries(neverCases)) {
  test(`the process exits when nothing but ${what} is left`, async () => {
    await withToolEndpoint(async (url) => {
      const r = await runChild(`${SETUP(url, clientExtra, toolRun)}
        c.run("go", { toolkit }).then(() => console.log("settled"), () => console.log("rejected"))
        console.log("started")
      `)
      endedWith(r, 0)
      assert.equal(r.stdout, "started\n")
    })
  })
}

test("a top-level await on such a run ends as Node ends an unsettled top-level await (13)", async () => {
  await withToolEndpoint(async (url) => {
    const r = await runChild(`${SETUP(url)}
      await c.run("go", { toolkit })
    `)
    endedWith(r, 13)
  })
})

test("a stream iterator taken once and dropped lets the process exit", async () => {
  const llm = await startLLM([{ sse: [sse(oaDeltaText("a")), sse(oaDeltaText("b")), SSE_DONE] }])
  try {
    const r = await runChild(`${SETUP(llm.url + "/v1")}
      const it = c.stream("go", { toolkit })[Symbol.asyncIterator]()
      console.log((await it.next()).done)
    `)
    endedWith(r, 0)
    assert.equal(r.stdout, "false\n")
  } finally {
    await llm.close()
  }
})

// The other side of the rule: work Node cannot see still keeps the process alive.

test("a retry's back-off keeps the process alive until the run finishes", async () => {
  const llm = await startLLM([{ status: 503, body: "busy" }, oaText("after retry")])
  try {
    const r = await runChild(`${SETUP(llm.url + "/v1", "retries: 2, retryBaseMs: 300")}
      c.run("go", { toolkit }).then((out) => console.log(out.text))
    `)
    endedWith(r, 0)
    assert.equal(r.stdout, "after retry\n")
  } finally {
    await llm.close()
  }
})

test("a built-in tool working off the JS thread keeps the process alive until the run finishes", async () => {
  const llm = await startLLM((req) =>
    req.json.messages.some((m) => m.role === "tool") ? oaText("slept") : oaCalls([{ id: "c1", name: "bash", args: { command: "sleep 0.4; echo ok" } }]),
  )
  try {
    const r = await runChild(`
      const t = await import(ENTRY)
      const toolkit = await t.createToolkit({})
      const c = t.createClient({ baseUrl: ${JSON.stringify(llm.url + "/v1")}, apiKey: "k", model: "m", style: "openai" })
      c.run("go", { toolkit }).then((out) => console.log(out.text, out.messages.find((m) => m.role === "tool").content.trim()))
    `)
    endedWith(r, 0)
    assert.equal(r.stdout, "slept ok\n")
  } finally {
    await llm.close()
  }
})

test("toolkit.execute of a native tool keeps the process alive until it answers", async () => {
  const r = await runChild(`
    const t = await import(ENTRY)
    const toolkit = await t.createToolkit({})
    toolkit.execute("bash", { command: "sleep 0.3; echo done" }).then((res) => console.log(res.output.trim()))
  `)
  endedWith(r, 0)
  assert.equal(r.stdout, "done\n")
})

test("an abort of a run that waits on a Promise that never settles still rejects it before the process ends", async () => {
  await withToolEndpoint(async (url) => {
    const r = await runChild(`${SETUP(url)}
      const ctrl = new AbortController()
      setTimeout(() => ctrl.abort(new Error("stop now")), 50)
      try {
        await c.run("go", { toolkit, signal: ctrl.signal })
      } catch (e) {
        console.log("rejected:", e.message)
      }
    `)
    endedWith(r, 0)
    assert.equal(r.stdout, "rejected: stop now\n")
  })
})

test("a run started in a worker with nothing else to keep it alive completes", async () => {
  await withToolEndpoint(async (url) => {
    const r = await runChild(`${WORKERS}
      console.log(await inWorker(\`
        const tool = t.defineTool({ name: "wait", description: "w", run: () => "ok" })
        const toolkit = await t.createToolkit({ builtins: { disabled: true }, extraTools: [tool] })
        const c = t.createClient({ baseUrl: ${JSON.stringify(url)}, apiKey: "k", model: "m", style: "openai" })
        const out = await c.run("go", { toolkit })
        if (out.text !== "done") process.exit(5)
      \`))
    `)
    endedWith(r, 0)
    assert.equal(r.stdout, "0\n")
  })
})

test("the addon loads in a process with no static TLS left for dlopen'ed libraries", async () => {
  // glibc reserves a small surplus of static TLS at start for libraries loaded later that need it
  // (initial-exec thread-locals). Other native modules may have used it up; the addon must not
  // need any, or it fails to load ("cannot allocate memory in static TLS block").
  const out = await runChild(
    `const { createToolkit } = await import(ENTRY)
     const tk = await createToolkit({ builtins: false })
     console.log(tk.tools().length)`,
    { env: { ...process.env, GLIBC_TUNABLES: "glibc.rtld.optional_static_tls=0" } },
  )
  assert.equal(out.code, 0, out.stderr)
  assert.equal(out.stdout.trim(), "0")
})

/** The system's transparent huge page mode (`always`, `madvise`, `never`), or null off Linux. */
function hugePageMode() {
  try {
    return /\[(\w+)\]/.exec(fs.readFileSync("/sys/kernel/mm/transparent_hugepage/enabled", "utf8"))?.[1] ?? null
  } catch {
    return null
  }
}

const thp = hugePageMode()
test(
  "the addon's allocator asks for no transparent huge pages: after a toolkit, a run and its tool calls the process holds none",
  { skip: thp === "madvise" ? false : `only telling where huge pages are given on request (transparent_hugepage is ${thp ?? "absent"})` },
  async (t) => {
    // In `madvise` mode a region gets huge pages only when its owner asks (MADV_HUGEPAGE). Node
    // asks for none; mimalloc did for its heap, so each first touch of 2 MiB zeroed a whole page.
    const llm = await startLLM((req) => (req.json.messages.some((m) => m.role === "tool") ? oaText("done") : oaCalls([{ id: "c1", name: "echo", args: { text: "x".repeat(100_000) } }])))
    t.after(() => llm.close())
    const env = { ...process.env }
    for (const k of Object.keys(env)) if (k.startsWith("MIMALLOC_")) delete env[k]
    const out = await runChild(
      `import fs from "node:fs"
       const t = await import(ENTRY)
       const echo = t.defineTool({ name: "echo", description: "echo", inputSchema: { type: "object", properties: { text: { type: "string" } } }, run: (a) => a.text })
       const toolkit = await t.createToolkit({ builtins: false, extraTools: [echo] })
       const c = t.createClient({ baseUrl: ${JSON.stringify(llm.url)}, apiKey: "k", model: "m", style: "openai" })
       for (let i = 0; i < 20; i++) if ((await c.run("go", { toolkit })).text !== "done") process.exit(5)
       console.log(/AnonHugePages:\\s+(\\d+) kB/.exec(fs.readFileSync("/proc/self/smaps_rollup", "utf8"))[1])`,
      { env },
    )
    assert.equal(out.code, 0, out.stderr)
    assert.equal(out.stdout.trim(), "0", "kB of anonymous huge pages in the process")
  },
)

test("a tool called deep in nested runs still runs: JavaScript is not called in place where V8 could run out of stack", async () => {
  // An agent runtime whose child suspends and is answered by its parent's waitFor, resumed in
  // the middle of the parent's run: runs nested in runs, polled on the JS thread. The child
  // process gets a smaller V8 stack than Node's default, as a heavier build or deeper nesting
  // would leave; the tool must still be called (and not fail with a RangeError V8 cannot name).
  const r = await runChild(
    `
    import { agents, defineTool, pending } from ENTRY
    const gate = defineTool({ name: "gate", run: (_a, ctx) => (ctx?.answer?.ok ? "opened" : pending({ kind: "approval", prompt: "open?" })) })
    const reply = (message) => new Response(JSON.stringify({ choices: [{ message }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }), { headers: { "content-type": "application/json" } })
    const call = (id, name, args) => ({ content: null, tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }] })
    const fetch = async (_url, init) => {
      const body = JSON.parse(String(init.body))
      const results = body.messages.filter((m) => m.role === "tool")
      if (body.model === "lead") return reply(results.length ? { content: "lead: " + results.at(-1).content } : call("l1", "task", { agent: "worker", prompt: "open the gate" }))
      return reply(results.length ? { content: "worker: " + results[0].content } : call("w1", "gate", {}))
    }
    const rt = new agents.AgentRuntime({
      fetch,
      registry: {
        lead: { name: "lead", does: "approves", model: "lead", team: ["worker"], waitFor: async (req) => ({ id: req.id, ok: true }) },
        worker: { name: "worker", does: "opens gates", model: "worker", tools: [gate] },
      },
    })
    const h = rt.spawn(rt.root, "lead")
    rt.wake(h, "go")
    const out = await rt.wait(h)
    console.log(JSON.stringify(out.text))
    await rt.close(rt.root)
    `,
    { nodeArgs: ["--stack-size=640"], timeoutMs: 30_000 },
  )
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), JSON.stringify("lead: worker: opened"))
})
