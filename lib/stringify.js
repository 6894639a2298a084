"use strict"
// JSON text as JSON.stringify writes it (toJSON, wrapper objects, members left out or nulled),
// at any depth: past JSON.stringify's recursion a writer of our own, without recursion, gives
// the same text. `encodeLenient` is the forgiving form for the wire (a cycle left out, a BigInt
// as its digits).

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

module.exports = { encode, encodeLenient, stringifyDeep }
