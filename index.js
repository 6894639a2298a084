"use strict"
// The package entry. Every behaviour lives in the Rust core (crates/core), reached through the
// loader (loader.js). The modules under lib/ do, one SPEC area each, only what Node-API cannot
// express: JSON at the boundary with JavaScript's own semantics, Promises and AbortSignals,
// WHATWG fetch Responses, the decorator registry, and tool objects that stay the caller's own.

const { native } = require("./lib/native.js")
const { pending, authRequired, pendingOf, sanitize } = require("./lib/types.js")
const { defineTool, tool, collectTools } = require("./lib/native-tools.js")
const { toOpenAI, toAnthropic, toGemini } = require("./lib/adapters.js")
const { finishReasonFor, contentText, argsObject, argsString, toolCallsOf, openAIMessagesToAnthropic, openAIToolsToAnthropic, openAIToolChoiceToAnthropic, hasSystemMessage } = require("./lib/translate.js")
const { loadSkills, listSkills } = require("./lib/skill.js")
const { httpTool } = require("./lib/http.js")
const { createBuiltinTools, selectBuiltins, builtinsEnabled } = require("./lib/builtin.js")
const { parseMcpConfig, expandEnvHeaders, elicitationToRequest, answerToElicitResult, loadMcp, listMcpTools } = require("./lib/mcp.js")
const { exposedMcpTools, buildMcpServer } = require("./lib/mcpserve.js")
const { agent, agentTools, parseAgentsConfig } = require("./lib/a2a.js")
const { Toolkit, createToolkit } = require("./lib/toolkit.js")
const { Client, createClient, Conversation, InMemoryConversationStore, createInProcessClient } = require("./lib/client.js")
const { InMemoryTaskStore, FileTaskStore, resolveStore, buildAgentCard, startA2AServer } = require("./lib/serve.js")

// ---- agents (SPEC §7D-§7F): lib/agents, compiled on first use ----

/** @typedef {typeof import("./lib/agents/index.js")} AgentsModule */

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
  const members = require("./lib/agents/index.js")
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

module.exports.pending = pending
module.exports.authRequired = authRequired
module.exports.pendingOf = pendingOf
module.exports.sanitize = sanitize
module.exports.defineTool = defineTool
module.exports.tool = tool
module.exports.collectTools = collectTools
module.exports.toOpenAI = toOpenAI
module.exports.toAnthropic = toAnthropic
module.exports.toGemini = toGemini
module.exports.finishReasonFor = finishReasonFor
module.exports.contentText = contentText
module.exports.argsObject = argsObject
module.exports.argsString = argsString
module.exports.toolCallsOf = toolCallsOf
module.exports.openAIMessagesToAnthropic = openAIMessagesToAnthropic
module.exports.openAIToolsToAnthropic = openAIToolsToAnthropic
module.exports.openAIToolChoiceToAnthropic = openAIToolChoiceToAnthropic
module.exports.hasSystemMessage = hasSystemMessage
module.exports.SKILL_TOOL_DESCRIPTION = native.SKILL_TOOL_DESCRIPTION
module.exports.SKILLS_PROMPT_PREAMBLE = native.SKILLS_PROMPT_PREAMBLE
module.exports.loadSkills = loadSkills
module.exports.listSkills = listSkills
module.exports.httpTool = httpTool
module.exports.createBuiltinTools = createBuiltinTools
module.exports.selectBuiltins = selectBuiltins
module.exports.builtinsEnabled = builtinsEnabled
module.exports.parseMcpConfig = parseMcpConfig
module.exports.expandEnvHeaders = expandEnvHeaders
module.exports.elicitationToRequest = elicitationToRequest
module.exports.answerToElicitResult = answerToElicitResult
module.exports.loadMcp = loadMcp
module.exports.listMcpTools = listMcpTools
module.exports.exposedMcpTools = exposedMcpTools
module.exports.buildMcpServer = buildMcpServer
module.exports.agent = agent
module.exports.agentTools = agentTools
module.exports.parseAgentsConfig = parseAgentsConfig
module.exports.Toolkit = Toolkit
module.exports.createToolkit = createToolkit
module.exports.Client = Client
module.exports.createClient = createClient
module.exports.Conversation = Conversation
module.exports.InMemoryConversationStore = InMemoryConversationStore
module.exports.createInProcessClient = createInProcessClient
module.exports.InMemoryTaskStore = InMemoryTaskStore
module.exports.FileTaskStore = FileTaskStore
module.exports.resolveStore = resolveStore
module.exports.buildAgentCard = buildAgentCard
module.exports.startA2AServer = startA2AServer
module.exports.agents = agents
