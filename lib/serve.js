"use strict"
// Serving (SPEC §7B, §7C): task stores, the agent card, the HTTP server with its A2A and MCP
// profiles.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { bridge } = require("./call-convention.js")
const { raw, crossing } = require("./options-doc.js")
const { natives, shipped, isOwnStore } = require("./addon-objects.js")
const { loggerOption } = require("./logger.js")
const { taskSignals } = require("./abort.js")
const { runResult } = require("./types.js")
const { toolSpec } = require("./core-tools.js")
const { warnUnlisted } = require("./mcpserve.js")
const { telemetryOption, serverRecorder, withCarrier } = require("./telemetry.js")

/** @typedef {import("../index").A2ATask} Task an A2A Task, as the core keeps it */

/** @typedef {import("../index").TaskStore} TaskStore */

/**
 * The A2A profile (`a2a`): what the served Agent Card says, and where Tasks are kept (`store`:
 * "memory", "file:<dir>", or a store object). The core reads the rest; any other truthy value
 * turns the profile on with its defaults.
 * @typedef {{ store?: unknown, [key: string]: unknown }} A2AOptions
 */

/**
 * An `onTask` event: a served Task's run is over (`state`: completed, input-required or failed).
 * `result` is the run's RunResult; the core
 * leaves it out for a failed Task, `taskEvent` puts it back as undefined.
 * @typedef {object} TaskEvent
 * @property {string} id
 * @property {Task} task
 * @property {import("../index").RunResult | undefined} [result]
 * @property {string} state
 */

/**
 * Runs one served Task: its text, and the peer's conversation key when it gave one. The core
 * reads the answer (a RunResult, or a Promise of one) for its `status`, `pending` and `text`.
 * @callback RunTask
 * @param {string} text
 * @param {string} [contextId]
 * @param {{ signal: AbortSignal }} [extra] aborted when the Task is canceled (`tasks/cancel`, `CancelTask`)
 * @returns {unknown}
 */

/**
 * Takes a served Task parked for input up again (SPEC §10 across A2A): the conversation it ran
 * in, the Request it parked on and the Answer a message brought (it echoes the Request). Answers
 * a RunResult, as `runTask` does; `toolkit.serve`'s is `client.askWithAnswer`.
 * @callback ResumeTask
 * @param {string} contextId
 * @param {import("../index").Request} pending
 * @param {import("../index").Answer} answer
 * @param {{ signal: AbortSignal }} extra aborted when the Task is canceled
 * @returns {unknown}
 */

/**
 * The options every server reads (`toolkit.serve`'s and `startA2AServer`'s). Everything but the
 * callbacks and a store object crosses to the core as JSON, which reads it.
 * @typedef {object} ServeOptions
 * @property {A2AOptions | null} [a2a]
 * @property {unknown} [mcp] the MCP profile (`{ name?, version?, tools? }`); on when truthy
 * @property {((ev: TaskEvent) => unknown) | null} [onTask]
 * @property {((ev: unknown) => unknown) | null} [onCall] called with each served `tools/call`
 * @property {unknown} [skills] the skills the card advertises
 * @property {unknown} [auth]
 * @property {unknown} [allowedOrigins]
 * @property {unknown} [maxBodyBytes]
 * @property {{ warn(message: string): unknown } | null} [logger] told the server's warnings instead of `console.warn` (a served toolkit's logger when absent)
 * @property {unknown} [telemetry] a span per request (OpenTelemetry; see `telemetryOption`), continuing the caller's trace
 */

/**
 * `startA2AServer`'s options: the server's address, its own `runTask` (and `resumeTask`, to take
 * parked Tasks up again), and the tools its MCP profile may expose.
 * @typedef {ServeOptions & { addr: string, runTask: RunTask, resumeTask?: ResumeTask | null, mcpTools?: import("./core-tools.js").Tool[] | null }} StartServerOptions
 */

/** @typedef {import("../index").ServeHandle} ServeHandle */

/** @type {WeakMap<object, import("../binding").NativeTaskStore>} */
const taskStores = new WeakMap() // each store class of ours -> its NativeTaskStore

/**
 * A Task from one of our stores, undefined when it has none by that id.
 * @param {object} store one of ours (in `taskStores`)
 * @param {unknown} id
 * @returns {Promise<Task | undefined>}
 */
async function storeGet(store, id) {
  // Each of our stores has its native store from its constructor on.
  const json = await /** @type {import("../binding").NativeTaskStore} */ (taskStores.get(store)).get(String(id))
  return json == null ? undefined : JSON.parse(json)
}

/**
 * Keep a Task (its JSON) in one of our stores.
 * @param {object} store one of ours (in `taskStores`)
 * @param {unknown} task
 * @returns {Promise<void>}
 */
