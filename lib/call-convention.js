"use strict"
// The calling convention of bridged functions: how the core calls a JavaScript function (a
// value's JSON in) and how the answer goes back (JSON text at once, or later for a Promise, an
// error included). `bridge` and `lift` wrap a plain function to speak it.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { fromCore } = require("./decode.js")

/** @typedef {import("./decode.js").Crossed} Crossed */

/**
 * A function in the core's calling convention (a bridged function): `(json, replyId, inPlace)`,
 * answering JSON text at once or `undefined` and later through `native.reply` / `native.replyError`.
 * @typedef {JsonFn} Bridged
 */

/**
 * Whether `v` has a `then` method (a Promise or any thenable).
 * @param {unknown} v
 * @returns {v is PromiseLike<unknown>}
 */
const isThenable = (v) =>
  v !== null && (typeof v === "object" || typeof v === "function") && typeof /** @type {{ then?: unknown }} */ (v).then === "function"

// The core calls a bridged function as `(json, replyId)`. It answers at once by returning
// JSON text; a Promise answers later through native.reply / native.replyError, so the core
// never has to wrap a Promise per call.
/**
 * @template T
 * @param {number} id the reply id the core gave the call
 * @param {T | PromiseLike<T>} out what the function returned
 * @param {(value: T) => string} finish the JSON text for a settled value
 * @returns {string | undefined} the answer now, or undefined when it comes later
 */
function answer(id, out, finish) {
  if (!isThenable(out)) return finish(out)
  Promise.resolve(out).then(
    (value) => {
      let text
      try {
        text = finish(value)
      } catch (e) {
        native.replyError(id, e)
        return
      }
      native.reply(id, text)
    },
    (e) => native.replyError(id, e),
  )
  return undefined
}

/** @param {unknown} text */
const asText = (text) => String(text)

/**
 * A function answering JSON text (or a Promise of it), in the core's calling convention.
 * @param {(json: Crossed) => unknown} fn called with the value as it crossed, unparsed
 * @returns {JsonFn}
 */
const lift = (fn) => (json, id) => answer(id, fn(json), asText)

/**
 * Bridge a JS function to the core: a value in, its JSON out (or later, for a Promise). Told
 * the value is one it may change in place (`inPlace`), a falsy answer gives the value back as
 * the function left it.
 * @param {(this: unknown, value: any) => unknown} fn called with the parsed JSON value
 * @param {unknown} [self] `this` for the calls
 * @returns {JsonFn}
 */
const bridge = (fn, self) => (json, id, inPlace) => {
  const value = fromCore(json)
  return answer(id, fn.call(self, value), inPlace ? (out) => encode(out || value) : encode)
}

module.exports = { isThenable, answer, lift, bridge }
