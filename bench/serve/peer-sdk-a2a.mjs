// The A2A SDK's own server for the serve bench's A2A v1.0 profile: @a2a-js/sdk's
// DefaultRequestHandler on express (its JSON-RPC binding), with an executor that does what
// toolnexus's served client does per Task: one request to the scripted LLM, then the answer as
// the Task's artifact and `completed`. Prints {"url":...} once listening.
//   node peer-sdk-a2a.mjs <llm base url>
import { randomUUID } from "node:crypto"
import express from "express"
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import { API_KEY, MODEL, PROMPT } from "../lib/scenario.mjs"

const llm = process.argv[2]
// The SDK's enum values (proto): TASK_STATE_SUBMITTED 1, TASK_STATE_COMPLETED 3, TASK_STATE_FAILED 4.
const SUBMITTED = 1
const COMPLETED = 3
const FAILED = 4
const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" })

class LlmExecutor {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx
    const text = (ctx.userMessage.parts ?? [])
      .filter((p) => p.content?.$case === "text")
      .map((p) => p.content.value)
      .join("")
    const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() })
    if (!ctx.task) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(SUBMITTED), artifacts: [], history: [ctx.userMessage], metadata: undefined }))
    }
    let out
    let state = COMPLETED
    try {
      const res = await fetch(`${llm}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: text || PROMPT }] }),
      })
      out = (await res.json()).choices[0].message.content
    } catch (e) {
      out = String(e)
      state = FAILED
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: randomUUID(), name: "", description: "", parts: [textPart(out)], metadata: undefined, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    )
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(state), metadata: undefined }))
  }
  async cancelTask() {}
}

const app = express()
const server = app.listen(0, "127.0.0.1", () => {
  const url = `http://127.0.0.1:${server.address().port}`
  const card = {
    name: "bench",
    description: "",
    supportedInterfaces: [{ url: `${url}/`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "weather", name: "weather", description: "", tags: ["weather"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  }
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new LlmExecutor())
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }))
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }))
  console.log(JSON.stringify({ url }))
})
server.keepAliveTimeout = 60_000
process.stdin.resume()
process.stdin.on("end", () => process.exit(0))
