// A stdio MCP server exposing the scenario's two tools (get_weather, add), for the
// "toolnexus-mcp" runner: the same work as the defineTool runner, with each tool call
// crossing a process boundary over MCP (JSON-RPC on stdin/stdout), as a real MCP setup does.
//
//   node bench/mcp-server.mjs        (speaks MCP on stdio; nothing else goes to stdout)

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { z } from "zod"
import { ADD_DESCRIPTION, WEATHER_DESCRIPTION, add, getWeather } from "./lib/scenario.mjs"

const server = new McpServer({ name: "bench", version: "1.0.0" })

server.registerTool(
  "get_weather",
  { description: WEATHER_DESCRIPTION, inputSchema: { city: z.string().describe("City name") } },
  async (args) => ({ content: [{ type: "text", text: getWeather(args) }] }),
)

server.registerTool(
  "add",
  { description: ADD_DESCRIPTION, inputSchema: { a: z.number(), b: z.number() } },
  async (args) => ({ content: [{ type: "text", text: String(add(args)) }] }),
)

await server.connect(new StdioServerTransport())
// Exit with the client: if the process that spawned us dies (a killed worker), stdin closes.
process.stdin.on("end", () => process.exit(0))
