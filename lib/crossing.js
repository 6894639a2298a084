"use strict"
// Values crossing between JavaScript and the core: JSON with JavaScript's own semantics
// (toJSON, undefined, BigInt, very deep values), the calling convention of bridged functions
// (a value in, its JSON out, at once or later for a Promise), options crossing whole, and
// AbortSignals wired to the core's cancel tokens.

const { native } = require("./native.js")

/**
 * A value from the core: its JSON text, or `[json, places, ...strings]` (see `fromCore`).
 * @typedef {string | string[]} Crossed
 */

/**
 * A function in the core's calling convention (a bridged function): `(json, replyId, inPlace)`,
 * answering JSON text at once or `undefined` and later through `native.reply` / `native.replyError`.
 * @typedef {JsonFn} Bridged
 */

/**
 * The shared form of an addon object, as its `shared()` hands it out.
 * @typedef {import("../binding").ExternalObject<unknown>} SharedForm
 */

/**
 * An options document: its JSON, the bridged functions its `{"\u0000fn": n}` markers name and
 * the addon objects its `{"\u0000obj": n}` markers name (the constructors' first three arguments).
 * @typedef {[string, JsonFn[], import("../binding").ExternalObject<Shared>[]]} Crossing
 */

/**
 * A core cancel token wired to a signal (none without one), and how to unhook it.
 * @typedef {{ token: import("../binding").CancelToken | undefined, release: () => void }} Wiring
 */

/**
 * JSON text for `value` as JSON.stringify writes it ("null" where it writes nothing), deep
 * values included.
 * @param {unknown} value
 * @returns {string}
 */
const encode = (value) => {
  let text
  try {
    text = JSON.stringify(value)
  } catch (e) {
    if (!tooDeep(e)) throw e
    text = stringifyDeep(value, false)
  }
  return text === undefined ? "null" : text
}

/**
 * JSON.stringify ran out of stack: the value nests deeper than its recursion goes.
 * @param {unknown} e
 * @returns {boolean}
 */
const tooDeep = (e) => e instanceof RangeError && /call stack/i.test(e.message)

/**
 * Whether `v` has the internal slot `valueOf` (of a wrapper's prototype) checks for.
 * @param {() => unknown} valueOf
 * @param {unknown} v
 * @returns {boolean}
 */
function hasSlot(valueOf, v) {
  try {
    valueOf.call(v)
    return true
  } catch {
    return false
  }
}

/**
 * JSON.stringify(value) without recursion, for values too deep for it: the same text, read the
 * same way (toJSON, wrapper objects, skipped and nulled members, a TypeError for a cycle or a
 * BigInt). `lenient` is encodeLenient's replacer: a BigInt as its digits, a cycle left out.
 * @param {unknown} value
 * @param {boolean} lenient
 * @returns {string | undefined} undefined where JSON.stringify gives undefined
 */
function stringifyDeep(value, lenient) {
  /** @type {string[]} */
  const out = []
  /**
   * One container being written: an array by index, an object by its own keys.
   * @type {Array<{ v: unknown[], array: true, keys: null, n: number, i: number, first: boolean } | { v: object, array: false, keys: string[], n: number, i: number, first: boolean }>}
   */
  const frames = []
  /** @type {Set<unknown>} */
  const open = new Set()
  /**
   * The member `key` of `holder` as JSON.stringify reads it (toJSON, wrapper objects).
   * @param {any} holder
   * @param {string} key
   * @returns {unknown}
   */
  const resolve = (holder, key) => {
    let v = holder[key]
    if ((typeof v === "object" && v !== null) || typeof v === "bigint") {
      const toJSON = v.toJSON
      if (typeof toJSON === "function") v = toJSON.call(v, key)
    }
    if (lenient) {
      if (typeof v === "bigint") v = v.toString()
      else if (typeof v === "object" && v !== null && open.has(v)) return undefined
    }
    if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) {
        if (hasSlot(Number.prototype.valueOf, v)) v = Number(v)
        else if (hasSlot(String.prototype.valueOf, v)) v = String(v)
        else if (hasSlot(Boolean.prototype.valueOf, v)) v = Boolean.prototype.valueOf.call(v)
        else if (hasSlot(BigInt.prototype.valueOf, v)) v = BigInt.prototype.valueOf.call(v)
      }
    }
    return v
  }
  /**
   * The JSON of a value that is not a container; undefined where JSON leaves it out.
   * @param {unknown} v
   * @returns {string | undefined}
   */
  const scalar = (v) => {
    switch (typeof v) {
      case "string":
        return JSON.stringify(v)
      case "number":
        return Number.isFinite(v) ? String(v) : "null"
      case "boolean":
        return v ? "true" : "false"
      case "bigint":
        throw new TypeError("Do not know how to serialize a BigInt")
      default:
        return v === null ? "null" : undefined
    }
  }
  /**
   * Open a container: its frame, and its opening bracket.
   * @param {object} v
   */
  const enter = (v) => {
    if (open.has(v)) throw new TypeError("Converting circular structure to JSON")
    open.add(v)
    const array = Array.isArray(v)
    frames.push(
      /** @type {(typeof frames)[number]} */ ({ v, array, keys: array ? null : Object.keys(v), n: array ? v.length : 0, i: 0, first: true }),
    )
    out.push(array ? "[" : "{")
  }
  const top = resolve({ "": value }, "")
  if (top === null || typeof top !== "object") return scalar(top)
  enter(top)
  while (frames.length > 0) {
    const f = frames[frames.length - 1]
    if (f.i >= (f.array ? f.n : f.keys.length)) {
      out.push(f.array ? "]" : "}")
      open.delete(f.v)
      frames.pop()
      continue
    }
    const key = f.array ? String(f.i) : f.keys[f.i]
    f.i++
    const v = resolve(f.v, key)
    const nested = v !== null && typeof v === "object"
    let text = nested ? undefined : scalar(v)
    if (!nested && text === undefined) {
      if (!f.array) continue
      text = "null"
    }
    if (!f.first) out.push(",")
    f.first = false
    if (!f.array) out.push(JSON.stringify(key), ":")
    if (nested) enter(v)
    // `text` is set here: a scalar's JSON, or "null" for an array member JSON leaves out.
    else out.push(/** @type {string} */ (text))
  }
  return out.join("")
}
/**
 * A value from the core: its JSON text, or `[json, places, ...strings]` when it carries strings
 * too long to go inside one JSON text (see `json::Pieces` in the core): each place is
 * `[index, ...path]`, and the string `strings[index]` goes back at that path.
 * @param {Crossed} crossed
 * @returns {any} the parsed JSON value
 */
