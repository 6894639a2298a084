"use strict"
// The core types and suspension helpers (SPEC §1, §10).

const { native } = require("./native.js")
const { encode } = require("./crossing.js")

function pending(request) {
  if (request == null) throw new TypeError(`Cannot read properties of ${request} (reading 'id')`)
  // A primitive is spread as the reference spreads it (a string into its characters).
  if (typeof request !== "object") request = { ...request }
  // An explicit id of null/undefined keeps its place; the core fills it in.
  const fields = "id" in request && request.id == null ? { ...request, id: null } : request
  return JSON.parse(native.pending(encode(fields)))
}

function authRequired(url, prompt) {
  return JSON.parse(native.authRequired(String(url), prompt === undefined ? undefined : String(prompt)))
}

function pendingOf(result) {
  return result.metadata?.pending
}

const sanitize = (value) => native.sanitize(String(value))


/**
 * A RunResult as the reference builds it: every tool call carries `metadata`, `undefined` when
 * the tool gave none (JSON cannot say "present but undefined").
 */
function runResult(r) {
  const calls = r?.toolCalls
  if (Array.isArray(calls)) {
    for (const c of calls) if (c !== null && typeof c === "object" && !("metadata" in c)) c.metadata = undefined
  }
  return r
}

module.exports = { pending, authRequired, pendingOf, sanitize, runResult }
