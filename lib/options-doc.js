"use strict"
// Options documents: an options object turned into what the core's constructors take, its JSON
// with markers plus the bridged functions and addon objects the markers name (`crossing`).

const { bridge } = require("./call-convention.js")
const { natives } = require("./addon-objects.js")

/**
 * An options document: its JSON, the bridged functions its `{"\u0000fn": n}` markers name and
 * the addon objects its `{"\u0000obj": n}` markers name (the constructors' first three arguments).
 * @typedef {[string, JsonFn[], import("../binding").ExternalObject<Shared>[]]} Crossing
 */

// An options object crosses as one document: its JSON, with each function replaced by
// `{"\u0000fn": n}` (n: its place in the list of bridged functions that goes with it) and each
// value backed by an addon object (a store, a compactor, a clock) by `{"\u0000obj": n}`. The
// core's option types read every field of it, callbacks included (`fn_markers` in the core).

const FN = "\u0000fn"
const OBJ = "\u0000obj"
const RAW = Symbol("toolnexus.bridged")

/**
 * Mark a function that already speaks the core's calling convention (no `bridge` around it).
 * @template {JsonFn} F
 * @param {F} fn
 * @returns {F}
 */
const raw = (fn) => {
  /** @type {F & { [RAW]?: boolean }} */ (fn)[RAW] = true
  return fn
}

/**
 * `f` bridged to be called with no `this` (as a plain function) when it is a function; any
 * other value as it is, for the core to judge (`fn_markers`: unset when falsy, a TypeError naming
 * it when it is called otherwise).
 * @param {unknown} f
 * @returns {unknown}
 */
const plainFn = (f) => (typeof f === "function" ? raw(bridge(/** @type {(v: any) => unknown} */ (f))) : f)

/**
 * `[json, fns, objects]` for `value`: a function is bridged with `this` bound to the object
 * holding it (or to the object `origins` says that holder stands for: an adapted copy stands
 * for the caller's own object).
 * @param {unknown} value
 * @param {Map<unknown, unknown>} [origins]
 * @returns {Crossing}
 */
function crossing(value, origins) {
  /** @type {JsonFn[]} */
  const fns = []
  /** @type {import("../binding").ExternalObject<Shared>[]} */
  const objects = []
  const json = JSON.stringify(value, function mark(key, v) {
    if (v === null || (typeof v !== "object" && typeof v !== "function")) return v
    const shared = natives.get(v)
    if (shared !== undefined) {
      // What `shared()` hands out is the core's `External<Shared>`; the binding types it loosely.
      objects.push(/** @type {import("../binding").ExternalObject<Shared>} */ (shared))
      return { [OBJ]: objects.length - 1 }
    }
    if (typeof v !== "function") return v
    fns.push(v[RAW] ? v : bridge(v, origins?.get(this) ?? this))
    return { [FN]: fns.length - 1 }
  })
  return [json === undefined ? "null" : json, fns, objects]
}

/**
 * `crossing(copy)` for an adapted copy of the caller's options object: a function the copy
 * holds is bridged with `this` bound to `original`, as the reference calls an option's methods.
 * @param {unknown} copy
 * @param {unknown} original
 * @returns {Crossing}
 */
const crossingOf = (copy, original) => crossing(copy, new Map([[copy, original]]))

module.exports = { FN, OBJ, raw, plainFn, crossing, crossingOf }
