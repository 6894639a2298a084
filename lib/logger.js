"use strict"
// The `logger` option: warnings handed to the caller's logger (its `warn` method), and to
// console.warn whenever the logger fails to take one.

const { fromCore } = require("./decode.js")
const { isThenable } = require("./call-convention.js")
const { raw } = require("./options-doc.js")

/**
 * Tell `logger` (an object with a `warn(message)` method: console, pino, winston, ...) one
 * warning: `logger.warn` is read now and called as a method. A throw, a rejected Promise, or a
 * `warn` that is not a function never reaches the work that warned: the text then goes to
 * `console.warn`, so no warning is lost.
 * @param {unknown} logger
 * @param {string} text
 */
function warnWith(logger, text) {
  try {
    const warn = /** @type {{ warn?: unknown }} */ (logger).warn
    if (typeof warn !== "function") throw new TypeError("logger.warn is not a function")
    const out = warn.call(logger, text)
    if (isThenable(out)) Promise.resolve(out).catch(() => console.warn(text))
  } catch {
    console.warn(text)
  }
}

/**
 * The `logger` option as a function in the core's calling convention, told each warning's
 * text (see `warnWith`); undefined when no logger is given (null or undefined).
 * @param {unknown} logger
 * @returns {JsonFn | undefined}
 */
const loggerOption = (logger) =>
  logger == null
    ? undefined
    : raw((json) => {
        warnWith(logger, String(fromCore(json)))
        return "null"
      })

module.exports = { warnWith, loggerOption }
