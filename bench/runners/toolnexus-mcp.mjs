// toolnexus with the same two tools served by a stdio MCP server of ours (bench/mcp-server.mjs),
// configured the reference way: a local server's `command` is an argv array. Tool names come back
// prefixed with the server name (bench_get_weather, bench_add); the endpoint matches by substring.
//
// Builds without MCP support refuse `mcpConfig` ("... is not supported by this build yet"); the
// runner then reports itself skipped rather than failing the whole benchmark.

import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { API_KEY, MODEL, PROMPT, SkipRunner } from "../lib/scenario.mjs"

const { createClient, createToolkit } = createRequire(import.meta.url)("../../index.js")
const MCP_SERVER = fileURLToPath(new URL("../mcp-server.mjs", import.meta.url))

export async function setup({ baseURL }) {
  let toolkit
  try {
    toolkit = await createToolkit({
      mcpConfig: { mcpServers: { bench: { command: [process.execPath, MCP_SERVER] } } },
      builtins: false,
    })
  } catch (e) {
    if (/not supported/i.test(String(e?.message))) throw new SkipRunner(`this toolnexus build has no MCP support: ${e.message}`)
    throw e
  }
  const status = toolkit.mcpStatus()
  if (status.bench !== "connected") {
    await toolkit.close()
    throw new Error(`MCP server "bench" did not connect (status ${JSON.stringify(status)})`)
  }
  const names = toolkit.tools().map((t) => t.name)
  if (!names.some((n) => n.includes("weather")) || !names.some((n) => n.includes("add"))) {
    await toolkit.close()
    throw new Error(`MCP tools missing: got ${JSON.stringify(names)}`)
  }
  const client = createClient({ baseUrl: baseURL, style: "openai", model: MODEL, apiKey: API_KEY })
  return {
    run: async () => (await client.run(PROMPT, { toolkit })).text,
    close: () => toolkit.close(),
  }
}