function fromCore(crossed) {
  if (typeof crossed === "string") return JSON.parse(crossed)
  const root = JSON.parse(crossed[0])
  let value = root
  for (const [index, ...path] of JSON.parse(crossed[1])) {
    const text = crossed[2 + index]
    if (path.length === 0) {
      value = text
      continue
    }
    let at = root
    for (let i = 0; i < path.length - 1; i++) at = at[path[i]]
    at[path[path.length - 1]] = text
  }
  return value
}

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

// ---- options, crossed whole ----
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

/**
 * JSON for a value crossing into the core, with the wire's leniency: where JSON.stringify
 * would throw (a circular reference, a BigInt), the cycle is left out and the BigInt is
 * written as its digits, instead of failing the whole run.
 * @param {unknown} value
 * @returns {string}
 */
function encodeLenient(value) {
  try {
    return encode(value)
  } catch {
    /** @type {unknown[]} */
    const ancestors = []
    let text
    try {
      text = JSON.stringify(value, function replace(key, v) {
        if (typeof v === "bigint") return v.toString()
        if (v === null || typeof v !== "object") return v
        // `this` is the object holding `key`: drop the ancestors we have walked back out of.
        while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop()
        if (ancestors.includes(v)) return undefined
        ancestors.push(v)
        return v
      })
    } catch (e) {
      if (!tooDeep(e)) throw e
      text = stringifyDeep(value, true)
    }
    return text === undefined ? "null" : text
  }
}

/** Wire an AbortSignal to a fresh core cancel token; `release` unhooks the listener. */
const noRelease = () => {}
/** @type {Wiring} */
const NO_SIGNAL = { token: undefined, release: noRelease }

// The signals a served A2A Task's run is handed, with the Task's id: a run started with one
// reports to the Task's caller (its token names the Task).
/** @type {WeakMap<AbortSignal, string>} */
const taskSignals = new WeakMap()

/**
 * A cancel token fired by `signal`; none at all without a signal, unless `always` asks for one.
 * @overload
 * @param {AbortSignal | null | undefined} signal
 * @param {true} always
 * @returns {{ token: import("../binding").CancelToken, release: () => void }} a token, always
 */
/**
 * @overload
 * @param {AbortSignal | null | undefined} signal
 * @param {boolean} [always]
 * @returns {Wiring}
 */
/**
 * @param {AbortSignal | null | undefined} signal
 * @param {boolean} [always]
 * @returns {Wiring}
 */
function abortWiring(signal, always = false) {
  if (!signal && !always) return NO_SIGNAL
  const token = new native.CancelToken(signal ? taskSignals.get(signal) : undefined)
  if (!signal) return { token, release: noRelease }
  const fire = () => {
    const r = signal.reason
    token.cancel(r instanceof Error ? r.message : r === undefined ? undefined : String(r))
  }
  if (signal.aborted) {
    fire()
    return { token, release: () => {} }
  }
  signal.addEventListener("abort", fire, { once: true })
  return { token, release: () => signal.removeEventListener("abort", fire) }
}

/**
 * Run one native call under an optional signal; an abort rejects with the signal's own reason.
 * @template T
 * @param {AbortSignal | null | undefined} signal
 * @param {(token: import("../binding").CancelToken | undefined) => T | PromiseLike<T>} call
 * @returns {Promise<T>}
 */
async function withSignal(signal, call) {
  const { token, release } = abortWiring(signal)
  try {
    return await call(token)
  } catch (e) {
    if (signal?.aborted) throw signal.reason
    throw e
  } finally {
    release()
  }
}

/**
 * `withSignal`, and the value the core answered with, parsed (`fromCore`).
 * @param {AbortSignal | null | undefined} signal
 * @param {(token: import("../binding").CancelToken | undefined) => PromiseLike<Crossed>} call
 * @returns {Promise<any>} the parsed JSON value
 */
const underSignal = async (signal, call) => fromCore(await withSignal(signal, call))

module.exports = { shipped, isOwnStore, encode, encodeLenient, stringifyDeep, fromCore, isThenable, answer, lift, bridge, plainFn, loggerOption, warnWith, FN, OBJ, raw, natives, crossing, crossingOf, abortWiring, taskSignals, withSignal, underSignal }
