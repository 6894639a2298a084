// SPEC §8 Resilience: retries, Retry-After, onError, timeoutMs and external cancellation.
import test from "node:test"
import assert from "node:assert/strict"
import { createClient, createToolkit } from "../index.js"
import { startLLM, oaText, runChild, closedPort, within } from "./support/llm.mjs"

const client = (url, extra = {}) => createClient({ baseUrl: url, style: "openai", model: "res-m", apiKey: "k", ...extra })
const usage = { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 }
const ok = (text = "fine") => oaText(text, usage)

/** An endpoint that answers with `replies[i]` on the i-th request (the last repeats) and time-stamps each. */
async function timedLLM(replies) {
  const at = []
  const llm = await startLLM((req, i) => {
    at.push(performance.now())
    return replies[Math.min(i, replies.length - 1)]
  })
  return Object.assign(llm, { at, gap: (i) => at[i] - at[i - 1] })
}

test("retries default to 2: a 503 served every time is tried 3 times, then surfaces", async (t) => {
  const llm = await timedLLM([{ status: 503, body: "overloaded" }])
  t.after(() => llm.close())
  await assert.rejects(client(llm.url, { retryBaseMs: 1 }).run("hi", { toolkit: await createToolkit({}) }), (e) => e instanceof Error && e.message === "LLM 503: overloaded")
  assert.equal(llm.requests.length, 3)
})

test("each of 429/500/502/503/504 is retried; the run then succeeds", async (t) => {
  for (const status of [429, 500, 502, 503, 504]) {
    const llm = await timedLLM([{ status, body: "transient" }, ok(`after ${status}`)])
    const res = await client(llm.url, { retryBaseMs: 1 }).run("hi", { toolkit: await createToolkit({}) })
    await llm.close()
    assert.equal(res.text, `after ${status}`)
    assert.equal(llm.requests.length, 2, String(status))
  }
})

test("a 400 (and other statuses outside the retryable set) is not retried", async (t) => {
  for (const status of [400, 401, 404, 422, 501]) {
    const llm = await timedLLM([{ status, body: `nope ${status}` }, ok()])
    await assert.rejects(client(llm.url, { retryBaseMs: 1 }).run("hi", { toolkit: await createToolkit({}) }), (e) => e.message === `LLM ${status}: nope ${status}`)
    await llm.close()
    assert.equal(llm.requests.length, 1, String(status))
  }
})

test("429 with Retry-After: 1 waits at least a second before the retry", { timeout: 10_000 }, async (t) => {
  const llm = await timedLLM([{ status: 429, headers: { "Retry-After": "1" }, body: "slow down" }, ok("patient")])
  t.after(() => llm.close())
  const res = await client(llm.url, { retryBaseMs: 1 }).run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "patient")
  assert.equal(llm.requests.length, 2)
  assert.ok(llm.gap(1) >= 950, `retried after ${llm.gap(1)}ms, Retry-After asked for 1000ms`)
})

test("Retry-After: 0 means retry now, even with a long backoff configured", { timeout: 10_000 }, async (t) => {
  const llm = await timedLLM([{ status: 503, headers: { "retry-after": "0" }, body: "" }, ok("now")])
  t.after(() => llm.close())
  const res = await client(llm.url, { retryBaseMs: 5000 }).run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "now")
  assert.ok(llm.gap(1) < 1000, `retried after ${llm.gap(1)}ms; the 5000ms backoff was used instead of Retry-After: 0`)
})

test("Retry-After that is not delay-seconds (HTTP-date, negative, fractional, exponent) falls back to the backoff", { timeout: 10_000 }, async (t) => {
  const soon = new Date(Date.now() + 3000).toUTCString()
  for (const value of [soon, "-5", "1.5", "0.5", "1e3", "2147483648", "soon"]) {
    const llm = await timedLLM([{ status: 429, headers: { "Retry-After": value }, body: "later" }, ok("retried")])
    const res = await client(llm.url, { retryBaseMs: 1 }).run("hi", { toolkit: await createToolkit({}) })
    await llm.close()
    assert.equal(res.text, "retried", value)
    assert.equal(llm.requests.length, 2, `${value}: retried once`)
    assert.ok(llm.gap(1) < 900, `${value}: waited ${llm.gap(1)}ms — the header was honoured instead of the 1ms backoff`)
  }
})

test("onError sees { status, attempt, retryable } for each failed attempt, attempt counted from 0", async (t) => {
  const llm = await timedLLM([{ status: 429, body: "a" }, { status: 502, body: "b" }, ok("third time")])
  t.after(() => llm.close())
  const seen = []
  const res = await client(llm.url, { retries: 3, retryBaseMs: 1, onError: (info) => { seen.push({ keys: Object.keys(info), ...info }); return "retry" } })
    .run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "third time")
  assert.deepStrictEqual(seen, [
    { keys: ["status", "attempt", "retryable"], status: 429, attempt: 0, retryable: true },
    { keys: ["status", "attempt", "retryable"], status: 502, attempt: 1, retryable: true },
  ])
})