async function storeSave(store, task) {
  await /** @type {import("../binding").NativeTaskStore} */ (taskStores.get(store)).save(encode(task))
}

/** Tasks for the life of the process. */
class InMemoryTaskStore {
  /** @param {{ maxEntries?: number }} [options] how many Tasks to keep (running ones always stay) */
  constructor(options) {
    taskStores.set(this, new native.NativeTaskStore(options === undefined ? undefined : encode(options)))
  }

  /**
   * @param {unknown} id
   * @returns {Promise<Task | undefined>}
   */
  get(id) {
    return storeGet(this, id)
  }

  /**
   * @param {unknown} task
   * @returns {Promise<void>}
   */
  save(task) {
    return storeSave(this, task)
  }
}

/** One `<id>.json` per Task under `dir` (created now), written atomically. */
class FileTaskStore {
  /** @param {unknown} dir */
  constructor(dir) {
    taskStores.set(this, native.NativeTaskStore.file(String(dir)))
  }

  /**
   * @param {unknown} id
   * @returns {Promise<Task | undefined>}
   */
  get(id) {
    return storeGet(this, id)
  }

  /**
   * @param {unknown} task
   * @returns {Promise<void>}
   */
  save(task) {
    return storeSave(this, task)
  }
}

/** Tasks on a durable engine: `sqlite:<path>`, `postgres://…`, `redis://…` (reached on first use). */
class UrlTaskStore {
  /** @param {string} url */
  constructor(url) {
    taskStores.set(this, native.NativeTaskStore.url(url))
  }

  /**
   * @param {unknown} id
   * @returns {Promise<Task | undefined>}
   */
  get(id) {
    return storeGet(this, id)
  }

  /**
   * @param {unknown} task
   * @returns {Promise<void>}
   */
  save(task) {
    return storeSave(this, task)
  }
}

/**
 * A store from the `store` option: no selector or "memory" -> in memory, "file:<dir>" -> a file
 * store, a store URL -> that engine's, an object -> itself.
 * @param {TaskStore | string | undefined} store
 * @returns {TaskStore}
 */
function resolveStore(store) {
  if (store === undefined || typeof store === "string") {
    const named = native.storeChoice(store)
    if (named == null) return new InMemoryTaskStore()
    return named.url != null ? new UrlTaskStore(named.url) : new FileTaskStore(named.file)
  }
  return store
}

/**
 * A store given as an object (not a selector), or undefined.
 * @param {unknown} store
 * @returns {object | undefined}
 */
const storeObject = (store) => (store !== null && (typeof store === "object" || typeof store === "function") ? store : undefined)

/**
 * The Agent Card of an A2A profile: its skills (as `cfg.skills` filters them) and endpoint `url`.
 * @param {unknown} cfg
 * @param {unknown} skills
 * @param {unknown} url
 * @returns {import("../index").AgentCard}
 */
const buildAgentCard = (cfg, skills, url) => JSON.parse(native.buildAgentCard(encode(cfg ?? {}), encode(skills ?? []), String(url)))

/**
 * The server behind `startA2AServer` and `toolkit.serve`. A store object is handed over as
 * the native store it wraps when it is one of ours, else as its bridged `get` / `save`.
 * @param {string} addr `host:port`
 * @param {ServeOptions} opts
 * @param {object} parts what the caller adds
 * @param {RunTask} parts.runTask
 * @param {ResumeTask | null | undefined} [parts.resumeTask]
 * @param {object | undefined} parts.store a store object (one of ours, or any with `get` / `save`), or none
 * @param {import("../binding").NativeToolkit} [parts.toolkit] a served toolkit's, for its skills, tools and config blocks
 * @param {import("./core-tools.js").Tool[] | null} [parts.mcpTools] the tools the MCP profile may expose
 * @returns {Promise<ServeHandle>}
 */
