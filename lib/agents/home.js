"use strict"
// A persona's home (SPEC §7E): its soul, its `memory` tool, and the constants of both.

const { native } = require("../native.js")
const { wrapNative } = require("../core-tools.js")

const composeSoul = (dir) => JSON.parse(native.composeSoul(String(dir)))
const memoryTool = (dir) => wrapNative(native.memoryTool(String(dir)))

const agentConstants = JSON.parse(native.agentConstants())

module.exports = { composeSoul, memoryTool, agentConstants }
