// A stdio MCP server exposing the scenario's two tools (get_weather, add), for the
// "toolnexus-mcp" runner: the same work as the defineTool runner, with each tool call
// crossing a process boundary over MCP (JSON-RPC on stdin/stdout), as a real MCP setup does.
//
//   node bench/mcp-server.mjs        (speaks MCP on stdio; nothing else goes to stdout)

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { registerScenarioTools } from "./lib/mcp-tools.mjs"

const server = registerScenarioTools(new McpServer({ name: "bench", version: "1.0.0" }))

await server.connect(new StdioServerTransport())
// Exit with the client: if the process that spawned us dies (a killed worker), stdin closes.
process.stdin.on("end", () => process.exit(0))
