// The peer for the MCP profile: a Node `http` server on the official MCP SDK, serving the same two
// tools over streamable HTTP at /mcp the way the SDK documents a stateless server (a fresh server
// and transport per request). Prints {"url":...} once listening.
import http from "node:http"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { registerScenarioTools } from "../lib/mcp-tools.mjs"

const build = () => registerScenarioTools(new McpServer({ name: "bench", version: "1.0.0" }))

const httpServer = http.createServer((req, res) => {
  if (!req.url?.startsWith("/mcp")) {
    res.writeHead(404).end()
    return
  }
  let body = ""
  req.setEncoding("utf8")
  req.on("data", (c) => (body += c))
  req.on("end", async () => {
    try {
      const server = build()
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
      res.on("close", () => {
        transport.close()
        server.close()
      })
      await server.connect(transport)
      await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined)
    } catch {
      if (!res.headersSent) res.writeHead(500).end()
    }
  })
})
httpServer.keepAliveTimeout = 60_000
httpServer.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ url: `http://127.0.0.1:${httpServer.address().port}` })))
process.stdin.resume()
process.stdin.on("end", () => process.exit(0))
