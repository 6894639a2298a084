"use strict"
// Tools across the boundary: a tool the core owns as a plain Tool object (`wrapNative`), and a
// caller's own Tool as the core calls it (`toolSpec`, `toolOption`: its declaration, and
// `execute` with a signal of its own when the caller can give up).

const { encode, encodeLenient, fromCore, answer, raw, abortWiring } = require("./crossing.js")

/**
 * A ToolResult from the core: its JSON, or for a long output `[json of the rest, output]`
 * (the output crosses as a string of its own, unescaped).
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
const nativeTools = new WeakMap()

function remember(handle, t) {
  nativeTools.set(t, { handle, name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source, execute: t.execute })
  return t
}

/** The core's handle behind `t`, when `t` is a wrapNative tool nobody has changed. */
function nativeHandle(t) {
  const r = t !== null && typeof t === "object" ? nativeTools.get(t) : undefined
  const same = r && r.name === t.name && r.description === t.description && r.inputSchema === t.inputSchema && r.source === t.source && r.execute === t.execute
  return same ? r.handle : undefined
}


/**
 * A JS tool's bridged call. A call carrying `call` (a number) comes from a caller that can give
 * up (a served MCP request whose client left): ctx gets an AbortSignal of its own, aborted by a
 * later `{ abort }` message with the same number.
 */
function signalled(execute) {
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
    let out
    try {
      out = Promise.resolve(execute(msg.args, { ...msg.ctx, signal: controller.signal }))
    } catch (e) {
      out = Promise.reject(e)
    }
    const done = () => signals.delete(msg.call)
    out.then(done, done)
    return answer(id, out, encodeLenient)
  }
}

function toolSpec(t, i) {
  if (t === null || typeof t !== "object" || typeof t.name !== "string" || typeof t.execute !== "function") {
    throw new TypeError(`extraTools[${i}] is not a Tool: it needs a string \`name\` and an \`execute\` function`)
  }
  const call = signalled((args, ctx) => t.execute(args, ctx))
  return { decl: encode({ name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source }), call }
}

const contextJson = (ctx) => (ctx == null ? undefined : encode({ answer: ctx.answer, timeout: ctx.timeout }))

/** A Tool object as the core calls it: its declaration, and `execute` with a signal of its own. */
function toolOption(t) {
  if (t === null || typeof t !== "object" || typeof t.execute !== "function") return t
  const execute = raw(signalled((args, ctx) => t.execute(args, ctx)))
  return { name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source, execute }
}

module.exports = { toolResult, wrapNative, remember, nativeHandle, signalled, toolSpec, toolOption, contextJson }
