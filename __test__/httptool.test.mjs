// SPEC §7: HTTP endpoints as tools, against a real local server.
import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import net from "node:net"
import { httpTool, createToolkit } from "../index.js"

/** A local server recording each request; `route(req, body, res)` may answer, else it echoes. */
async function serve(route) {
  const seen = []
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body })
      if (route && route(req, body, res) !== false) return
      res.writeHead(200, { "Content-Type": "application/json" })
      res.end(JSON.stringify({ path: req.url }))
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  const base = `http://127.0.0.1:${server.address().port}`
  return { base, seen, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r) }) }
}

test("a GET tool sends every argument in the query and reports the status", async (t) => {
  const s = await serve()
  t.after(s.close)
  const schema = { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
  const search = httpTool({ name: "search_docs", description: "Search", method: "get", url: `${s.base}/search`, inputSchema: schema })
  assert.deepStrictEqual(Object.keys(search), ["name", "description", "inputSchema", "source", "execute"])
  assert.equal(search.name, "search_docs")
  assert.equal(search.source, "http")
  assert.equal(search.inputSchema, schema, "the declared schema object itself")
  const res = await search.execute({ q: "a b&c", page: 2 })
  assert.deepStrictEqual(res, { output: JSON.stringify({ path: "/search?q=a+b%26c&page=2" }), isError: false, metadata: { status: 200 } })
  assert.equal(s.seen[0].method, "GET")
  assert.deepStrictEqual(httpTool({ name: "n", description: "d", method: "GET", url: s.base }).inputSchema, {
    type: "object",
    properties: {},
    additionalProperties: false,
  })
})

test("placeholders, query names, a JSON body and ${ENV} headers", async (t) => {
  const s = await serve((req, body, res) => {
    res.writeHead(201)
    res.end('{"created":true}')
  })
  t.after(s.close)
  process.env.TOOLNEXUS_TEST_TOKEN = "YOUR_KEY_HERE"
  const comment = httpTool({
    name: "add_comment",
    description: "Comment",
    method: "POST",
    url: `${s.base}/issues/{issue}/comments`,
    headers: { Authorization: "Bearer ${TOOLNEXUS_TEST_TOKEN}", "X-Unset": "[${TOOLNEXUS_TEST_UNSET}]" },
    query: ["notify"],
  })
  const res = await comment.execute({ issue: "4/2", notify: true, text: "looks good", n: 1 })
  assert.deepStrictEqual(res, { output: '{"created":true}', isError: false, metadata: { status: 201 } })
  const call = s.seen[0]
  assert.equal(call.url, "/issues/4%2F2/comments?notify=true")
  assert.equal(call.body, '{"text":"looks good","n":1}')
  assert.equal(call.headers["content-type"], "application/json")
  assert.equal(call.headers.authorization, "Bearer YOUR_KEY_HERE")
  assert.equal(call.headers["x-unset"], "[]")
})

test("form and raw bodies; nothing left over means no body", async (t) => {
  const s = await serve()
  t.after(s.close)
  await httpTool({ name: "f", description: "", method: "PUT", url: `${s.base}/f`, body: "form" }).execute({ a: "x y", b: [1, 2] })
  await httpTool({ name: "r", description: "", method: "POST", url: `${s.base}/r`, body: "raw", headers: { "Content-Type": "text/xml" } }).execute({ body: "<x/>", other: 1 })
  await httpTool({ name: "e", description: "", method: "POST", url: `${s.base}/e/{id}` }).execute({ id: 1 })
  assert.deepStrictEqual(s.seen.map((r) => [r.method, r.url, r.body, r.headers["content-type"]]), [
    ["PUT", "/f", "a=x+y&b=1%2C2", "application/x-www-form-urlencoded"],
    ["POST", "/r", "<x/>", "text/xml"],
    ["POST", "/e/1", "", undefined],
  ])
})

test("non-2xx is an error result; result modes shape the output", async (t) => {
  const s = await serve((req, body, res) => {
    if (req.url === "/boom") {
      res.writeHead(422)
      res.end("invalid payload")
      return
    }
    if (req.url === "/json") {
      res.writeHead(200)
      res.end('{ "b": 1.0, "a": [1e21] }')
      return
    }
    return false
  })
  t.after(s.close)
  const tool = (url, resultMode) => httpTool({ name: "t", description: "", method: "GET", url: s.base + url, resultMode })
  assert.deepStrictEqual(await tool("/boom").execute({}), { output: "HTTP 422: invalid payload", isError: true, metadata: { status: 422 } })
  assert.equal((await tool("/ok", "status+text").execute({})).output, '200\n{"path":"/ok"}')
  assert.equal((await tool("/json", "json").execute({})).output, '{"b":1,"a":[1e+21]}')
  assert.equal((await tool("/boom", "json").execute({})).output, "HTTP 422: invalid payload")
})

test("timeouts and cancellation end a call as an error result", async (t) => {
  const s = await serve((req, body, res) => {
    setTimeout(() => {
      res.writeHead(200)
      res.end("late")
    }, 3000).unref()
  })
  t.after(s.close)
  const slow = httpTool({ name: "slow", description: "", method: "GET", url: `${s.base}/slow`, timeout: 60_000 })
  const started = Date.now()
  assert.deepStrictEqual(await slow.execute({}, { timeout: 100 }), { output: "This operation was aborted", isError: true })
  assert.ok(Date.now() - started < 2000)
  const quick = httpTool({ name: "q", description: "", method: "GET", url: `${s.base}/slow`, timeout: 50 })
  assert.equal((await quick.execute({})).output, "This operation was aborted")
  const ac = new AbortController()
  const inflight = slow.execute({}, { signal: ac.signal })
  setTimeout(() => ac.abort(), 50)
  assert.deepStrictEqual(await inflight, { output: "This operation was aborted", isError: true })
  assert.ok(Date.now() - started < 2500)
})

test("transport failures are error results without a status", async () => {
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const p = srv.address().port
      srv.close(() => resolve(p))
    })
  })
  const res = await httpTool({ name: "t", description: "", method: "GET", url: `http://127.0.0.1:${port}/` }).execute({})
  assert.equal(res.isError, true)
  assert.ok(res.output.startsWith("fetch failed"), res.output)
  assert.equal(res.metadata, undefined)
  const bad = await httpTool({ name: "t", description: "", method: "GET", url: "not a url" }).execute({})
  assert.deepStrictEqual(bad, { output: "Failed to parse URL from not a url", isError: true })
})

test("an http tool works inside a toolkit", async (t) => {
  const s = await serve()
  t.after(s.close)
  const tk = await createToolkit({ extraTools: [httpTool({ name: "ping", description: "p", method: "GET", url: `${s.base}/ping` })], builtins: false })
  assert.deepStrictEqual(tk.toOpenAI().map((x) => x.function.name), ["ping"])
  assert.deepStrictEqual(await tk.execute("ping", { a: 1 }), { output: '{"path":"/ping?a=1"}', isError: false, metadata: { status: 200 } })
})

test("httpTool rejects options it cannot use", () => {
  assert.throws(() => httpTool(null), TypeError)
  assert.throws(() => httpTool({ name: "n", description: "d", url: "http://x" }), /`method` must be a string/)
  assert.throws(() => httpTool({ name: "n", description: "d", method: "GET" }), /`url` must be a string/)
})
