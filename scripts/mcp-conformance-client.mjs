#!/usr/bin/env node
// A client for the MCP project's conformance suite (npm `@modelcontextprotocol/conformance`),
// written only against toolnexus's public API, as a user would write one: the harness starts its
// scenario's server, runs this program with the server's URL as the last argument and the
// scenario's name in MCP_CONFORMANCE_SCENARIO, then judges what reached its server.
//
//   node <conformance>/dist/index.js client --command "node scripts/mcp-conformance-client.mjs" --suite all
//
// What it does: connect (loadMcp, a `url` server, signing in when it asks), list the tools, call
// the one the scenario is about, close, exit. It always exits by itself; a server that could not
// be reached is said on stderr and exits 1.
import { loadMcp } from "../index.js"

const url = process.argv.at(-1)
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ""

/** The call each scenario checks, by the tool's name on the server, and its arguments. */
const calls = {
  tools_call: ["add_numbers", { a: 2, b: 3 }],
  "elicitation-sep1034-client-defaults": ["test_client_elicitation_defaults", {}],
  "sse-retry": ["test_reconnection", {}],
}
const [tool, args] = calls[scenario] ?? (scenario.startsWith("auth/") ? ["test-tool", {}] : [])

// What an authorization scenario hands its client (registered ids, secrets, keys), as the
// server's `oauth` settings. The client metadata document URL is the one the suite expects.
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}")
const oauth = { clientMetadataUrl: "https://conformance-test.local/client-metadata.json" }
if (context.client_id) oauth.clientId = context.client_id
if (context.client_secret) oauth.clientSecret = context.client_secret
if (scenario.startsWith("auth/client-credentials")) oauth.grant = "client_credentials"
if (context.private_key_pem) {
  oauth.privateKey = context.private_key_pem
  oauth.signingAlgorithm = context.signing_algorithm ?? "ES256"
}
if (context.idp_id_token) {
  oauth.crossApp = {
    idpTokenEndpoint: context.idp_token_endpoint,
    idpIssuer: context.idp_issuer,
    idpClientId: context.idp_client_id,
    idToken: context.idp_id_token,
  }
}

/**
 * The person at the keyboard: a sign-in is done by opening its URL (the suite's authorization
 * server approves at once and redirects back), and the URL it redirects to is the answer. A
 * server's question (elicitation) is accepted with nothing filled in, so the defaults its schema
 * names are the client's to apply.
 */
async function waitFor(request) {
  if (request.kind === "authorization" && request.url) {
    const res = await fetch(request.url, { redirect: "manual" })
    const location = res.headers.get("location")
    if (!location) return { id: request.id, ok: false, reason: `no redirect (HTTP ${res.status})` }
    return { id: request.id, ok: true, data: { url: new URL(location, request.url).href } }
  }
  return { id: request.id, ok: true, data: {} }
}

const mcp = await loadMcp({ conformance: { url, timeout: 10_000, oauth } }, { waitFor })
let code = 0
try {
  if (mcp.status.conformance !== "connected") {
    console.error(`[conformance client] ${scenario}: the server is ${mcp.status.conformance}`)
    code = 1
  } else if (tool) {
    const found = mcp.tools.find((t) => t.name === `conformance_${tool.replace(/[^a-zA-Z0-9_-]/g, "_")}`)
    if (!found) {
      console.error(`[conformance client] ${scenario}: no tool ${tool} (listed: ${mcp.tools.map((t) => t.name).join(", ")})`)
      code = 1
    } else {
      const result = await found.execute(args)
      console.log(JSON.stringify({ scenario, tool, result }))
      if (result.isError) code = 1
    }
  }
} finally {
  await mcp.close()
}
process.exit(code)
