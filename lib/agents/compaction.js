"use strict"
// Compaction (SPEC §7F): the core's compactor with the host's `summarize`, as a `beforeLLM` hook.

const { native } = require("../native.js")
const { encode, fromCore, bridge, callable, natives } = require("../crossing.js")

function compactor(opts) {
  const o = opts ?? {}
  const summarize =
    typeof o.summarize === "function"
      ? o.summarize
      : () => {
          throw new TypeError("compactor: `summarize` is not a function")
        }
  const countTokens = callable("compactor", "countTokens", o.countTokens)
  const plain = { maxTokens: o.maxTokens, keepTail: o.keepTail, flushToMemory: o.flushToMemory }
  const handle = new native.NativeCompactor(encode(plain), bridge(summarize, o), countTokens && bridge(countTokens))
  const hook = async (ev) => {
    const out = fromCore(await handle.run(encode({ messages: ev?.messages })))
    return out === null ? undefined : out
  }
  natives.set(hook, handle.shared())
  return hook
}

const estimateTokens = (messages) => native.estimateTokens(encode(messages))

module.exports = { compactor, estimateTokens }
