"use strict"
// Compaction (SPEC §7F): the core's compactor with the host's `summarize`, as a `beforeLLM` hook.

const { native } = require("../native.js")
const { encode } = require("../stringify.js")
const { fromCore } = require("../decode.js")
const { plainFn, crossingOf } = require("../options-doc.js")
const { natives } = require("../addon-objects.js")

/** @typedef {import("../../index").agents.Message} Message */
/** @typedef {import("../../index").agents.CompactorOptions} CompactorOptions */

/**
 * What the hook reads of a `beforeLLM` event: only its messages (a missing event is read as
 * one without them).
 * @typedef {{ messages?: Message[] }} CompactionEvent
 */

/**
 * A `beforeLLM` hook over the core's compactor. The options are read as the caller gave them:
 * each field may be missing or of another type, and the core's option rules judge it.
 * @param {Partial<CompactorOptions> | null | undefined} opts
 * @returns {(ev: CompactionEvent | null | undefined) => Promise<{ messages: Message[] } | undefined>}
 */
function compactor(opts) {
  const o = opts ?? {}
  // The options cross whole; the core reads every field. `summarize` is called as a method of
  // the options, `countTokens` as a plain function, as the reference calls them.
  const adapted = { ...o, countTokens: plainFn(o.countTokens) }
  const handle = new native.NativeCompactor(...crossingOf(adapted, o))
  /**
   * @param {CompactionEvent | null | undefined} ev
   * @returns {Promise<{ messages: Message[] } | undefined>} the compacted transcript, or nothing when it stays
   */
  const hook = async (ev) => {
    // The core answers the JSON of `{ messages }`, or `null` when nothing changes.
    const out = /** @type {{ messages: Message[] } | null} */ (fromCore(await handle.run(encode({ messages: ev?.messages }))))
    return out === null ? undefined : out
  }
  natives.set(hook, handle.shared())
  return hook
}

/**
 * The core's token estimate of a transcript.
 * @param {unknown} messages the transcript (any value; it crosses as JSON)
 * @returns {number}
 */
const estimateTokens = (messages) => native.estimateTokens(encode(messages))

module.exports = { compactor, estimateTokens }
