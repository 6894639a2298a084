"use strict"
// Everything the package exports, gathered from the modules under lib/; scripts/bundle.mjs
// bundles them into one file (dist/toolnexus.js) that the root index.js loads. Every behaviour
// lives in the Rust core (crates/core), reached through the loader (loader.js). The modules here do, one SPEC area each, only what Node-API cannot
// express: JSON at the boundary with JavaScript's own semantics, Promises and AbortSignals,
// WHATWG fetch Responses, the decorator registry, and tool objects that stay the caller's own.

const { native } = require("./native.js")
const { pending, authRequired, pendingOf, sanitize } = require("./types.js")
const { defineTool, tool, collectTools } = require("./define-tool.js")
const { toOpenAI, toAnthropic, toGemini } = require("./adapters.js")
const { finishReasonFor, contentText, argsObject, argsString, toolCallsOf, openAIMessagesToAnthropic, openAIToolsToAnthropic, openAIToolChoiceToAnthropic, hasSystemMessage } = require("./translate.js")
const { loadSkills, listSkills } = require("./skill.js")
const { httpTool } = require("./http.js")
const { createBuiltinTools, selectBuiltins, builtinsEnabled } = require("./builtin.js")
const { parseMcpConfig, expandEnvHeaders, elicitationToRequest, answerToElicitResult, loadMcp, listMcpTools } = require("./mcp.js")
const { exposedMcpTools, buildMcpServer } = require("./mcpserve.js")
const { agent, agentTools, parseAgentsConfig } = require("./a2a.js")
const { Toolkit, createToolkit } = require("./toolkit.js")
const { Client, createClient, Conversation, InMemoryConversationStore, createInProcessClient } = require("./client.js")
const { InMemoryTaskStore, FileTaskStore, resolveStore, buildAgentCard, startA2AServer } = require("./serve.js")
const { SqliteStore, PostgresStore, RedisStore } = require("./stores.js")

// ---- agents (SPEC §7D-§7F): lib/agents, compiled on first use ----

/** @typedef {typeof import("./agents/index.js")} AgentsModule */

/** @type {Array<keyof AgentsModule>} */
const AGENT_MEMBERS = [
  "compactor", "estimateTokens", "composeSoul", "memoryTool", "runGated", "allTodosDone", "guardedHooks", "Loop",
  "BOOTSTRAP_ORDER", "MAX_FILE_BYTES", "TRUNCATION_NOTICE", "HEARTBEAT_OK", "HEARTBEAT_PROMPT", "systemClock",
  "isVerbError", "Handle", "AgentRuntime", "Agent", "agent", "harness", "fromDir", "startAgent",
]

/**
 * The `agents` namespace. Its members start as accessors; the first read or write of any of
 * them loads lib/agents and turns every member into the plain data property it is from then on.
 * Either way, each member reads as lib/agents' own.
 */
const agents = /** @type {AgentsModule} */ ({})

/** Load lib/agents and put each of its members on `agents` as a plain data property. */
function loadAgents() {
  const members = require("./agents/index.js")
  for (const key of Object.keys(members)) {
    Object.defineProperty(agents, key, { value: /** @type {Record<string, unknown>} */ (members)[key], writable: true, enumerable: true, configurable: true })
  }
}

for (const key of AGENT_MEMBERS) {
  Object.defineProperty(agents, key, {
    get() {
      loadAgents()
      return agents[key]
    },
    set(value) {
      loadAgents()
      // Whatever the caller sets (TypeScript types a write through a union of keys as `never`).
      agents[key] = /** @type {never} */ (value)
    },
    enumerable: true,
    configurable: true,
  })
}

module.exports = {
  pending,
  authRequired,
  pendingOf,
  sanitize,
  defineTool,
  tool,
  collectTools,
  toOpenAI,
  toAnthropic,
  toGemini,
  finishReasonFor,
  contentText,
  argsObject,
  argsString,
  toolCallsOf,
  openAIMessagesToAnthropic,
  openAIToolsToAnthropic,
  openAIToolChoiceToAnthropic,
  hasSystemMessage,
  SKILL_TOOL_DESCRIPTION: native.SKILL_TOOL_DESCRIPTION,
  SKILLS_PROMPT_PREAMBLE: native.SKILLS_PROMPT_PREAMBLE,
  loadSkills,
  listSkills,
  httpTool,
  createBuiltinTools,
  selectBuiltins,
  builtinsEnabled,
  parseMcpConfig,
  expandEnvHeaders,
  elicitationToRequest,
  answerToElicitResult,
  loadMcp,
  listMcpTools,
  exposedMcpTools,
  buildMcpServer,
  agent,
  agentTools,
  parseAgentsConfig,
  Toolkit,
  createToolkit,
  Client,
  createClient,
  Conversation,
  InMemoryConversationStore,
  createInProcessClient,
  InMemoryTaskStore,
  FileTaskStore,
  resolveStore,
  SqliteStore,
  PostgresStore,
  RedisStore,
  buildAgentCard,
  startA2AServer,
  agents,
}
