// An MCP server over stdio written with the official TypeScript SDK, for our MCP client's
// timeout: `reporting` sends notifications/progress every second for `seconds` seconds (when the
// call carries a progressToken) and then answers; `silent` waits as long and sends nothing.
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"

const server = new Server({ name: "progress", version: "1.0.0" }, { capabilities: { tools: {} } })
const schema = { type: "object", properties: { seconds: { type: "number" } } }
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "reporting", description: "reports progress every second", inputSchema: schema },
    { name: "silent", description: "waits without a word", inputSchema: schema },
  ],
}))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const seconds = req.params.arguments?.seconds ?? 5
  const token = req.params._meta?.progressToken
  for (let i = 1; i <= seconds; i++) {
    await sleep(1000)
    if (req.params.name === "reporting" && token !== undefined) {
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: seconds } })
    }
  }
  return { content: [{ type: "text", text: `${req.params.name}: done after ${seconds} s (progressToken ${token === undefined ? "absent" : "sent"})` }] }
})
await server.connect(new StdioServerTransport())
