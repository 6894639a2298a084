"use strict"
// HTTP tools (SPEC §7).

const { native } = require("./native.js")
const { encode } = require("./crossing.js")
const { wrapNative, remember } = require("./core-tools.js")

/**
 * One HTTP endpoint declared as a tool. The object crosses whole; the core reads every field.
 * @typedef {object} HttpToolOptions
 * @property {string} name
 * @property {string} description
 * @property {string} method
 * @property {string} url `{name}` placeholders are filled from the matching arguments
 * @property {Record<string, string>} [headers]
 * @property {string[]} [query] argument names sent in the querystring
 * @property {"json" | "form" | "raw"} [body]
 * @property {Record<string, unknown>} [inputSchema]
 * @property {number} [timeout] milliseconds
 * @property {"text" | "json" | "status+text"} [resultMode]
 */

/**
 * @param {HttpToolOptions} opts
 * @returns {import("./core-tools.js").Tool}
 */
function httpTool(opts) {
  if (opts === null || typeof opts !== "object") throw new TypeError("httpTool: options must be an object")
  const handle = native.httpTool(encode(opts))
  const t = wrapNative(handle)
  // The declared schema object itself, as the reference hands it back.
  if (opts.inputSchema != null) t.inputSchema = opts.inputSchema
  return remember(handle, t)
}

module.exports = { httpTool }