test("onError can force retries of a 400, always bounded by retries", async (t) => {
  const llm = await timedLLM([{ status: 400, body: "bad gateway config" }])
  t.after(() => llm.close())
  const seen = []
  const c = client(llm.url, { retries: 2, retryBaseMs: 1, onError: (info) => { seen.push(info); return "retry" } })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e.message === "LLM 400: bad gateway config")
  assert.equal(llm.requests.length, 3, "1 attempt + 2 retries, never more")
  assert.deepStrictEqual(seen, [
    { status: 400, attempt: 0, retryable: false },
    { status: 400, attempt: 1, retryable: false },
    { status: 400, attempt: 2, retryable: false },
  ])
})

test("onError can fail a 429 at once, skipping the retry budget", async (t) => {
  const llm = await timedLLM([{ status: 429, body: "quota" }, ok()])
  t.after(() => llm.close())
  const seen = []
  const c = client(llm.url, { retries: 5, retryBaseMs: 1, onError: (info) => { seen.push(info); return "fail" } })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e.message === "LLM 429: quota")
  assert.equal(llm.requests.length, 1)
  assert.deepStrictEqual(seen, [{ status: 429, attempt: 0, retryable: true }])
})

test("any onError answer other than \"fail\" keeps the default retry going", async (t) => {
  const llm = await timedLLM([{ status: 503, body: "x" }, ok("went on")])
  t.after(() => llm.close())
  const res = await client(llm.url, { retryBaseMs: 1, onError: () => undefined }).run("hi", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "went on")
  assert.equal(llm.requests.length, 2)
})

test("a network failure (nothing listening) reaches onError as { error: Error, attempt, retryable: true }", { timeout: 10_000 }, async () => {
  const port = await closedPort()
  const seen = []
  const c = client(`http://127.0.0.1:${port}`, { retries: 2, retryBaseMs: 1, onError: (info) => { seen.push(info); return "retry" } })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e instanceof Error && /fetch failed/.test(e.message))
  assert.deepStrictEqual(seen.map((i) => [Object.keys(i), i.attempt, i.retryable]), [
    [["error", "attempt", "retryable"], 0, true],
    [["error", "attempt", "retryable"], 1, true],
    [["error", "attempt", "retryable"], 2, true],
  ])
  for (const info of seen) {
    assert.ok(info.error instanceof Error, "error is an Error")
    assert.equal(info.status, undefined)
  }
})

test("onError answering fail on a network error surfaces it without retrying", { timeout: 10_000 }, async () => {
  const port = await closedPort()
  let calls = 0
  const c = client(`http://127.0.0.1:${port}`, { retries: 4, retryBaseMs: 1, onError: () => { calls++; return "fail" } })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e instanceof Error)
  assert.equal(calls, 1)
})

test("onError is called as a plain function, like the reference's classifier (this is undefined)", async (t) => {
  const llm = await timedLLM([{ status: 503, body: "x" }, ok()])
  t.after(() => llm.close())
  const receivers = []
  const opts = { baseUrl: llm.url, style: "openai", model: "m", apiKey: "k", retryBaseMs: 1, onError() { receivers.push(this); return "retry" } }
  await createClient(opts).run("hi", { toolkit: await createToolkit({}) })
  assert.equal(receivers.length, 1)
  assert.equal(receivers[0], undefined)
})

test("timeoutMs: 100 against a silent endpoint rejects with \"run timeout after 100ms\" within 300ms", { timeout: 5000 }, async (t) => {
  const llm = await startLLM(() => ({ hang: true }))
  t.after(() => llm.close())
  const tk = await createToolkit({})
  const c = client(llm.url, { timeoutMs: 100 })
  const t0 = performance.now()
  await assert.rejects(c.run("hi", { toolkit: tk }), (e) => e instanceof Error && e.message === "run timeout after 100ms")
  const took = performance.now() - t0
  assert.ok(took >= 90 && took < 300, `rejected after ${took}ms`)
  assert.equal(llm.requests.length, 1, "a timeout is not retried")
})