async function startServer(addr, opts, { runTask, resumeTask, store, toolkit, mcpTools }) {
  const { a2a, mcp, onTask, onCall } = opts
  // A listed tool whose Standard Schema has no JSON Schema is listed with the empty object schema, and said so.
  if (mcpTools && mcp) warnUnlisted(mcpTools, mcp)
  // The options cross as one document; the core reads every field. What only JavaScript can
  // do is adapted first: a Task callback runs with an AbortSignal of its own, an `onTask` event
  // takes the reference's shape, and a store is ours (the core's store itself) or its `get` /
  // `save` called as its methods. Each callback is called as a plain function.
  const own = isOwnStore(store) ? taskStores.get(store) : undefined
  /** @type {object | undefined} */
  let storeDoc
  if (own) {
    storeDoc = {}
    natives.set(storeDoc, own.shared())
  } else if (store) {
    const s = /** @type {TaskStore} */ (store)
    storeDoc = { get: raw(bridge((id) => s.get(id))), save: raw(bridge((task) => s.save(task))) }
  }
  const tracer = telemetryOption(opts.telemetry)
  const doc = {
    addr,
    a2a: a2a && typeof a2a === "object" ? { ...a2a, store: storeObject(a2a.store) ? undefined : a2a.store } : a2a,
    mcp,
    skills: opts.skills,
    auth: opts.auth,
    allowedOrigins: opts.allowedOrigins,
    maxBodyBytes: opts.maxBodyBytes,
    runTask: raw(bridge(runWithAbort((msg, signal) => runTask(/** @type {string} */ (msg.text), msg.contextId, { signal })))),
    resumeTask: typeof resumeTask === "function"
      ? raw(bridge(runWithAbort((msg, signal) => resumeTask(/** @type {string} */ (msg.contextId), /** @type {import("../index").Request} */ (msg.pending), /** @type {import("../index").Answer} */ (msg.answer), { signal }))))
      : undefined,
    onTask: onTask ? raw(bridge((ev) => onTask(taskEvent(ev)))) : undefined,
    onCall: onCall ? raw(bridge((ev) => onCall(ev))) : undefined,
    store: storeDoc,
    logger: loggerOption(opts.logger),
    telemetry: tracer ? raw(serverRecorder(tracer)) : undefined,
  }
  const server = await native.startServer(...crossing(doc), mcpTools && mcp ? mcpTools.map(toolSpec) : undefined, toolkit)
  const handle = { url: server.url, stop: () => server.stop(), close: () => server.stop() }
  // An addition, kept out of the handle's own keys (which are the reference's).
  Object.defineProperty(handle, "notifyResourceUpdated", {
    value: (/** @type {string} */ uri) => server.resourceUpdated(String(uri)),
    enumerable: false,
    writable: true,
    configurable: true,
  })
  return /** @type {typeof handle & { notifyResourceUpdated(uri: string): number }} */ (handle)
}

/**
 * @typedef {{ text?: string, contextId?: string, pending?: unknown, answer?: unknown, call?: string, abort?: string, trace?: Record<string, string> }} TaskCall
 * what the core sends `runTask` / `resumeTask`: a Task to run (`call` its id), or `{ abort: call }`
 */

/**
 * A Task callback as the core calls it: each call runs `run` with an AbortSignal of its own,
 * which a later `{ abort: call }` (the Task was canceled) aborts.
 * @param {(msg: TaskCall, signal: AbortSignal) => unknown} runTask
 * @returns {(msg: TaskCall) => unknown}
 */
function runWithAbort(runTask) {
  /** @type {Map<string, AbortController>} */
  const running = new Map()
  return (msg) => {
    if (msg.abort !== undefined) {
      running.get(msg.abort)?.abort()
      running.delete(msg.abort)
      return null
    }
    const controller = new AbortController()
    const key = String(msg.call)
    running.set(key, controller)
    taskSignals.set(controller.signal, key)
    const done = () => running.delete(key)
    let out
    try {
      const run = () => runTask(msg, controller.signal)
      // Under a traced request (the server's `telemetry`), the Task runs in that request's trace.
      out = Promise.resolve(msg.trace ? withCarrier(msg.trace, run) : run())
    } catch (e) {
      out = Promise.reject(e)
    }
    out.then(done, done)
    return out
  }
}

/**
 * Stand up the HTTP server with your own `runTask` (what `toolkit.serve` is built on).
 * @param {StartServerOptions} opts
 * @returns {Promise<ServeHandle>}
 */
function startA2AServer(opts) {
  const store = opts.a2a ? storeObject(opts.a2a.store) : undefined
  return startServer(opts.addr, opts, { runTask: opts.runTask, resumeTask: opts.resumeTask, store, mcpTools: opts.mcpTools })
}


/**
 * An `onTask` event as the reference builds it: `{ id, task, result, state }`, `result` undefined for a failed task.
 * @param {TaskEvent} ev as the core sent it (`result` left out for a failed task)
 * @returns {TaskEvent}
 */
function taskEvent(ev) {
  if (ev === null || typeof ev !== "object") return ev
  // `id`, `task` and `result` are written first for their place in the key order, and the
  // spread then gives each key the event's own value. (The spread is seen as a TaskEvent whose
  // `id` and `task` may be missing, a wider type, only so that TS lets the first two be written.)
  if (!("result" in ev)) return { id: ev.id, task: ev.task, result: undefined, ...(/** @type {Omit<TaskEvent, "id" | "task"> & Partial<TaskEvent>} */ (ev)) }
  runResult(ev.result)
  return ev
}

for (const c of [InMemoryTaskStore, FileTaskStore, UrlTaskStore]) shipped.add(c.prototype)

module.exports = { taskStores, storeGet, storeSave, InMemoryTaskStore, FileTaskStore, resolveStore, storeObject, buildAgentCard, startServer, startA2AServer }
