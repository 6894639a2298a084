"use strict"
// AbortSignals wired to the core's cancel tokens: a token a signal fires, and a native call run
// under a signal (an abort rejects with the signal's own reason). A served A2A Task's signal
// gives its token the Task's id.

const { native } = require("./native.js")
const { fromCore } = require("./decode.js")

/** @typedef {import("./decode.js").Crossed} Crossed */

/**
 * A core cancel token wired to a signal (none without one), and how to unhook it.
 * @typedef {{ token: import("../binding").CancelToken | undefined, release: () => void }} Wiring
 */

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

module.exports = { abortWiring, taskSignals, withSignal, underSignal }