test("timeoutMs: after the timed-out run the process exits by itself", async (t) => {
  const llm = await startLLM(() => ({ hang: true }))
  t.after(() => llm.close())
  const r = await runChild(`
    const { createClient, createToolkit } = await import(ENTRY)
    const c = createClient({ baseUrl: ${JSON.stringify(llm.url)}, style: "openai", model: "m", apiKey: "k", timeoutMs: 100 })
    const t0 = Date.now()
    await c.run("hi", { toolkit: await createToolkit({}) }).then(
      () => console.log("resolved?!"),
      (e) => console.log(JSON.stringify({ message: e.message, fast: Date.now() - t0 < 300 })),
    )
  `, { timeoutMs: 5000 })
  assert.equal(r.timedOut, false, `the child was still alive after 5s (stdout ${r.stdout}, stderr ${r.stderr})`)
  assert.equal(r.code, 0, r.stderr)
  assert.deepStrictEqual(JSON.parse(r.stdout), { message: "run timeout after 100ms", fast: true })
})

test("timeoutMs bounds the retry backoff too", { timeout: 5000 }, async (t) => {
  const llm = await timedLLM([{ status: 503, body: "x" }])
  t.after(() => llm.close())
  const t0 = performance.now()
  await assert.rejects(client(llm.url, { timeoutMs: 150, retryBaseMs: 3000 }).run("hi", { toolkit: await createToolkit({}) }), (e) => e.message === "run timeout after 150ms")
  assert.ok(performance.now() - t0 < 1000)
  assert.equal(llm.requests.length, 1)
})

test("an external signal aborted mid-request rejects with signal.reason and drops the request", { timeout: 5000 }, async (t) => {
  const llm = await startLLM(() => ({ hang: true }))
  t.after(() => llm.close())
  const ac = new AbortController()
  const reason = new Error("tab closed")
  const run = client(llm.url, { retries: 3 }).run("hi", { toolkit: await createToolkit({}), signal: ac.signal })
  while (llm.requests.length === 0) await new Promise((r) => setTimeout(r, 5))
  ac.abort(reason)
  await within(2000, assert.rejects(run, (e) => e === reason), "the aborted run")
  await within(2000, llm.requests[0].closed, "the dropped request")
  assert.equal(llm.requests.length, 1, "an abort is not retried")
})

test("an external abort during a retry backoff rejects with the reason and skips onError", { timeout: 5000 }, async (t) => {
  const llm = await timedLLM([{ status: 503, body: "x" }])
  t.after(() => llm.close())
  const ac = new AbortController()
  let classified = 0
  const run = client(llm.url, { retryBaseMs: 10_000, onError: () => { classified++; return "retry" } })
    .run("hi", { toolkit: await createToolkit({}), signal: ac.signal })
  while (llm.requests.length === 0) await new Promise((r) => setTimeout(r, 5))
  await new Promise((r) => setTimeout(r, 50))
  ac.abort("stop waiting")
  await within(2000, assert.rejects(run, (e) => e === "stop waiting"), "the aborted run")
  assert.equal(llm.requests.length, 1)
  assert.equal(classified, 1, "only the 503 was classified; the abort was not")
})

test("onMetric: a call that needed 3 attempts is ONE llm event with attempts: 3; an un-retried call has no attempts key", async (t) => {
  const llm = await timedLLM([{ status: 503, body: "x" }, { status: 429, body: "y" }, ok("finally"), ok("first try")])
  t.after(() => llm.close())
  const events = []
  const c = client(llm.url, { retryBaseMs: 1, onMetric: (ev) => events.push(ev) })
  const tk = await createToolkit({})
  await c.run("hi", { toolkit: tk })
  await c.run("again", { toolkit: tk })
  const llmEvents = events.filter((e) => e.event === "llm").map(({ ms, ...rest }) => rest)
  assert.deepStrictEqual(llmEvents, [
    { event: "llm", model: "res-m", status: "ok", promptTokens: 2, completionTokens: 1, attempts: 3 },
    { event: "llm", model: "res-m", status: "ok", promptTokens: 2, completionTokens: 1 },
  ])
  assert.deepStrictEqual(Object.keys(events[0]), ["event", "model", "status", "ms", "promptTokens", "completionTokens", "attempts"])
  assert.ok(!("attempts" in events.find((e, i) => i > 0 && e.event === "llm")))
  assert.deepStrictEqual(events.map((e) => e.event), ["llm", "run", "llm", "run"])
})

test("onMetric: a call that failed after all its attempts reports status error with the attempt count", async (t) => {
  const llm = await timedLLM([{ status: 502, body: "down" }])
  t.after(() => llm.close())
  const events = []
  const c = client(llm.url, { retries: 2, retryBaseMs: 1, onMetric: (ev) => events.push(ev) })
  await assert.rejects(c.run("hi", { toolkit: await createToolkit({}) }), (e) => e.message === "LLM 502: down")
  const { ms, ...llmEvent } = events[0]
  assert.deepStrictEqual(llmEvent, { event: "llm", model: "res-m", status: "error", promptTokens: 0, completionTokens: 0, attempts: 3 })
  assert.equal(events[1].event, "run")
  assert.equal(events[1].error, "LLM 502: down")
})
