// An MCP server of protocol 2026-07-28 only, on the official TypeScript SDK v2
// (`@modelcontextprotocol/server` 2.4.0, `legacy: "reject"`: it refuses `initialize`, naming the
// versions it speaks). Two tools: `echo`, and `deploy`, which asks for confirmation the way this
// protocol asks (multi round-trip: its result is "input required" with an elicitation, and the
// call comes back with the answer) and says what it was told. Run with the js-mcp2 peer's folder
// as its first argument; prints its URL, then serves until killed.
import http from "node:http"
import path from "node:path"
import { createRequire } from "node:module"

const require = createRequire(path.join(process.argv[2], "package.json"))
const { McpServer, createMcpHandler, inputRequired, inputResponse } = await import(require.resolve("@modelcontextprotocol/server"))
const { toNodeHandler } = await import(require.resolve("@modelcontextprotocol/node"))
const z = await import(require.resolve("zod"))

const factory = () => {
  const server = new McpServer({ name: "modern-only", version: "1.0.0" })
  server.registerTool("echo", { description: "Echo the text", inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: "text", text: `echo: ${text}` }],
  }))
  server.registerTool("deploy", { description: "Deploy, once confirmed", inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, "confirm")
    if (answer.kind !== "elicit") {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: `Deploy to ${env}?`,
            requestedSchema: { type: "object", properties: { confirm: { type: "boolean" }, note: { type: "string", default: "no note" } }, required: ["confirm"] },
          }),
        },
        requestState: `deploy:${env}`,
      })
    }
    if (answer.action !== "accept" || answer.content?.confirm !== true) return { content: [{ type: "text", text: `not deployed (${answer.action})` }] }
    return { content: [{ type: "text", text: `deployed to ${env} (${answer.content.note}; state ${(typeof ctx.mcpReq.requestState === "function" ? ctx.mcpReq.requestState() : ctx.mcpReq.requestState) ?? "none"})` }] }
  })
  return server
}
const srv = http.createServer(toNodeHandler(createMcpHandler(factory, { legacy: "reject" })))
srv.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${srv.address().port}/mcp`))
