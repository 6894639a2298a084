// Errors as values: every error the package throws or rejects with has its own class, message,
// cause and fields, made as JavaScript makes them, and none carries napi's `code`. Where Node
// itself raises the same failure (a file-system call, a fetch), the test compares with it.

import { test } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

import * as tn from "../index.js"
import { startLLM, closedPort } from "./support/llm.mjs"

/** What a caller can branch on: the class, the message, and every own property but the stack. */
function describe(e) {
  const own = {}
  for (const k of Object.getOwnPropertyNames(e)) if (k !== "stack" && k !== "message" && k !== "cause") own[k] = e[k]
  return { class: e.constructor.name, message: e.message, own, cause: e.cause === undefined ? undefined : describe(e.cause) }
}

const caught = async (fn) => {
  try {
    await fn()
  } catch (e) {
    return e
  }
  assert.fail("expected a failure")
}

let toolkitValue
test.before(async () => {
  toolkitValue = await tn.createToolkit({ builtins: { disabled: true } })
})

test("an LLM HTTP error keeps its message, gains its status, and has no code", async () => {
  const llm = await startLLM([{ status: 500, body: "boom" }])
  try {
    const client = tn.createClient({ baseUrl: llm.url, apiKey: "k", retries: 0 })
    const e = await caught(() => client.run("x", { toolkit: toolkitValue }))
    assert.ok(e instanceof Error)
    assert.deepEqual(describe(e), { class: "Error", message: "LLM 500: boom", own: { status: 500 }, cause: undefined })
  } finally {
    await llm.close()
  }
})
test("a request that gets no response is Node's `TypeError: fetch failed` with Node's cause", async () => {
  const port = await closedPort()
  const url = `http://127.0.0.1:${port}/v1`
  const client = tn.createClient({ baseUrl: url, apiKey: "k", retries: 0 })
  const ours = await caught(() => client.run("x", { toolkit: toolkitValue }))
  const node = await caught(() => fetch(`${url}/chat/completions`, { method: "POST", body: "{}" }))
  assert.ok(ours instanceof TypeError)
  assert.deepEqual(describe(ours), describe(node))
  assert.equal(ours.cause.code, "ECONNREFUSED")
})

test("a 2xx reply that is not JSON is a SyntaxError with no code", async () => {
  const llm = await startLLM([{ body: "not json" }])
  try {
    const client = tn.createClient({ baseUrl: llm.url, apiKey: "k", retries: 0 })
    const e = await caught(() => client.run("x", { toolkit: toolkitValue }))
    assert.ok(e instanceof SyntaxError)
    assert.deepEqual(describe(e).own, {})
  } finally {
    await llm.close()
  }
})

test("onError is handed the failure as an Error with its class and cause", async () => {
  const port = await closedPort()
  const seen = []
  const client = tn.createClient({
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey: "k",
    retries: 1,
    retryBaseMs: 1,
    onError: (info) => {
      seen.push(info.error)
      return "fail"
    },
  })
  await caught(() => client.run("x", { toolkit: toolkitValue }))
  assert.equal(seen.length, 1)
  assert.ok(seen[0] instanceof TypeError)
  assert.equal(seen[0].message, "fetch failed")
  assert.equal(seen[0].cause.code, "ECONNREFUSED")
  assert.equal(Object.hasOwn(seen[0], "code"), false)
})

test("resolveStore('file:') and FileTaskStore fail as fs.mkdirSync does, with Node's fields", () => {
  const node = (dir) => {
    try {
      fs.mkdirSync(dir, { recursive: true })
    } catch (e) {
      return e
    }
    assert.fail("Node made it")
  }
  const ours = (fn) => {
    try {
      fn()
    } catch (e) {
      return e
    }
    assert.fail("expected a failure")
  }
  assert.deepEqual(describe(ours(() => tn.resolveStore("file:"))), describe(node("")))
  assert.deepEqual(describe(ours(() => new tn.FileTaskStore(""))), describe(node("")))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-errors-"))
  try {
    const file = path.join(dir, "plain-file")
    fs.writeFileSync(file, "x")
    const under = path.join(file, "tasks")
    assert.deepEqual(describe(ours(() => new tn.FileTaskStore(under))), describe(node(under)))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("an MCP config file that is missing fails as readFileSync does; a malformed one is a SyntaxError", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-errors-"))
  try {
    const missing = path.join(dir, "missing.json")
    let node
    try {
      fs.readFileSync(missing, "utf8")
    } catch (e) {
      node = e
    }
    let ours
    try {
      tn.parseMcpConfig(missing)
    } catch (e) {
      ours = e
    }
    assert.deepEqual(describe(ours), describe(node))
    const bad = path.join(dir, "bad.json")
    fs.writeFileSync(bad, "{ not json")
    assert.throws(() => tn.parseMcpConfig(bad), (e) => e instanceof SyntaxError && e.message.startsWith(bad) && !("code" in e))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("an error a native call throws synchronously has no code either", () => {
  assert.throws(
    () => tn.agents.estimateTokens("not messages"),
    (e) => e.constructor === Error && e.message === "estimateTokens: `messages` must be an array" && Object.getOwnPropertyNames(e).sort().join() === "message,stack",
  )
})
