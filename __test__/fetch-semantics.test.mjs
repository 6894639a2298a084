// The built-in transport behaves as the TypeScript library's calls to Node's own `fetch` do:
// each case here runs our client and Node's `fetch` against the same local server, in the same
// process, and compares what each gives (the error objects, the request on the wire, the
// connections opened), rather than writing down what we believe Node does.

import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import net from "node:net"
import fs from "node:fs"
import { createClient, createToolkit } from "../index.js"
import { startLLM, oaText, closedPort } from "./support/llm.mjs"

const client = (baseUrl, extra = {}) => createClient({ baseUrl, apiKey: "k", model: "m", style: "openai", retries: 0, ...extra })
const run = async (c) => c.run("hi", { toolkit: await createToolkit({}) })

/** What user code written for the TypeScript library looks at on a rejection. */
const shape = (e) => ({
  isTypeError: e instanceof TypeError,
  name: e.name,
  message: e.message,
  cause: e.cause && {
    isError: e.cause instanceof Error,
    name: e.cause.name,
    message: e.cause.message,
    code: e.cause.code,
    errno: e.cause.errno,
    syscall: e.cause.syscall,
    address: e.cause.address,
    port: e.cause.port,
    hostname: e.cause.hostname,
    keys: Object.keys(e.cause).sort(),
  },
})

async function both(url) {
  const ours = await run(client(url.replace(/\/chat\/completions$/, ""))).then(
    () => null,
    (e) => shape(e),
  )
  const theirs = await fetch(url, { method: "POST", body: "{}" }).then(
    async (r) => (await r.text(), null),
    (e) => shape(e),
  )
  return { ours, theirs }
}

test("a refused connection rejects with the same error object as Node's fetch", async () => {
  const port = await closedPort()
  const { ours, theirs } = await both(`http://127.0.0.1:${port}/v1/chat/completions`)
  assert.equal(ours.cause.code, "ECONNREFUSED")
  assert.deepEqual(ours, theirs)
})

test("an unknown host rejects with the same error object as Node's fetch", async () => {
  const { ours, theirs } = await both("http://no-such-host.invalid/v1/chat/completions")
  assert.equal(ours.cause.code, "ENOTFOUND")
  assert.deepEqual(ours, theirs)
})

test("a reset connection rejects with the same error object as Node's fetch", async () => {
  const server = net.createServer((s) => s.once("data", () => s.resetAndDestroy()))
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  try {
    const { ours, theirs } = await both(`http://127.0.0.1:${server.address().port}/v1/chat/completions`)
    assert.equal(ours.cause.code, "ECONNRESET")
    assert.deepEqual(ours, theirs)
  } finally {
    server.close()
  }
})

test("a server that closes without answering: the same error object as Node's fetch", async () => {
  const server = net.createServer((s) => s.once("data", () => s.end()))
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  try {
    const { ours, theirs } = await both(`http://127.0.0.1:${server.address().port}/v1/chat/completions`)
    assert.equal(ours.cause.code, "UND_ERR_SOCKET")
    // Node's cause also carries the socket's addresses; the rest compares equal.
    delete theirs.cause.keys
    delete ours.cause.keys
    assert.deepEqual(ours, theirs)
  } finally {
    server.close()
  }
})

test("onError sees the transport failure as the same TypeError with its cause", async () => {
  const port = await closedPort()
  const seen = []
  const c = client(`http://127.0.0.1:${port}/v1`, {
    retries: 1,
    retryBaseMs: 1,
    onError: (info) => {
      seen.push(info)
      return "retry"
    },
  })
  await assert.rejects(run(c), (e) => e instanceof TypeError && e.cause.code === "ECONNREFUSED")
  assert.equal(seen.length, 2)
  for (const info of seen) {
    assert.ok(info.error instanceof TypeError)
    assert.equal(info.error.message, "fetch failed")
    assert.equal(info.error.cause.code, "ECONNREFUSED")
    assert.equal(info.retryable, true)
  }
})

test("a reply that is not JSON rejects with a SyntaxError, one with no message with a TypeError", async () => {
  const llm = await startLLM([{ body: "not json at all" }, { body: { choices: [] } }])
  try {
    await assert.rejects(run(client(`${llm.url}/v1`)), (e) => e instanceof SyntaxError)
    await assert.rejects(run(client(`${llm.url}/v1`)), (e) => e instanceof TypeError)
  } finally {
    await llm.close()
  }
})

test("the request head on the wire is the one Node's fetch sends", async () => {
  const seen = []
  const server = http.createServer((req, res) => {
    seen.push(req.rawHeaders)
    req.resume()
    req.on("end", () => res.end(JSON.stringify(oaText("ok").body)))
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  const base = `http://127.0.0.1:${server.address().port}/v1`
  try {
    await run(client(base, { headers: { "X-Team": "blue" } }))
    // What the TypeScript library hands to fetch for the same client.
    await fetch(`${base}/chat/completions`, {
      method: "POST",
      headers: { Authorization: "Bearer k", "Content-Type": "application/json", "X-Team": "blue" },
      body: "{}",
    }).then((r) => r.text())
    const pairs = (raw) => {
      const out = []
      for (let i = 0; i < raw.length; i += 2) out.push([raw[i].toLowerCase(), raw[i] === "content-length" ? "n" : raw[i + 1]])
      return out
    }
    assert.deepEqual(pairs(seen[0]), pairs(seen[1]))
  } finally {
    server.close()
  }
})

test("a gateway's 307 and 308 are followed with the same method and body", async () => {
  let bodies = []
  const server = http.createServer((req, res) => {
    let raw = ""
    req.on("data", (c) => (raw += c))
    req.on("end", () => {
      if (req.url.startsWith("/old")) {
        res.writeHead(req.url.includes("308") ? 308 : 307, { location: req.url.replace("/old308", "/v1").replace("/old", "/v1") })
        return res.end()
      }
      bodies.push([req.method, JSON.parse(raw).model])
      res.end(JSON.stringify(oaText("moved on").body))
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  try {
    const port = server.address().port
    assert.equal((await run(client(`http://127.0.0.1:${port}/old`))).text, "moved on")
    assert.equal((await run(client(`http://127.0.0.1:${port}/old308`))).text, "moved on")
    assert.deepEqual(bodies, [["POST", "m"], ["POST", "m"]])
  } finally {
    server.close()
  }
})

test("3,000 clients made one per request share one pool, as Node's global dispatcher does", async () => {
  let connections = 0
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => res.end(JSON.stringify(oaText("pooled").body)))
  })
  server.on("connection", () => connections++)
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  try {
    const tk = await createToolkit({})
    for (let i = 0; i < 3000; i++) {
      const out = await client(`http://127.0.0.1:${server.address().port}/v1`).run("hi", { toolkit: tk })
      assert.equal(out.text, "pooled")
    }
    assert.ok(connections <= 4, `${connections} connections`)
    if (fs.existsSync("/proc/self/fd")) {
      const fds = fs.readdirSync("/proc/self/fd").length
      assert.ok(fds < 100, `${fds} open descriptors`)
    }
  } finally {
    server.closeAllConnections()
    server.close()
  }
})
