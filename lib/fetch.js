"use strict"
// The user's `fetch` as the core's LLM transport (SPEC §8), read as the reference reads a
// Response; and the user's seams: when something of theirs stands where the reference sends its
// LLM requests (`globalThis.fetch`), runs go through it.

const { native } = require("./native.js")
const { encode, lift } = require("./crossing.js")

/**
 * The `fetch` option: call the user's fetch and read the Response here. A plain request
 * answers with the whole body; a streaming one keeps the reader and hands the core one
 * chunk per `pull`, so tokens reach the loop as they arrive.
 */
function fetchBridge(fetchFn) {
  const readers = new Map()
  // One AbortController per request in flight: the core aborts it when the run is aborted,
  // times out or stops reading, and the user's fetch sees that through `signal`.
  const controllers = new Map()
  let nextId = 1
  return async (json) => {
    const msg = JSON.parse(json)
    if (msg.pull !== undefined) {
      const open = readers.get(msg.pull)
      if (!open) return '{"done":true}'
      const { done, value } = await open.reader.read()
      if (!done) return encode({ chunk: open.decoder.decode(value, { stream: true }) })
      readers.delete(msg.pull)
      controllers.delete(open.req)
      const tail = open.decoder.decode()
      return tail ? encode({ chunk: tail }) : '{"done":true}'
    }
    if (msg.cancel !== undefined) {
      const open = readers.get(msg.cancel)
      readers.delete(msg.cancel)
      if (open) {
        open.reader.cancel().catch(() => {})
        controllers.get(open.req)?.abort()
        controllers.delete(open.req)
      }
      return "null"
    }
    if (msg.abort !== undefined) {
      controllers.get(msg.abort)?.abort()
      controllers.delete(msg.abort)
      return "null"
    }
    const controller = new AbortController()
    controllers.set(msg.req, controller)
    let keep = false
    try {
      const res = await fetchFn(msg.url, { method: "POST", headers: msg.headers, body: msg.body, signal: controller.signal })
      // Read as the reference reads a Response: `ok` decides, a success is `json()` (or the
      // body's reader when streaming), a failure `text()`; `headers` only for Retry-After.
      const ok = Boolean(res.ok)
      const status = typeof res.status === "number" ? res.status : ok ? 200 : 0
      const headers = headerPairs(res.headers)
      if (ok && msg.stream) {
        if (res.body && typeof res.body.getReader === "function") {
          const id = nextId++
          readers.set(id, { reader: res.body.getReader(), decoder: new TextDecoder(), req: msg.req })
          keep = true
          return encode({ status, headers, id })
        }
        return encode({ status, headers, body: await res.text() })
      }
      if (ok) return encode({ status, headers, body: encode(await res.json()) })
      return encode({ status, headers, body: await res.text() })
    } finally {
      if (!keep) controllers.delete(msg.req)
    }
  }
}

/** A Response's headers as pairs: all of them when they can be listed, else Retry-After alone. */
function headerPairs(headers) {
  if (headers == null) return []
  if (typeof headers.entries === "function") return [...headers.entries()]
  if (typeof headers.get === "function") {
    const retryAfter = headers.get("retry-after")
    return retryAfter == null ? [] : [["retry-after", String(retryAfter)]]
  }
  return []
}

// ---- the user's seams (SPEC §8: "omit fetch => global fetch") ----
// The reference sends every LLM request through `globalThis.fetch`, read at call time. The
// built-in HTTP is Node's fetch as far as a request can tell, so it stands in for it, unless
// the user has put something of their own in its way: a replaced `globalThis.fetch` (msw,
// nock, a test stub), an undici global dispatcher (MockAgent, ProxyAgent), or Node's own
// proxy from the environment. Then a run goes through `globalThis.fetch` itself, exactly as
// a `fetch` option would.

const DISPATCHER = Symbol.for("undici.globalDispatcher.1")
const sourceOf = Function.prototype.toString

let seenFetch
let seenFetchIsNodes = false
/** Whether `f` is Node's own `fetch` (its source loads Node's internal undici). */
function isNodesFetch(f) {
  if (f !== seenFetch) {
    seenFetch = f
    try {
      seenFetchIsNodes = typeof f === "function" && sourceOf.call(f).includes("require('internal/deps/undici/undici')")
    } catch {
      seenFetchIsNodes = false
    }
  }
  return seenFetchIsNodes
}

let seenDispatcher
let seenDispatcherIsNodes = true
/** Whether `d` is no dispatcher, or the default Agent Node's fetch makes for itself. */
function isNodesDispatcher(d) {
  if (d === undefined) return true
  if (d !== seenDispatcher) {
    seenDispatcher = d
    seenDispatcherIsNodes = false
    try {
      const made = d.constructor
      if (typeof made === "function" && made.name === "Agent" && sourceOf.call(made).startsWith("class extends DispatcherBase")) {
        const key = Object.getOwnPropertySymbols(d).find((k) => k.description === "options")
        const options = key === undefined ? undefined : d[key]
        seenDispatcherIsNodes = options != null && options.connect === undefined && !options.interceptors
      }
    } catch {
      seenDispatcherIsNodes = false
    }
  }
  return seenDispatcherIsNodes
}

/** Node's fetch is told to take its proxy from the environment. */
function envProxy() {
  const v = process.env.NODE_USE_ENV_PROXY
  return (v !== undefined && v !== "" && v !== "0") || process.execArgv.includes("--use-env-proxy")
}

let globalFetchSet = false
/**
 * Whether this run's LLM requests must go through `globalThis.fetch` (see above). The bridge
 * to it is handed to the addon the first time it is needed.
 */
function userSeam() {
  if (isNodesFetch(globalThis.fetch) && isNodesDispatcher(globalThis[DISPATCHER]) && !envProxy()) return false
  if (!globalFetchSet) {
    native.setGlobalFetch(lift(fetchBridge((url, init) => globalThis.fetch(url, init))))
    globalFetchSet = true
  }
  return true
}

module.exports = { fetchBridge, userSeam }
