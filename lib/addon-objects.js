"use strict"
// Which JavaScript values stand for addon objects: the shared form a value backed by one (a
// store, a compactor, a clock) crosses as, and which stores are our own (the classes we ship),
// so that they cross as the core's objects rather than as JavaScript methods.

/**
 * The shared form of an addon object, as its `shared()` hands it out.
 * @typedef {import("../binding").ExternalObject<unknown>} SharedForm
 */

/**
 * A value backed by an addon object -> that object's shared form (`shared()`).
 * @type {WeakMap<object, SharedForm>}
 */
const natives = new WeakMap()

/**
 * The prototypes of the store classes we ship (conversation and Task stores alike).
 * @type {Set<object>}
 */
const shipped = new Set()

/**
 * Whether `value` is one of our own stores, the one rule every option that takes a store asks:
 * an instance of one of the classes we ship, not of a subclass (a subclass keeps its own
 * methods, called as JavaScript, as the reference calls them) nor a lookalike.
 * @param {unknown} value
 * @returns {value is object}
 */
function isOwnStore(value) {
  return value !== null && typeof value === "object" && shipped.has(Object.getPrototypeOf(value))
}

module.exports = { natives, shipped, isOwnStore }
