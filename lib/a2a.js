"use strict"
// Remote A2A agents as tools (SPEC §7A).

const { native } = require("./native.js")
const { encode, withSignal } = require("./crossing.js")
const { wrapNative } = require("./core-tools.js")

/** An Agent descriptor: plain data, the four fields present even when unset. */
function agent(opts) {
  return { card: opts.card, headers: opts.headers, timeout: opts.timeout, pollEvery: opts.pollEvery }
}

/** The `agents` option as a list (an iterable is spread as the reference spreads it). */
const agentList = (agents) => (agents == null ? undefined : [...agents])

const agentTools = async (ag) => (await withSignal(undefined, () => native.agentTools(encode(ag)))).map(wrapNative)

const parseAgentsConfig = (block) =>
  JSON.parse(native.parseAgentsConfig(block === undefined ? undefined : encode(block))).map(agent)

module.exports = { agent, agentList, agentTools, parseAgentsConfig }
