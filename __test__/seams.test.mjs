// The user's own seams for LLM requests (SPEC §8: no `fetch` option means the global fetch).
// A test suite that replaces `globalThis.fetch` (a stub, msw, nock) or installs an undici global
// dispatcher (MockAgent, ProxyAgent), or a Node told to use the environment's proxy, must see
// every LLM request, whether it was set up before or after the package was imported. With
// none of them in place, runs keep the built-in HTTP (seen through Node's diagnostics channel,
// which only Node's own fetch publishes on).
// Each case runs in a fresh Node process, so no seam leaks from one case into the next.

import { test } from "node:test"
import assert from "node:assert/strict"

import { runChild } from "./support/llm.mjs"

// The endpoint every case asks for. Nothing resolves it: a request that reaches the network
// instead of the seam fails with ENOTFOUND.
const BASE = "http://llm.invalid/v1"

// The scripted model, as each seam answers it: a tool call first, then text once a tool result
// is in the transcript. `body` is the request's JSON text.
const MODEL = `
const reply = (body) => {
  const req = JSON.parse(body)
  const saw = req.messages.some((m) => m.role === "tool")
  const message = saw
    ? { role: "assistant", content: "done: " + req.messages.find((m) => m.role === "tool").content }
    : { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } }] }
  return { choices: [{ index: 0, message, finish_reason: saw ? "stop" : "tool_calls" }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }
}
`

// One run through the package, printed as JSON: what the run answered, and how many requests
// Node's own fetch made (the diagnostics channel only Node's fetch publishes on).
const RUN = `
const dc = await import("node:diagnostics_channel")
let nodeFetches = 0
dc.subscribe("undici:request:create", () => nodeFetches++)
const { createClient, createToolkit, defineTool } = tn
const add = defineTool({ name: "add", description: "add", inputSchema: { type: "object" }, run: ({ a, b }) => String(a + b) })
const toolkit = await createToolkit({ extraTools: [add], builtins: { disabled: true } })
const client = createClient({ baseUrl: BASE, model: "m", apiKey: "k" })
let out
try {
  const r = await client.run("add 2 and 3", { toolkit })
  out = { status: r.status, text: r.text, usage: r.usage }
} catch (e) {
  out = { error: e.message, code: e.cause?.code }
}
out.nodeFetches = nodeFetches
out.seen = seen
console.log(JSON.stringify(out))
`

/** Run `setup` (which defines `seen`, the requests the seam saw) before or after the import. */
async function scenario(setup, order, { env, teardown = "" } = {}) {
  const load = `const tn = await import(ENTRY)`
  const source = [
    `const BASE = ${JSON.stringify(BASE)}`,
    MODEL,
    order === "before" ? setup : load,
    order === "before" ? load : setup,
    RUN,
    teardown,
  ].join("\n")
  const r = await runChild(source, { env: env ?? process.env, timeoutMs: 20_000 })
  assert.equal(r.code, 0, `child failed:\n${r.stderr}`)
  const line = r.stdout.trim().split("\n").pop()
  return JSON.parse(line)
}

function assertAnswered(out) {
  assert.equal(out.error, undefined, `the run failed: ${out.error} (${out.code})`)
  assert.equal(out.status, "done")
  assert.equal(out.text, "done: 5")
  assert.deepEqual(out.usage, { promptTokens: 6, completionTokens: 4, totalTokens: 10 })
}

const STUB = `
const seen = []
globalThis.fetch = async (url, init) => {
  seen.push({ url: String(url), method: init.method, headers: init.headers, hasSignal: init.signal instanceof AbortSignal })
  // The shape the reference reads: \`ok\` and \`json()\`, nothing else.
  const body = reply(init.body)
  return { ok: true, json: async () => body }
}
`

