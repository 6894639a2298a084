"use strict"
// Serving (SPEC §7B, §7C): task stores, the agent card, the HTTP server with its A2A and MCP
// profiles.

const { native } = require("./native.js")
const { encode, bridge } = require("./crossing.js")
const { runResult } = require("./types.js")
const { toolSpec } = require("./core-tools.js")

const taskStores = new WeakMap() // InMemoryTaskStore | FileTaskStore -> NativeTaskStore

async function storeGet(store, id) {
  const json = await taskStores.get(store).get(String(id))
  return json == null ? undefined : JSON.parse(json)
}

async function storeSave(store, task) {
  await taskStores.get(store).save(encode(task))
}

/** Tasks for the life of the process. */
class InMemoryTaskStore {
  constructor() {
    taskStores.set(this, new native.NativeTaskStore())
  }

  get(id) {
    return storeGet(this, id)
  }

  save(task) {
    return storeSave(this, task)
  }
}

/** One `<id>.json` per Task under `dir` (created now), written atomically. */
class FileTaskStore {
  constructor(dir) {
    taskStores.set(this, native.NativeTaskStore.file(String(dir)))
  }

  get(id) {
    return storeGet(this, id)
  }

  save(task) {
    return storeSave(this, task)
  }
}

function resolveStore(store) {
  if (store === undefined || typeof store === "string") {
    const dir = native.storeChoice(store)
    return dir == null ? new InMemoryTaskStore() : new FileTaskStore(dir)
  }
  return store
}

/** A store given as an object (not a selector), or undefined. */
const storeObject = (store) => (store !== null && (typeof store === "object" || typeof store === "function") ? store : undefined)

const buildAgentCard = (cfg, skills, url) => JSON.parse(native.buildAgentCard(encode(cfg ?? {}), encode(skills ?? []), String(url)))

/**
 * The server behind `startA2AServer` and `toolkit.serve`. A store object is handed over as
 * the native store it wraps when it is one of ours, else as its bridged `get` / `save`.
 */
async function startServer(addr, opts, { runTask, store, toolkit, mcpTools }) {
  const { a2a, mcp, onTask, onCall } = opts
  const plain = {
    addr,
    a2a: a2a && typeof a2a === "object" ? { ...a2a, store: storeObject(a2a.store) ? undefined : a2a.store } : a2a,
    mcp,
    skills: opts.skills,
    auth: opts.auth,
    allowedOrigins: opts.allowedOrigins,
    maxBodyBytes: opts.maxBodyBytes,
  }
  const proto = store && Object.getPrototypeOf(store)
  const ours = proto === InMemoryTaskStore.prototype || proto === FileTaskStore.prototype ? taskStores.get(store) : undefined
  const spec = {
    options: encode(plain),
    runTask: bridge(({ text, contextId }) => runTask(text, contextId)),
    onTask: onTask ? bridge((ev) => onTask(taskEvent(ev))) : undefined,
    onCall: onCall ? bridge((ev) => onCall(ev)) : undefined,
    storeGet: store && !ours ? bridge((id) => store.get(id)) : undefined,
    storeSave: store && !ours ? bridge((task) => store.save(task)) : undefined,
    mcpTools: mcpTools && mcp ? mcpTools.map(toolSpec) : undefined,
  }
  const server = await native.startServer(spec, ours, toolkit)
  return { url: server.url, stop: () => server.stop(), close: () => server.stop() }
}

/** Stand up the HTTP server with your own `runTask` (what `toolkit.serve` is built on). */
function startA2AServer(opts) {
  const store = opts.a2a ? storeObject(opts.a2a.store) : undefined
  return startServer(opts.addr, opts, { runTask: opts.runTask, store, mcpTools: opts.mcpTools })
}


/** An `onTask` event as the reference builds it: `{ id, task, result, state }`, `result` undefined for a failed task. */
function taskEvent(ev) {
  if (ev === null || typeof ev !== "object") return ev
  if (!("result" in ev)) return { id: ev.id, task: ev.task, result: undefined, ...ev }
  runResult(ev.result)
  return ev
}

module.exports = { InMemoryTaskStore, FileTaskStore, resolveStore, storeObject, buildAgentCard, startServer, startA2AServer }
