// The package entry for ES modules (`import ... from "toolnexus"`): the same exports as index.js,
// the very same objects (a program that both imports and requires the package gets one copy).
// The CommonJS side is loaded with a require made here rather than imported: importing a CommonJS
// file from an ES module makes Node scan it for export names first, which in a fresh process costs
// ~1.5 ms, most of it the scanner's own first start (bench/README.md, "Cold start").

import { createRequire } from "node:module"

const lib = createRequire(import.meta.url)("./index.js")

export const pending = lib.pending
export const authRequired = lib.authRequired
export const pendingOf = lib.pendingOf
export const sanitize = lib.sanitize
export const defineTool = lib.defineTool
export const tool = lib.tool
export const collectTools = lib.collectTools
export const toOpenAI = lib.toOpenAI
export const toAnthropic = lib.toAnthropic
export const toGemini = lib.toGemini
export const finishReasonFor = lib.finishReasonFor
export const contentText = lib.contentText
export const argsObject = lib.argsObject
export const argsString = lib.argsString
export const toolCallsOf = lib.toolCallsOf
export const openAIMessagesToAnthropic = lib.openAIMessagesToAnthropic
export const openAIToolsToAnthropic = lib.openAIToolsToAnthropic
export const openAIToolChoiceToAnthropic = lib.openAIToolChoiceToAnthropic
export const hasSystemMessage = lib.hasSystemMessage
export const SKILL_TOOL_DESCRIPTION = lib.SKILL_TOOL_DESCRIPTION
export const SKILLS_PROMPT_PREAMBLE = lib.SKILLS_PROMPT_PREAMBLE
export const loadSkills = lib.loadSkills
export const listSkills = lib.listSkills
export const httpTool = lib.httpTool
export const createBuiltinTools = lib.createBuiltinTools
export const selectBuiltins = lib.selectBuiltins
export const builtinsEnabled = lib.builtinsEnabled
export const parseMcpConfig = lib.parseMcpConfig
export const expandEnvHeaders = lib.expandEnvHeaders
export const elicitationToRequest = lib.elicitationToRequest
export const answerToElicitResult = lib.answerToElicitResult
export const loadMcp = lib.loadMcp
export const listMcpTools = lib.listMcpTools
export const exposedMcpTools = lib.exposedMcpTools
export const buildMcpServer = lib.buildMcpServer
export const agent = lib.agent
export const agentTools = lib.agentTools
export const parseAgentsConfig = lib.parseAgentsConfig
export const Toolkit = lib.Toolkit
export const createToolkit = lib.createToolkit
export const Client = lib.Client
export const createClient = lib.createClient
export const Conversation = lib.Conversation
export const InMemoryConversationStore = lib.InMemoryConversationStore
export const createInProcessClient = lib.createInProcessClient
export const InMemoryTaskStore = lib.InMemoryTaskStore
export const FileTaskStore = lib.FileTaskStore
export const resolveStore = lib.resolveStore
export const SqliteStore = lib.SqliteStore
export const PostgresStore = lib.PostgresStore
export const RedisStore = lib.RedisStore
export const buildAgentCard = lib.buildAgentCard
export const startA2AServer = lib.startA2AServer
export const agents = lib.agents

// What `import toolnexus from "toolnexus"` gave when this entry did not exist: the CommonJS exports object.
export default lib
