"use strict"
// The package entry: the public exports, one by one (so that `import { x } from "toolnexus"`
// finds each name), from the JS side bundled by the build (scripts/bundle.mjs: lib/ into
// dist/toolnexus.js, one file to load). Every behaviour lives in the Rust core.

const lib = require("./dist/toolnexus.js")

module.exports.pending = lib.pending
module.exports.authRequired = lib.authRequired
module.exports.pendingOf = lib.pendingOf
module.exports.sanitize = lib.sanitize
module.exports.defineTool = lib.defineTool
module.exports.tool = lib.tool
module.exports.collectTools = lib.collectTools
module.exports.toOpenAI = lib.toOpenAI
module.exports.toAnthropic = lib.toAnthropic
module.exports.toGemini = lib.toGemini
module.exports.finishReasonFor = lib.finishReasonFor
module.exports.contentText = lib.contentText
module.exports.argsObject = lib.argsObject
module.exports.argsString = lib.argsString
module.exports.toolCallsOf = lib.toolCallsOf
module.exports.openAIMessagesToAnthropic = lib.openAIMessagesToAnthropic
module.exports.openAIToolsToAnthropic = lib.openAIToolsToAnthropic
module.exports.openAIToolChoiceToAnthropic = lib.openAIToolChoiceToAnthropic
module.exports.hasSystemMessage = lib.hasSystemMessage
module.exports.SKILL_TOOL_DESCRIPTION = lib.SKILL_TOOL_DESCRIPTION
module.exports.SKILLS_PROMPT_PREAMBLE = lib.SKILLS_PROMPT_PREAMBLE
module.exports.loadSkills = lib.loadSkills
module.exports.listSkills = lib.listSkills
module.exports.httpTool = lib.httpTool
module.exports.createBuiltinTools = lib.createBuiltinTools
module.exports.selectBuiltins = lib.selectBuiltins
module.exports.builtinsEnabled = lib.builtinsEnabled
module.exports.parseMcpConfig = lib.parseMcpConfig
module.exports.expandEnvHeaders = lib.expandEnvHeaders
module.exports.elicitationToRequest = lib.elicitationToRequest
module.exports.answerToElicitResult = lib.answerToElicitResult
module.exports.loadMcp = lib.loadMcp
module.exports.listMcpTools = lib.listMcpTools
module.exports.exposedMcpTools = lib.exposedMcpTools
module.exports.buildMcpServer = lib.buildMcpServer
module.exports.agent = lib.agent
module.exports.agentTools = lib.agentTools
module.exports.parseAgentsConfig = lib.parseAgentsConfig
module.exports.Toolkit = lib.Toolkit
module.exports.createToolkit = lib.createToolkit
module.exports.Client = lib.Client
module.exports.createClient = lib.createClient
module.exports.Conversation = lib.Conversation
module.exports.InMemoryConversationStore = lib.InMemoryConversationStore
module.exports.createInProcessClient = lib.createInProcessClient
module.exports.InMemoryTaskStore = lib.InMemoryTaskStore
module.exports.FileTaskStore = lib.FileTaskStore
module.exports.resolveStore = lib.resolveStore
module.exports.SqliteStore = lib.SqliteStore
module.exports.PostgresStore = lib.PostgresStore
module.exports.RedisStore = lib.RedisStore
module.exports.buildAgentCard = lib.buildAgentCard
module.exports.startA2AServer = lib.startA2AServer
module.exports.agents = lib.agents
