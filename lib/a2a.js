"use strict"
// Remote A2A agents as tools (SPEC §7A).

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { withSignal } = require("./abort.js")
const { wrapNative } = require("./core-tools.js")

/** @typedef {import("../index").Agent} Agent */

/** @typedef {import("../index").AgentConfig} AgentConfig */

/**
 * A config file's `agents` block: entry id (a label only) -> its settings.
 * @typedef {Record<string, AgentConfig>} AgentsConfig
 */

/**
 * An Agent descriptor: plain data, the four fields present even when unset.
 * @param {Agent} opts
 * @returns {Agent}
 */
function agent(opts) {
  /** @type {Agent} */
  const made = { card: opts.card, headers: opts.headers, timeout: opts.timeout, pollEvery: opts.pollEvery }
  if (opts.trustedOrigins !== undefined) made.trustedOrigins = opts.trustedOrigins
  return made
}

/**
 * The `agents` option as a list (an iterable is spread as the reference spreads it).
 * @param {Iterable<Agent> | null | undefined} agents
 * @returns {Agent[] | undefined}
 */
const agentList = (agents) => (agents == null ? undefined : [...agents])

/**
 * One tool per skill the agent's card advertises.
 * @param {Agent} ag
 * @returns {Promise<import("./core-tools.js").Tool[]>}
 */
const agentTools = async (ag) => (await withSignal(undefined, () => native.agentTools(encode(ag)))).map(wrapNative)

/**
 * The enabled entries of an `agents` block, as descriptors in order.
 * @param {AgentsConfig | undefined} block
 * @returns {Agent[]}
 */
const parseAgentsConfig = (block) =>
  JSON.parse(native.parseAgentsConfig(block === undefined ? undefined : encode(block))).map(agent)

module.exports = { agent, agentList, agentTools, parseAgentsConfig }