for (const order of ["before", "after"]) {
  test(`a stubbed globalThis.fetch (set ${order} the import) answers every LLM request`, async () => {
    const out = await scenario(STUB, order)
    assertAnswered(out)
    assert.equal(out.seen.length, 2)
    // What the reference hands its fetch: the URL, POST, the headers as one object, a signal.
    assert.deepEqual(out.seen[0], {
      url: `${BASE}/chat/completions`,
      method: "POST",
      headers: { Authorization: "Bearer k", "Content-Type": "application/json" },
      hasSignal: true,
    })
    assert.equal(out.nodeFetches, 0)
  })

  test(`msw's setupServer (set up ${order} the import) answers every LLM request`, async () => {
    const setup = `
const { setupServer } = await import("msw/node")
const { http, HttpResponse } = await import("msw")
const seen = []
const server = setupServer(http.post(BASE + "/chat/completions", async ({ request }) => {
  seen.push(request.headers.get("authorization"))
  return HttpResponse.json(reply(await request.text()))
}))
server.listen({ onUnhandledRequest: "error" })
`
    const out = await scenario(setup, order, { teardown: "server.close()" })
    assertAnswered(out)
    assert.deepEqual(out.seen, ["Bearer k", "Bearer k"])
  })

  test(`nock (set up ${order} the import) answers every LLM request`, async () => {
    const setup = `
const nock = (await import("nock")).default
nock.disableNetConnect()
const seen = []
nock("http://llm.invalid").post("/v1/chat/completions").times(2).reply(200, function (uri, body) {
  seen.push(this.req.headers.authorization)
  return reply(typeof body === "string" ? body : JSON.stringify(body))
})
`
    const out = await scenario(setup, order, { teardown: "nock.cleanAll(); nock.enableNetConnect()" })
    assertAnswered(out)
    assert.deepEqual(out.seen, ["Bearer k", "Bearer k"])
  })

  test(`undici's MockAgent as the global dispatcher (set ${order} the import) answers every LLM request`, async () => {
    const setup = `
const { MockAgent, setGlobalDispatcher } = await import("undici")
const agent = new MockAgent()
agent.disableNetConnect()
setGlobalDispatcher(agent)
const seen = []
agent.get("http://llm.invalid").intercept({ path: "/v1/chat/completions", method: "POST" }).reply(200, (opts) => {
  seen.push(opts.headers.authorization ?? opts.headers.Authorization)
  return reply(opts.body)
}, { headers: { "content-type": "application/json" } }).times(2)
`
    const out = await scenario(setup, order)
    assertAnswered(out)
    assert.deepEqual(out.seen, ["Bearer k", "Bearer k"])
  })
}

// A forward proxy on 127.0.0.1 (CONNECT tunnels, as undici's ProxyAgent and Node's env proxy
// open them), in front of a real scripted endpoint; the endpoint's name only the proxy knows.
const PROXIED = `
const http = await import("node:http")
const net = await import("node:net")
const endpoint = http.createServer((req, res) => {
  let body = ""
  req.on("data", (c) => (body += c))
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify(reply(body)))
  })
})
await new Promise((r) => endpoint.listen(0, "127.0.0.1", r))
const seen = []
const proxy = http.createServer((req, res) => {
  seen.push("GET " + req.url)
  res.writeHead(502)
  res.end()
})
proxy.on("connect", (req, socket, head) => {
  seen.push("CONNECT " + req.url)
  const upstream = net.connect(endpoint.address().port, "127.0.0.1", () => {
    socket.write("HTTP/1.1 200 Connection Established\\r\\n\\r\\n")
    upstream.write(head)
    upstream.pipe(socket)
    socket.pipe(upstream)
  })
  upstream.on("error", () => socket.destroy())
  socket.on("error", () => upstream.destroy())
})
await new Promise((r) => proxy.listen(0, "127.0.0.1", r))
const PROXY = "http://127.0.0.1:" + proxy.address().port
`

test("an undici ProxyAgent installed as the global dispatcher carries every LLM request", async () => {
  const setup = `${PROXIED}
const { ProxyAgent, setGlobalDispatcher } = await import("undici")
setGlobalDispatcher(new ProxyAgent(PROXY))
`
  const out = await scenario(setup, "after", { teardown: "proxy.close(); endpoint.close(); process.exit(0)" })
  assertAnswered(out)
  // One tunnel per connection: the two requests share one, or open one each.
  assert.ok(out.seen.length >= 1 && out.seen.length <= 2, JSON.stringify(out.seen))
  for (const line of out.seen) assert.equal(line, "CONNECT llm.invalid:80")
})

// Node reads NODE_USE_ENV_PROXY from 22.21 / 24.5 on; an older Node ignores it, and so does its
// fetch: then the run still goes through globalThis.fetch and fails as Node's fetch fails.
const [major, minor] = process.versions.node.split(".").map(Number)
const nodeHonoursEnvProxy = major > 24 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21)

