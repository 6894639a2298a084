"use strict"
// The user's `fetch` as the core's LLM transport (SPEC §8), read as the reference reads a
// Response; and the user's seams: when something of theirs stands where the reference sends its
// LLM requests (`globalThis.fetch`), runs go through it.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { fromCore } = require("./decode.js")
const { lift } = require("./call-convention.js")

/**
 * The headers of a user's Response, as far as they are read here: listed with `entries()`
 * when it has one, else asked for Retry-After with `get()`.
 * @typedef {object} HeadersLike
 * @property {() => Iterable<[string, string]>} [entries]
 * @property {(name: string) => unknown} [get]
 */

/**
 * What a user's `fetch` answers with: a WHATWG Response, or anything shaped enough like one.
 * `ok` is read for its truth and `status` only when it is a number; the body's reader is used
 * for a streaming request, `json()` for a plain success and `text()` otherwise.
 * @typedef {object} ResponseLike
 * @property {unknown} ok
 * @property {unknown} [status]
 * @property {HeadersLike | null} [headers]
 * @property {{ getReader?: () => ReadableStreamDefaultReader<Uint8Array> } | null} [body]
 * @property {() => Promise<string>} text
 * @property {() => Promise<unknown>} json
 */

/**
 * The second argument a user's `fetch` is called with: always a POST of JSON text, with the
 * signal the core aborts when it gives the request up.
 * @typedef {object} FetchInit
 * @property {string} method
 * @property {Record<string, string>} headers
 * @property {string} body
 * @property {AbortSignal} signal
 */

/**
 * A user's `fetch` as the `fetch` option takes it (`globalThis.fetch` fits).
 * @callback FetchLike
 * @param {string} url
 * @param {FetchInit} init
 * @returns {ResponseLike | Promise<ResponseLike>}
 */

/**
 * One message from the core to a fetch bridge (see `client/seams.rs` in the core): a new request
 * (`req`, `url`, `headers`, `body`, `stream`), the next chunk of an open stream (`pull`), a
 * stream left unread (`cancel`), or a request given up before its answer (`abort`). The request's
 * own fields are there on a new request only.
 * @typedef {object} FetchMessage
 * @property {number} [pull]
 * @property {number} [cancel]
 * @property {number} [abort]
 * @property {number} req
 * @property {string} url
 * @property {Record<string, string>} headers
 * @property {string} body
 * @property {boolean} [stream]
 */

/**
 * A streamed body being read: its reader, the decoder that keeps a character split across two
 * chunks, and the request it answers.
 * @typedef {object} OpenStream
 * @property {ReadableStreamDefaultReader<Uint8Array>} reader
 * @property {InstanceType<typeof TextDecoder>} decoder
 * @property {number} req
 */

/**
 * The `fetch` option: call the user's fetch and read the Response here. A plain request
 * answers with the whole body; a streaming one keeps the reader and hands the core one
 * chunk per `pull`, so tokens reach the loop as they arrive.
 * @param {FetchLike} fetchFn
 * @returns {(json: import("./decode.js").Crossed) => Promise<string>} the bridge, for `lift`: a
 *   message as it crossed in, the answer's JSON out
 */
function fetchBridge(fetchFn) {
  /** @type {Map<number, OpenStream>} */
  const readers = new Map()
  // One AbortController per request in flight: the core aborts it when the run is aborted,
  // times out or stops reading, and the user's fetch sees that through `signal`.
  /** @type {Map<number, AbortController>} */
  const controllers = new Map()
  let nextId = 1
  return async (json) => {
    // One JSON text, or pieces when the request body holds a string over 1 MiB (see `fromCore`).
    const msg = /** @type {FetchMessage} */ (fromCore(json))
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

/**
 * A Response's headers as pairs: all of them when they can be listed, else Retry-After alone.
 * @param {HeadersLike | null | undefined} headers
 * @returns {[string, string][]}
 */
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

/** @type {unknown} */
let seenFetch
let seenFetchIsNodes = false
/**
 * Whether `f` is Node's own `fetch` (its source loads Node's internal undici).
 * @param {unknown} f whatever `globalThis.fetch` holds now
 * @returns {boolean}
 */
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

/** @type {unknown} */
let seenDispatcher
let seenDispatcherIsNodes = true
/**
 * Whether `d` is no dispatcher, or the default Agent Node's fetch makes for itself.
 * @param {unknown} d whatever sits in undici's global dispatcher slot; read defensively (a
 *   throw while reading it means it is not Node's own)
 * @returns {boolean}
 */
function isNodesDispatcher(d) {
  if (d === undefined) return true
  if (d !== seenDispatcher) {
    seenDispatcher = d
    seenDispatcherIsNodes = false
    try {
      const made = /** @type {{ constructor?: unknown }} */ (d).constructor
      if (typeof made === "function" && made.name === "Agent" && sourceOf.call(made).startsWith("class extends DispatcherBase")) {
        const key = Object.getOwnPropertySymbols(d).find((k) => k.description === "options")
        const options = key === undefined ? undefined : /** @type {{ [k: symbol]: AgentOptions | null | undefined }} */ (d)[key]
        seenDispatcherIsNodes = options != null && options.connect === undefined && !options.interceptors
      }
    } catch {
      seenDispatcherIsNodes = false
    }
  }
  return seenDispatcherIsNodes
}

/**
 * The options undici's Agent keeps under its `options` symbol, as far as they are read here.
 * @typedef {object} AgentOptions
 * @property {unknown} [connect]
 * @property {unknown} [interceptors]
 */

/**
 * Node's fetch is told to take its proxy from the environment. Node reads this once, at
 * startup, so it is read once here too (at load).
 * @returns {boolean}
 */
function envProxy() {
  const v = process.env.NODE_USE_ENV_PROXY
  return (v !== undefined && v !== "" && v !== "0") || process.execArgv.includes("--use-env-proxy")
}
const ENV_PROXY = envProxy()

let globalFetchSet = false
/**
 * Whether this run's LLM requests must go through `globalThis.fetch` (see above). The bridge
 * to it is handed to the addon the first time it is needed.
 * @returns {boolean}
 */
function userSeam() {
  if (isNodesFetch(globalThis.fetch) && isNodesDispatcher(/** @type {{ [k: symbol]: unknown }} */ (globalThis)[DISPATCHER]) && !ENV_PROXY) return false
  if (!globalFetchSet) {
    native.setGlobalFetch(lift(fetchBridge((url, init) => globalThis.fetch(url, init))))
    globalFetchSet = true
  }
  return true
}

module.exports = { fetchBridge, userSeam }
