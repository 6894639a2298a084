// SPEC §8 Gap 2 (injectable transport) and resilience (retries, Retry-After), through `fetch`.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit, defineTool } from "../index.js"
import { startLLM, oaText } from "./support/llm.mjs"

const json = (obj, init = {}) => new Response(JSON.stringify(obj), { status: 200, headers: { "content-type": "application/json" }, ...init })
const textReply = (content) => ({ choices: [{ message: { role: "assistant", content } }] })

test("every request goes through the user fetch with (url, { method, headers, body })", async () => {
  const seen = []
  const fetch = async (url, init) => {
    seen.push({ url, init })
    const body = JSON.parse(init.body)
    const tooled = body.messages.some((m) => m.role === "tool")
    return json(tooled
      ? textReply("sum is 5")
      : { choices: [{ message: { role: "assistant", content: null, tool_calls: [{ id: "k1", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } }] } }] })
  }
  const tk = await createToolkit({ extraTools: [defineTool({ name: "add", description: "", run: ({ a, b }) => a + b })] })
  const c = createClient({ baseUrl: "http://llm.invalid/v1", style: "openai", model: "m1", apiKey: "key-1", fetch, headers: { "X-Org": "acme" } })
  const res = await c.run("2+3?", { toolkit: tk })
  assert.equal(res.text, "sum is 5")
  assert.equal(seen.length, 2)
  for (const { url, init } of seen) {
    assert.equal(url, "http://llm.invalid/v1/chat/completions")
    assert.equal(init.method, "POST")
    assert.deepStrictEqual(init.headers, { Authorization: "Bearer key-1", "Content-Type": "application/json", "X-Org": "acme" })
    assert.equal(typeof init.body, "string")
    assert.equal(JSON.parse(init.body).model, "m1")
  }
  assert.deepStrictEqual(JSON.parse(seen[1].init.body).messages.at(-1), { role: "tool", tool_call_id: "k1", content: "5" })
})

test("a request body over 1 MiB reaches the user fetch whole", async () => {
  const prompt = "x".repeat(2 * 1024 * 1024 + 3)
  let sent
  const fetch = async (url, init) => {
    sent = init.body
    return json(textReply("long one"))
  }
  const c = createClient({ baseUrl: "http://llm.invalid/v1", model: "m", apiKey: "k", fetch })
  const res = await c.run(prompt, { toolkit: await createToolkit({ builtins: false }) })
  assert.equal(res.text, "long one")
  assert.equal(JSON.parse(sent).messages[0].content, prompt)
})

test("anthropic style through fetch: url and headers", async () => {
  let seen
  const fetch = async (url, init) => {
    seen = { url, init }
    return json({ content: [{ type: "text", text: "hi" }], usage: { input_tokens: 2, output_tokens: 1 } })
  }
  const c = createClient({ baseUrl: "https://anthropic.invalid", style: "anthropic", model: "c", apiKey: "ant-1", fetch })
  const res = await c.run("hello", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "hi")
  assert.equal(seen.url, "https://anthropic.invalid/v1/messages")
  assert.deepStrictEqual(seen.init.headers, { "x-api-key": "ant-1", "anthropic-version": "2023-06-01", "Content-Type": "application/json" })
  assert.deepStrictEqual(res.usage, { promptTokens: 2, completionTokens: 1, totalTokens: 3 })
})

test("a non-2xx Response rejects the run with LLM <status>: <body>", async () => {
  let calls = 0
  const fetch = async () => { calls++; return new Response('{"error":"bad model name"}', { status: 400 }) }
  const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e instanceof Error && e.message === 'LLM 400: {"error":"bad model name"}')
  assert.equal(calls, 1, "a 400 is not retried")
})

test("a 503 is retried (retryBaseMs: 1), then the run succeeds", async () => {
  let calls = 0
  const fetch = async () => (++calls <= 2 ? new Response("overloaded", { status: 503 }) : json(textReply("recovered")))
  const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch, retryBaseMs: 1 })
  const res = await c.run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "recovered")
  assert.equal(calls, 3)
})

test("retries are bounded: the last failure surfaces after retries + 1 attempts", async () => {
  let calls = 0
  const fetch = async () => { calls++; return new Response(`busy #${calls}`, { status: 429 }) }
  const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch, retries: 3, retryBaseMs: 1 })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), { message: "LLM 429: busy #4" })
  assert.equal(calls, 4)
})

test("retries: 0 means a single attempt", async () => {
  let calls = 0
  const fetch = async () => { calls++; return new Response("down", { status: 502 }) }
  const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch, retries: 0 })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), { message: "LLM 502: down" })
  assert.equal(calls, 1)
})

test("Retry-After (delay-seconds) replaces the backoff", { timeout: 5000 }, async () => {
  // With a 60 s base backoff, only an honoured "Retry-After: 0" lets this finish in time.
  let calls = 0
  const fetch = async () => (++calls === 1 ? new Response("slow down", { status: 429, headers: { "Retry-After": "0" } }) : json(textReply("after wait")))
  const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch, retryBaseMs: 60_000 })
  const res = await c.run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "after wait")
  assert.equal(calls, 2)
})

test("Retry-After values that are not delay-seconds fall back to the backoff", { timeout: 5000 }, async () => {
  // An HTTP-date far in the future, or a fractional/signed/exponent value, must not be waited on.
  for (const value of ["Wed, 21 Oct 2099 07:28:00 GMT", "3600.5", "-1", "1e9", ""]) {
    let calls = 0
    const fetch = async () => (++calls === 1 ? new Response("busy", { status: 503, headers: { "Retry-After": value } }) : json(textReply("went on")))
    const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch, retryBaseMs: 1 })
    assert.equal((await c.run("hi", { toolkit: await createToolkit({}) })).text, "went on", JSON.stringify(value))
    assert.equal(calls, 2)
  }
})

test("Retry-After over real HTTP is honoured too", { timeout: 5000 }, async (t) => {
  const llm = await startLLM([{ status: 503, headers: { "retry-after": "0" }, body: "later" }, oaText("served")])
  t.after(() => llm.close())
  const c = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", retryBaseMs: 60_000 })
  const res = await c.run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "served")
  assert.equal(llm.requests.length, 2)
  assert.equal(llm.requests[1].raw, llm.requests[0].raw, "the retry sends the same body")
})

test("a fetch that throws is retried like a network error, then surfaces", async () => {
  let calls = 0
  const boom = new Error("socket hang up")
  const fetch = async () => { calls++; throw boom }
  const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch, retries: 2, retryBaseMs: 1 })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e === boom)
  assert.equal(calls, 3)
})

test("a fetch that recovers after a network error", async () => {
  let calls = 0
  const fetch = async () => { if (++calls === 1) throw new TypeError("fetch failed"); return json(textReply("back")) }
  const c = createClient({ baseUrl: "http://x.invalid", style: "openai", model: "m", apiKey: "k", fetch, retryBaseMs: 1 })
  assert.equal((await c.run("hi", { toolkit: await createToolkit({}) })).text, "back")
  assert.equal(calls, 2)
})

test("the user fetch may be the global fetch pointed at a real server", async (t) => {
  const llm = await startLLM([oaText("via global fetch")])
  t.after(() => llm.close())
  let used = 0
  const c = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", fetch: (u, i) => { used++; return globalThis.fetch(u, i) } })
  assert.equal((await c.run("hi", { toolkit: await createToolkit({}) })).text, "via global fetch")
  assert.equal(used, 1)
  assert.equal(llm.requests[0].headers.authorization, "Bearer k")
})
