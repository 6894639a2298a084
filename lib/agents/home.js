"use strict"
// A persona's home (SPEC §7E): its soul, its `memory` tool, and the constants of both.

const { native } = require("../native.js")
const { wrapNative } = require("../core-tools.js")

/**
 * The bootstrap files of `dir` composed into one system prompt, and which of them were there.
 * @param {unknown} dir the persona's directory, taken by its string form
 * @returns {{ soul: string, found: string[] }}
 */
const composeSoul = (dir) => JSON.parse(native.composeSoul(String(dir)))

/**
 * The core's file-backed `memory` tool over `dir`, as a Tool object.
 * @param {unknown} dir the persona's directory, taken by its string form
 * @returns {ReturnType<typeof wrapNative>}
 */
const memoryTool = (dir) => wrapNative(native.memoryTool(String(dir)))

/**
 * The constants the core fixes for personas (the bootstrap files and the heartbeat).
 * @typedef {object} AgentConstants
 * @property {string[]} BOOTSTRAP_ORDER the bootstrap files, in the order they are composed
 * @property {number} MAX_FILE_BYTES the most of one file that is read
 * @property {string} TRUNCATION_NOTICE appended to a file cut at that cap
 * @property {string} HEARTBEAT_OK a heartbeat's answer when there is nothing to report
 * @property {string} HEARTBEAT_PROMPT the prompt each heartbeat sends
 */

/** @type {AgentConstants} */
const agentConstants = JSON.parse(native.agentConstants())

module.exports = { composeSoul, memoryTool, agentConstants }
