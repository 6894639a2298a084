// MCP conformance of our client and server (issue 27), with the official SDKs as peers: our
// client keeps a call alive while its server reports progress (the server is written with the
// official TypeScript SDK, __test__/peers/mcp/progress-server.mjs).
import test from "node:test"
import assert from "node:assert/strict"
import path from "node:path"
import { loadMcp } from "../index.js"
import { REPO } from "./support/llm.mjs"

const PROGRAMS = path.join(REPO, "__test__", "peers", "mcp")

test("our MCP client: progress notifications keep a call alive past its timeout; silence still times out", { timeout: 60_000 }, async (t) => {
  const server = { type: "local", command: [process.execPath, path.join(PROGRAMS, "progress-server.mjs")], timeout: 2000 }
  const mcp = await loadMcp({ slow: server })
  t.after(() => mcp.close())
  const tool = (name) => mcp.tools.find((x) => x.name === `slow_${name}`)
  assert.ok(tool("reporting") && tool("silent"), `tools: ${mcp.tools.map((x) => x.name)}`)
  const t0 = Date.now()
  const [reporting, silent] = await Promise.all([tool("reporting").execute({ seconds: 5 }), tool("silent").execute({ seconds: 5 })])
  assert.equal(reporting.isError, false, reporting.output)
  assert.equal(reporting.output, "reporting: done after 5 s (progressToken sent)")
  assert.ok(Date.now() - t0 >= 4_500, "the call ran its 5 s")
  assert.equal(silent.isError, true, "a call that reports nothing is cut off at 2 s")
  assert.match(silent.output, /Request timed out/)
})
