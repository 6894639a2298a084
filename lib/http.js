"use strict"
// HTTP tools (SPEC §7).

const { native } = require("./native.js")
const { encode } = require("./crossing.js")
const { wrapNative, remember } = require("./core-tools.js")

function httpTool(opts) {
  if (opts === null || typeof opts !== "object") throw new TypeError("httpTool: options must be an object")
  const handle = native.httpTool(encode(opts))
  const t = wrapNative(handle)
  // The declared schema object itself, as the reference hands it back.
  if (opts.inputSchema != null) t.inputSchema = opts.inputSchema
  return remember(handle, t)
}

module.exports = { httpTool }
