"use strict"
// The core types and suspension helpers (SPEC §1, §10).

const { native } = require("./native.js")
const { encode } = require("./stringify.js")

/** @typedef {import("../index").Request} Request */

/** @typedef {import("../index").Answer} Answer */

/**
 * A suspending ToolResult (`metadata.pending` holds the Request the core completed).
 * @param {any} request the Request's fields as the caller gives them (`id` left out or null: the core fills it in); read dynamically
 * @returns {import("./core-tools.js").ToolResult}
 */
function pending(request) {
  if (request == null) throw new TypeError(`Cannot read properties of ${request} (reading 'id')`)
  // A primitive is spread as the reference spreads it (a string into its characters).
  if (typeof request !== "object") request = { ...request }
  // An explicit id of null/undefined keeps its place; the core fills it in.
  const fields = "id" in request && request.id == null ? { ...request, id: null } : request
  return JSON.parse(native.pending(encode(fields)))
}

/**
 * A `kind: "authorization"` suspension pointing at `url`.
 * @param {unknown} url
 * @param {unknown} [prompt]
 * @returns {import("./core-tools.js").ToolResult}
 */
function authRequired(url, prompt) {
  return JSON.parse(native.authRequired(String(url), prompt === undefined ? undefined : String(prompt)))
}

/**
 * The Request a result carries, or undefined when it did not suspend.
 * @param {import("./core-tools.js").ToolResult} result
 * @returns {Request | undefined}
 */
function pendingOf(result) {
  return /** @type {Request | undefined} */ (result.metadata?.pending)
}

/**
 * Every character outside `[a-zA-Z0-9_-]` as `_`.
 * @param {unknown} value
 * @returns {string}
 */
const sanitize = (value) => native.sanitize(String(value))


/**
 * A RunResult as the reference builds it: every tool call carries `metadata`, `undefined` when
 * the tool gave none (JSON cannot say "present but undefined").
 * @param {any} r a RunResult as parsed from the core's JSON (or whatever the caller has)
 * @returns {any} `r` itself
 */
function runResult(r) {
  const calls = r?.toolCalls
  if (Array.isArray(calls)) {
    for (const c of calls) if (c !== null && typeof c === "object" && !("metadata" in c)) c.metadata = undefined
  }
  return r
}

module.exports = { pending, authRequired, pendingOf, sanitize, runResult }
