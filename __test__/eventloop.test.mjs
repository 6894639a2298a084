// A client's runs are driven on the JS thread: its connections are sockets the event loop
// watches, its tool callbacks are called in place. These tests pin what that must not change
// for a user: when the process stays alive and when it may exit, pooled connections the
// server dropped, names that need resolving, TLS failures, worker threads, and an event loop
// that keeps turning while native tools work.

import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import https from "node:https"
import fs from "node:fs"
import path from "node:path"
import { createClient, createToolkit, defineTool } from "../index.js"
import { REPO, startLLM, oaText, oaCalls, runChild, closedPort } from "./support/llm.mjs"

const client = (url, extra = {}) => createClient({ baseUrl: `${url}/v1`, apiKey: "k", model: "m", style: "openai", ...extra })

test("a finished run leaves no handle that keeps the process alive", async () => {
  const llm = await startLLM([oaText("done")])
  try {
    // The server keeps the connection open; the child must still exit once its run is done.
    const r = await runChild(`
      const { createClient, createToolkit } = await import(ENTRY)
      const c = createClient({ baseUrl: ${JSON.stringify(llm.url + "/v1")}, apiKey: "k", model: "m", style: "openai" })
      const out = await c.run("hi", { toolkit: await createToolkit({}) })
      console.log(out.text)
    `)
    assert.equal(r.timedOut, false, r.stderr)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout.trim(), "done")
  } finally {
    await llm.close()
  }
})

test("a run waiting on a slow endpoint keeps the process alive until it is answered", async () => {
  const llm = await startLLM(async () => {
    await new Promise((r) => setTimeout(r, 400))
    return oaText("late")
  })
  try {
    const r = await runChild(`
      const { createClient, createToolkit } = await import(ENTRY)
      const c = createClient({ baseUrl: ${JSON.stringify(llm.url + "/v1")}, apiKey: "k", model: "m", style: "openai" })
      c.run("hi", { toolkit: await createToolkit({}) }).then((out) => console.log(out.text))
    `)
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout.trim(), "late")
  } finally {
    await llm.close()
  }
})

/** A keep-alive HTTP server on 127.0.0.1 answering every request with the completion "ok". */
async function okServer() {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify(oaText("ok").body))
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  return server
}

test("a kept-alive connection the server closed meanwhile is replaced by a new one", async () => {
  let connections = 0
  const server = await okServer()
  server.on("connection", () => connections++)
  try {
    const c = client(`http://127.0.0.1:${server.address().port}`)
    const tk = await createToolkit({})
    assert.equal((await c.run("a", { toolkit: tk })).text, "ok")
    assert.equal((await c.run("b", { toolkit: tk })).text, "ok")
    assert.equal(connections, 1, "the second run reused the first connection")
    // The server lets the idle connection go; the client only learns of it on its next run.
    server.closeIdleConnections()
    await new Promise((r) => setTimeout(r, 50))
    assert.equal((await c.run("c", { toolkit: tk })).text, "ok")
    assert.equal(connections, 2)
  } finally {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  }
})

test("an idle pooled connection the server closed costs no CPU while the process waits", async () => {
  const server = await okServer()
  try {
    const c = client(`http://127.0.0.1:${server.address().port}`)
    const tk = await createToolkit({})
    assert.equal((await c.run("a", { toolkit: tk })).text, "ok")
    // The pooled socket now reads as ended on every turn of the loop until someone stops
    // watching it; the process must go quiet instead of spinning on it.
    server.closeIdleConnections()
    await new Promise((r) => setTimeout(r, 50))
    const before = process.cpuUsage()
    await new Promise((r) => setTimeout(r, 400))
    const spent = process.cpuUsage(before)
    const ms = (spent.user + spent.system) / 1000
    assert.ok(ms < 100, `${ms.toFixed(1)} ms of CPU in 400 ms of waiting`)
    assert.equal((await c.run("b", { toolkit: tk })).text, "ok")
  } finally {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  }
})

