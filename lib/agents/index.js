"use strict"
// The `agents` namespace (SPEC §7D-§7F), loaded the first time one of its members is read (see
// index.js): a program that never uses agents does not compile this part at startup.

const { compactor, estimateTokens } = require("./compaction.js")
const { composeSoul, memoryTool, agentConstants } = require("./home.js")
const { guardedHooks, allTodosDone, runGated, Loop } = require("./loop.js")
const { systemClock, isVerbError, Handle, AgentRuntime } = require("./runtime.js")
const { Agent, agent, harness, fromDir, startAgent } = require("./agent.js")

/** The namespace's members, in the order index.js lists them. */
module.exports = {
  compactor,
  estimateTokens,
  composeSoul,
  memoryTool,
  runGated,
  allTodosDone,
  guardedHooks,
  Loop,
  BOOTSTRAP_ORDER: agentConstants.BOOTSTRAP_ORDER,
  MAX_FILE_BYTES: agentConstants.MAX_FILE_BYTES,
  TRUNCATION_NOTICE: agentConstants.TRUNCATION_NOTICE,
  HEARTBEAT_OK: agentConstants.HEARTBEAT_OK,
  HEARTBEAT_PROMPT: agentConstants.HEARTBEAT_PROMPT,
  systemClock,
  isVerbError,
  Handle,
  AgentRuntime,
  Agent,
  agent,
  harness,
  fromDir,
  startAgent,
}
