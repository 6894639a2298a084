"use strict"
// Tools across the boundary: a tool the core owns as a plain Tool object (`wrapNative`), and a
// caller's own Tool as the core calls it (`toolSpec`, `toolOption`: its declaration, and
// `execute` with a signal of its own when the caller can give up).

const { native } = require("./native.js")
const { encode, encodeLenient } = require("./stringify.js")
const { fromCore } = require("./decode.js")
const { answer } = require("./call-convention.js")
const { raw } = require("./options-doc.js")
const { abortWiring } = require("./abort.js")
const { declaredSchema, outputSchemaOf, warnUnsendable } = require("./schema.js")

/** @typedef {import("../index").ToolResult} ToolResult */

/** @typedef {import("../index").ToolContext} ToolContext */

/**
 * A Tool's `execute`.
 * @typedef {(args?: Record<string, unknown>, ctx?: ToolContext) => Promise<ToolResult>} ToolExecute
 */

/**
 * The uniform Tool shape (what `wrapNative` and `defineTool` make).
 * @typedef {object} Tool
 * @property {string} name
 * @property {string} description
 * @property {Record<string, unknown>} inputSchema a JSON Schema object
 * @property {string} source
 * @property {ToolExecute} execute
 * @property {Record<string, unknown>} [outputSchema] the JSON Schema of its structured result
 */

/**
 * A value a caller hands over as a Tool: its fields are read as they are, and checked where
 * they matter (`name`, `execute`).
 * @typedef {object} ToolLike
 * @property {unknown} [name]
 * @property {unknown} [description]
 * @property {unknown} [inputSchema]
 * @property {unknown} [source]
 * @property {unknown} [execute]
 * @property {unknown} [outputSchema]
 */

/**
 * A JS tool's `execute` as `signalled` calls it: the arguments are the call's JSON, parsed.
 * @typedef {(args: any, ctx: ToolContext | undefined) => unknown} SignalledExecute
 */

/**
 * A ToolResult from the core: its JSON, or for a long output `[json of the rest, output]`
 * (the output crosses as a string of its own, unescaped).
 * @param {string | [string, string]} crossed
 * @returns {ToolResult}
 */
const toolResult = (crossed) => {
  if (typeof crossed === "string") return JSON.parse(crossed)
  const result = JSON.parse(crossed[0])
  result.output = crossed[1]
  return result
}

/**
 * A tool the core owns, as a plain Tool object: its declaration read once, `execute`
 * crossing with the JSON of the arguments and of `{ answer, timeout }`, `ctx.signal` wired
 * to the call's cancel token.
 * @param {import("../binding").NativeTool} handle
 * @returns {Tool}
 */
function wrapNative(handle) {
  const { name, description, inputSchema, source } = JSON.parse(handle.decl())
  return remember(handle, {
    name,
    description,
    inputSchema,
    source,
    async execute(args, ctx) {
      const ctxJson = ctx == null ? undefined : encode({ answer: ctx.answer, timeout: ctx.timeout })
      const { token, release } = abortWiring(ctx?.signal)
      try {
        return toolResult(await handle.execute(encode(args ?? {}), ctxJson, token))
      } finally {
        release()
      }
    },
  })
}

// Tool objects made by wrapNative, with what they were made with: while a tool still has all
// of it, a server built from it (buildMcpServer) runs the core's tool without a JS hop.
/** @type {WeakMap<object, { handle: import("../binding").NativeTool, name: string, description: string, inputSchema: Record<string, unknown>, source: string, execute: ToolExecute }>} */
const nativeTools = new WeakMap()

/**
 * Record `t` as made from `handle`, with its fields as they are now; `t` back.
 * @param {import("../binding").NativeTool} handle
 * @param {Tool} t
 * @returns {Tool}
 */
function remember(handle, t) {
  nativeTools.set(t, { handle, name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source, execute: t.execute })
  return t
}

/**
 * The core's handle behind `t`, when `t` is a wrapNative tool nobody has changed.
 * @param {ToolLike} t
 * @returns {import("../binding").NativeTool | undefined}
 */
function nativeHandle(t) {
  const r = t !== null && typeof t === "object" ? nativeTools.get(t) : undefined
  const same = r && r.name === t.name && r.description === t.description && r.inputSchema === t.inputSchema && r.source === t.source && r.execute === t.execute
  return same ? r.handle : undefined
}


