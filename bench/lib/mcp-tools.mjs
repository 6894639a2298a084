// The scenario's two tools registered on an MCP SDK `McpServer`, as the SDK documents it (zod
// input shapes): used by the stdio MCP server of the toolnexus-mcp runner and by the MCP SDK
// peer of the serving bench, so both serve exactly the same tools.

import { z } from "zod"
import { ADD_DESCRIPTION, WEATHER_DESCRIPTION, add, getWeather } from "./scenario.mjs"

export function registerScenarioTools(server) {
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
  return server
}