test("an endpoint named by host name is resolved and reached", async () => {
  const llm = await startLLM([oaText("by name")])
  try {
    const out = await client(`http://localhost:${llm.port}`).run("hi", { toolkit: await createToolkit({}) })
    assert.equal(out.text, "by name")
    assert.equal(llm.requests[0].headers.host, `localhost:${llm.port}`)
  } finally {
    await llm.close()
  }
})

test("nothing listening: the run rejects with fetch's TypeError and the connect error as its cause", async () => {
  const port = await closedPort()
  await assert.rejects(client(`http://127.0.0.1:${port}`, { retries: 0 }).run("hi", { toolkit: await createToolkit({}) }), (e) => {
    assert.ok(e instanceof TypeError)
    assert.equal(e.message, "fetch failed")
    assert.equal(e.cause.code, "ECONNREFUSED")
    assert.equal(e.cause.message, `connect ECONNREFUSED 127.0.0.1:${port}`)
    return true
  })
})

/** An https endpoint on 127.0.0.1 with the test certificate (signed by the test CA in support/tls). */
async function httpsLLM(text) {
  const dir = path.join(REPO, "__test__", "support", "tls")
  const server = https.createServer(
    { key: fs.readFileSync(path.join(dir, "localhost.key")), cert: fs.readFileSync(path.join(dir, "localhost.crt")) },
    (req, res) => {
      req.resume()
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify(oaText(text).body))
      })
    },
  )
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `https://localhost:${server.address().port}`,
    ca: path.join(dir, "ca.crt"),
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(r))
    },
  }
}

test("https: a certificate from no trusted authority fails the handshake with a clear error", async () => {
  const llm = await httpsLLM("never")
  try {
    await assert.rejects(client(llm.url, { retries: 0 }).run("hi", { toolkit: await createToolkit({}) }), (e) => {
      assert.ok(e instanceof TypeError)
      assert.equal(e.message, "fetch failed")
      assert.match(e.cause.message, /certificate/i)
      return true
    })
  } finally {
    await llm.close()
  }
})

test("https: NODE_EXTRA_CA_CERTS is trusted, as Node's fetch trusts it", async () => {
  const llm = await httpsLLM("over tls")
  try {
    const r = await runChild(
      `
      const { createClient, createToolkit } = await import(ENTRY)
      const c = createClient({ baseUrl: ${JSON.stringify(llm.url + "/v1")}, apiKey: "k", model: "m", style: "openai" })
      const tk = await createToolkit({})
      for (let i = 0; i < 2; i++) console.log((await c.run("hi", { toolkit: tk })).text)
    `,
      { env: { ...process.env, NODE_EXTRA_CA_CERTS: llm.ca } },
    )
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout.trim(), "over tls\nover tls")
  } finally {
    await llm.close()
  }
})

test("the event loop keeps turning while a native tool works", async () => {
  // bash is one of the core's own tools: its work must not hold up the JS thread.
  const llm = await startLLM([oaCalls([{ id: "c1", name: "bash", args: { command: "sleep 1" } }]), oaText("slept")])
  try {
    let ticks = 0
    const timer = setInterval(() => ticks++, 50)
    const out = await client(llm.url).run("sleep", { toolkit: await createToolkit({}) })
    clearInterval(timer)
    assert.equal(out.text, "slept")
    assert.ok(ticks >= 8, `the interval ticked ${ticks} times during a one-second tool`)
  } finally {
    await llm.close()
  }
})

