"use strict"
// HTTP tools (SPEC §7).

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { wrapNative, remember } = require("./core-tools.js")
const { isStandardSchema, declaredSchema, shownSchema, validateArgs } = require("./schema.js")

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
 * @property {Record<string, unknown>} [inputSchema] a JSON Schema, or a Standard Schema (its JSON
 *   Schema is declared; each call's arguments are validated by it and the request made of its output)
 * @property {number} [timeout] milliseconds
 * @property {"text" | "json" | "status+text"} [resultMode]
 */

/**
 * @param {HttpToolOptions} opts
 * @returns {import("./core-tools.js").Tool}
 */
function httpTool(opts) {
  // Anything but an object is the core's to refuse (a TypeError naming the options).
  const given = opts !== null && typeof opts === "object" ? opts.inputSchema : undefined
  if (!isStandardSchema(given)) {
    const handle = native.httpTool(encode(opts))
    const t = wrapNative(handle)
    // The declared schema object itself, as the reference hands it back.
    if (given != null) t.inputSchema = given
    return remember(handle, t)
  }
  // A Standard Schema: the core declares its JSON Schema (none when it has none: refused where
  // the list is sent), and each call's arguments are validated, the request made of the
  // validated value. The tool is not remembered as the core's own, so every call passes here.
  const handle = native.httpTool(encode({ ...opts, inputSchema: declaredSchema(given) }))
  const t = wrapNative(handle)
  t.inputSchema = /** @type {Record<string, unknown>} */ (shownSchema(given))
  const send = t.execute
  t.execute = async (args, ctx) => {
    try {
      const checked = await validateArgs(given, t.name, args ?? {})
      if ("failure" in checked) return checked.failure
      return await send(/** @type {Record<string, unknown>} */ (checked.value), ctx)
    } catch (e) {
      return { output: e instanceof Error ? e.message : String(e), isError: true }
    }
  }
  return t
}

module.exports = { httpTool }