test("NODE_USE_ENV_PROXY sends LLM requests through globalThis.fetch, as Node's fetch would go", async () => {
  // The proxy is started by the child itself; the env proxy points at a port chosen here.
  const net = await import("node:net")
  const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port
      s.close(() => resolve(p))
    })
  })
  const setup = `${PROXIED.replace('proxy.listen(0, "127.0.0.1", r)', `proxy.listen(${port}, "127.0.0.1", r)`)}`
  const env = { ...process.env, NODE_USE_ENV_PROXY: "1", HTTP_PROXY: `http://127.0.0.1:${port}`, NO_PROXY: "" }
  const out = await scenario(setup, "before", { env, teardown: "proxy.close(); endpoint.close(); process.exit(0)" })
  // What Node's own fetch does in this process decides the outcome: compare with it.
  if (nodeHonoursEnvProxy) {
    assertAnswered(out)
    assert.ok(out.seen.length >= 1, "the proxy saw the requests")
  } else {
    assert.equal(out.code, "ENOTFOUND")
    assert.ok(out.nodeFetches >= 1, "Node's own fetch made the request")
  }
})

test("with no seam in place, runs keep the built-in HTTP, also after Node's fetch made its default agent", async () => {
  const setup = `
const seen = []
// Node's own fetch once: it installs its default dispatcher, which is no seam of the user's.
await fetch("http://127.0.0.1:9/", { method: "POST", body: "{}" }).catch(() => {})
`
  const out = await scenario(setup, "after")
  // BASE resolves nowhere: the run fails the way the built-in HTTP fails, and Node's fetch
  // made no request for it.
  assert.equal(out.code, "ENOTFOUND")
  assert.equal(out.nodeFetches, 0)
})

test("a fetch option still wins over a replaced globalThis.fetch", async () => {
  const setup = `${STUB}
const mine = []
const realStub = globalThis.fetch
`
  const run = `
const tn = await import(ENTRY)
const { createClient, createToolkit } = tn
const toolkit = await createToolkit({ builtins: { disabled: true } })
const client = createClient({ baseUrl: BASE, model: "m", apiKey: "k", fetch: async (url, init) => {
  mine.push(String(url))
  return new Response(JSON.stringify({ choices: [{ message: { role: "assistant", content: "mine" } }] }), { status: 200 })
} })
const r = await client.run("hi", { toolkit })
console.log(JSON.stringify({ text: r.text, mine: mine.length, seen: seen.length }))
`
  const r = await runChild([`const BASE = ${JSON.stringify(BASE)}`, MODEL, setup, run].join("\n"), { timeoutMs: 20_000 })
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout.trim()), { text: "mine", mine: 1, seen: 0 })
})

test("the agent runtime's turns go through a replaced globalThis.fetch", async () => {
  const run = `
const tn = await import(ENTRY)
const seen = []
globalThis.fetch = async (url, init) => {
  seen.push(String(url))
  return { ok: true, json: async () => ({ choices: [{ message: { role: "assistant", content: "from the stub" } }] }) }
}
const rt = new tn.agents.AgentRuntime({ llm: { baseUrl: BASE, model: "m", apiKey: "k" }, registry: { helper: { does: "helps" } } })
const r = await rt.runAgent("helper", "hello")
console.log(JSON.stringify({ text: r.text, seen }))
`
  const r = await runChild([`const BASE = ${JSON.stringify(BASE)}`, run].join("\n"), { timeoutMs: 20_000 })
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout.trim()), { text: "from the stub", seen: [`${BASE}/chat/completions`] })
})

test("streaming reads the body of a replaced globalThis.fetch as it arrives", async () => {
  const run = `
const tn = await import(ENTRY)
globalThis.fetch = async (url, init) => {
  const enc = new TextEncoder()
  const frames = ['data: {"choices":[{"delta":{"content":"he"}}]}\\n\\n', 'data: {"choices":[{"delta":{"content":"llo"}}]}\\n\\n', "data: [DONE]\\n\\n"]
  const body = new ReadableStream({ start(c) { for (const f of frames) c.enqueue(enc.encode(f)); c.close() } })
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } })
}
const toolkit = await tn.createToolkit({ builtins: { disabled: true } })
const client = tn.createClient({ baseUrl: BASE, model: "m", apiKey: "k" })
const deltas = []
for await (const ev of client.stream("hi", { toolkit })) if (ev.type === "text") deltas.push(ev.delta)
console.log(JSON.stringify(deltas))
`
  const r = await runChild([`const BASE = ${JSON.stringify(BASE)}`, run].join("\n"), { timeoutMs: 20_000 })
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout.trim()), ["he", "llo"])
})