test("tools answering at once and later interleave across runs in flight on one connection pool", async () => {
  const llm = await startLLM((req) => {
    const tool = req.json.messages.find((m) => m.role === "tool")
    if (tool) return oaText(`got ${tool.content}`)
    const n = Number(req.json.messages.at(-1).content)
    return oaCalls([{ id: `c${n}`, name: n % 2 ? "late" : "now", args: { n } }])
  })
  try {
    const tk = await createToolkit({
      extraTools: [
        defineTool({ name: "now", description: "", run: ({ n }) => `now ${n}` }),
        defineTool({ name: "late", description: "", run: async ({ n }) => { await new Promise((r) => setTimeout(r, 5)); return `late ${n}` } }),
      ],
    })
    const c = client(llm.url)
    const outs = await Promise.all(Array.from({ length: 40 }, (_, n) => c.run(String(n), { toolkit: tk })))
    outs.forEach((o, n) => assert.equal(o.text, `got ${n % 2 ? "late" : "now"} ${n}`))
  } finally {
    await llm.close()
  }
})

/**
 * Start a worker thread that builds a client `c` for `url` and a toolkit `tk`, then runs `body`
 * (which may use `parentPort` and `workerData`). Resolves the worker and its first message.
 */
async function startWorker(url, body, data = {}) {
  const { Worker } = await import("node:worker_threads")
  const source = `
    const { parentPort, workerData } = require("node:worker_threads")
    const { createClient, createToolkit } = require(workerData.entry)
    ;(async () => {
      const c = createClient({ baseUrl: workerData.url, apiKey: "k", model: "m", style: "openai" })
      const tk = await createToolkit({})
      ${body}
    })()
  `
  const w = new Worker(source, { eval: true, workerData: { entry: path.join(REPO, "index.js"), url: `${url}/v1`, ...data } })
  const message = await new Promise((resolve, reject) => {
    w.once("message", resolve)
    w.once("error", reject)
  })
  return { worker: w, message }
}

test("worker threads each drive their own runs over their own sockets", async () => {
  const llm = await startLLM((req) => oaText(`hello ${req.json.messages.at(-1).content}`))
  try {
    const body = `
      const texts = []
      for (let i = 0; i < 5; i++) texts.push((await c.run(workerData.tag + i, { toolkit: tk })).text)
      parentPort.postMessage(texts)
    `
    const [a, b] = (await Promise.all(["a", "b"].map((tag) => startWorker(llm.url, body, { tag })))).map((w) => w.message)
    assert.deepEqual(a, ["hello a0", "hello a1", "hello a2", "hello a3", "hello a4"])
    assert.deepEqual(b, ["hello b0", "hello b1", "hello b2", "hello b3", "hello b4"])
    // The main thread's client still works after the workers are gone.
    assert.equal((await client(llm.url).run("main", { toolkit: await createToolkit({}) })).text, "hello main")
  } finally {
    await llm.close()
  }
})

test("a worker ended while its run waits on the endpoint takes its sockets down cleanly", async () => {
  const llm = await startLLM([{ hang: true }])
  try {
    for (let i = 0; i < 3; i++) {
      const { worker: w } = await startWorker(llm.url, `c.run("hang", { toolkit: tk }).catch(() => {}); parentPort.postMessage("started")`)
      // Wait until the request is on the wire, then end the worker under it.
      while (llm.requests.length < i + 1) await new Promise((r) => setTimeout(r, 5))
      assert.equal(await w.terminate(), 1)
    }
    assert.equal((await client(llm.url, { timeoutMs: 100, retries: 0 }).run("x", { toolkit: await createToolkit({}) }).catch((e) => e.message)), "run timeout after 100ms")
  } finally {
    await llm.close()
  }
})

test("a request and a reply of several megabytes cross intact", async () => {
  // Larger than a socket's buffers both ways: the writes and reads wait on the loop in between.
  const big = "x".repeat(3 * 1024 * 1024)
  const llm = await startLLM((req) => oaText(`${req.json.messages.at(-1).content.length}:${big}`))
  try {
    const out = await client(llm.url).run(big + "!", { toolkit: await createToolkit({}) })
    assert.equal(out.text, `${big.length + 1}:${big}`)
  } finally {
    await llm.close()
  }
})