/**
 * A JS tool's bridged call. A call carrying `call` (a number) comes from a caller that can give
 * up (a served MCP request whose client left): ctx gets an AbortSignal of its own, aborted by a
 * later `{ abort }` message with the same number.
 * @param {SignalledExecute} execute
 * @returns {JsonFn}
 */
function signalled(execute) {
  /** @type {Map<unknown, AbortController>} */
  const signals = new Map()
  return (json, id) => {
    const msg = fromCore(json)
    if (msg.abort !== undefined) {
      signals.get(msg.abort)?.abort()
      signals.delete(msg.abort)
      return "null"
    }
    if (msg.call === undefined) return answer(id, execute(msg.args, msg.ctx), encodeLenient)
    const controller = new AbortController()
    signals.set(msg.call, controller)
    /** @type {Promise<unknown>} */
    let out
    const call = msg.call
    // What the tool tells its caller while it runs: how far along it is, and log entries.
    const progress = (/** @type {unknown} */ progress, /** @type {unknown} */ total, /** @type {unknown} */ message) =>
      native.toolEvent(call, JSON.stringify({ progress, total, message }))
    const log = (/** @type {unknown} */ level, /** @type {unknown} */ data, /** @type {unknown} */ logger) =>
      native.toolEvent(call, JSON.stringify({ level, data, logger }))
    // Ask the caller's model (MCP sampling): its answer, `{ role, content, model, stopReason }`.
    const sample = async (/** @type {unknown} */ params) =>
      JSON.parse(await native.toolAsk(call, "sampling/createMessage", JSON.stringify(params ?? null)))
    // End the event stream the answer goes out on, for the client to come back for the rest.
    const closeStream = () => native.toolEvent(call, '{"closeStream":true}')
    try {
      out = Promise.resolve(execute(msg.args, { ...msg.ctx, signal: controller.signal, progress, log, sample, closeStream }))
    } catch (e) {
      out = Promise.reject(e)
    }
    const done = () => signals.delete(msg.call)
    out.then(done, done)
    return answer(id, out, encodeLenient)
  }
}

/**
 * A caller's Tool as the core takes it (`extraTools[i]`): its declaration as JSON, and its call.
 * @param {ToolLike} t
 * @param {number} i
 * @returns {import("../binding").JsToolSpec}
 */
function toolSpec(t, i) {
  if (t === null || typeof t !== "object" || typeof t.name !== "string" || typeof t.execute !== "function") {
    throw new TypeError(`extraTools[${i}] is not a Tool: it needs a string \`name\` and an \`execute\` function`)
  }
  // `execute` is a function (checked above).
  const call = signalled((args, ctx) => /** @type {Tool} */ (t).execute(args, ctx))
  // A Standard Schema crosses as its JSON Schema (or, when it has none, as no schema: the
  // toolkit refuses it where the list is sent).
  return { decl: encode({ name: t.name, description: t.description, inputSchema: declaredSchema(t.inputSchema), source: t.source, outputSchema: outputSchemaOf(t) }), call }
}

/**
 * The JSON of the part of a ToolContext that crosses (`answer`, `timeout`); none without one.
 * @param {ToolContext | null | undefined} ctx
 * @returns {string | undefined}
 */
const contextJson = (ctx) => (ctx == null ? undefined : encode({ answer: ctx.answer, timeout: ctx.timeout }))

/**
 * A Tool object as the core calls it: its declaration, and `execute` with a signal of its own.
 * Anything that is not an object with an `execute` function is handed back as it is.
 * @param {ToolLike} t
 * @returns {ToolLike}
 */
function toolOption(t) {
  if (t === null || typeof t !== "object" || typeof t.execute !== "function") return t
  // `execute` is a function (checked above).
  const execute = raw(signalled((args, ctx) => /** @type {Tool} */ (t).execute(args, ctx)))
  // The runtime's turns send their tool lists from the core, out of our reach: a Standard
  // Schema with no JSON Schema is declared as the empty object schema, and said so.
  warnUnsendable(t.name, t.inputSchema)
  return { name: t.name, description: t.description, inputSchema: declaredSchema(t.inputSchema), source: t.source, execute }
}

module.exports = { toolResult, wrapNative, remember, nativeHandle, signalled, toolSpec, toolOption, contextJson }
