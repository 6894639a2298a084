// An MCP server behind OAuth, all on the official TypeScript SDK (v1): its authorization-server
// router (metadata, dynamic registration, the authorize endpoint, the token endpoint with PKCE),
// its protected-resource metadata, its bearer middleware and a streamable-HTTP MCP server with
// one tool, `whoami`, that answers with the client id the token was issued to.
//
// The sign-in itself (the page a person would see) approves at once: GET /authorize redirects
// to the client's redirect_uri with a code. Access tokens live `--token-seconds` (default 3600)
// and come with a refresh token. `--protect calls` lets initialize and tools/list through
// unauthenticated and asks for a token on tools/call only. GET /stats says what happened: how
// many registrations, authorizations, token grants of each kind, and MCP requests refused.
//
//   node oauth-server.mjs [--token-seconds N] [--protect all|calls]     (prints its MCP URL)
import http from "node:http"
import { randomUUID } from "node:crypto"
import express from "express"
import { z } from "zod"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js"
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js"
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js"

const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`)
  return at < 0 ? fallback : process.argv[at + 1]
}
const tokenSeconds = Number(arg("token-seconds", "3600"))
const protect = arg("protect", "all")

const stats = { registered: 0, authorized: 0, grants: { authorization_code: 0, refresh_token: 0 }, refused: 0, bearers: 0 }

const clients = new Map()
const codes = new Map()
const tokens = new Map()
const refreshTokens = new Map()

function issue(clientId, scopes, resource) {
  const access = randomUUID()
  const refresh = randomUUID()
  tokens.set(access, { clientId, scopes, resource, expiresAt: Date.now() + tokenSeconds * 1000 })
  refreshTokens.set(refresh, { clientId, scopes, resource })
  return { access_token: access, token_type: "bearer", expires_in: tokenSeconds, refresh_token: refresh, scope: scopes.join(" ") }
}

const provider = {
  clientsStore: {
    async getClient(id) {
      return clients.get(id)
    },
    async registerClient(client) {
      stats.registered++
      clients.set(client.client_id, client)
      return client
    },
  },
  async authorize(client, params, res) {
    stats.authorized++
    if (!client.redirect_uris.includes(params.redirectUri)) throw new Error("unregistered redirect_uri")
    const code = randomUUID()
    codes.set(code, { clientId: client.client_id, params })
    const back = new URL(params.redirectUri)
    back.searchParams.set("code", code)
    if (params.state !== undefined) back.searchParams.set("state", params.state)
    res.redirect(back.href)
  },
  async challengeForAuthorizationCode(_client, code) {
    const entry = codes.get(code)
    if (!entry) throw new Error("unknown code")
    return entry.params.codeChallenge
  },
  async exchangeAuthorizationCode(client, code) {
    const entry = codes.get(code)
    if (!entry || entry.clientId !== client.client_id) throw new Error("unknown code")
    codes.delete(code)
    stats.grants.authorization_code++
    return issue(client.client_id, entry.params.scopes ?? [], entry.params.resource?.href)
  },
  async exchangeRefreshToken(client, refreshToken) {
    const entry = refreshTokens.get(refreshToken)
    if (!entry || entry.clientId !== client.client_id) throw new Error("unknown refresh token")
    refreshTokens.delete(refreshToken)
    stats.grants.refresh_token++
    return issue(client.client_id, entry.scopes, entry.resource)
  },
  async verifyAccessToken(token) {
    const entry = tokens.get(token)
    if (!entry || entry.expiresAt < Date.now()) throw new InvalidTokenError("invalid or expired token")
    return { token, clientId: entry.clientId, scopes: entry.scopes, expiresAt: Math.floor(entry.expiresAt / 1000) }
  },
}

const app = express()
const server = http.createServer(app)
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const base = `http://127.0.0.1:${server.address().port}`
const mcpUrl = new URL(`${base}/mcp`)

app.get("/stats", (_req, res) => res.json(stats))
app.use(mcpAuthRouter({ provider, issuerUrl: new URL(base), resourceServerUrl: mcpUrl, scopesSupported: ["mcp:tools"] }))

const bearer = requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) })
const counted = (req, res, next) => {
  if (req.headers.authorization) stats.bearers++
  res.on("finish", () => {
    if (res.statusCode === 401 || res.statusCode === 403) stats.refused++
  })
  next()
}
const guard = (req, res, next) => {
  if (protect === "calls" && req.body?.method !== "tools/call") return next()
  return bearer(req, res, next)
}

app.post("/mcp", express.json(), counted, guard, async (req, res) => {
  const mcp = new McpServer({ name: "oauth-peer", version: "1.0.0" })
  mcp.registerTool("whoami", { description: "The client the token was issued to", inputSchema: { note: z.string().optional() } }, async (_args, extra) => ({
    content: [{ type: "text", text: `client ${extra.authInfo?.clientId ?? "none"}` }],
  }))
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  res.on("close", () => {
    transport.close()
    mcp.close()
  })
  await mcp.connect(transport)
  await transport.handleRequest(req, res, req.body)
})
app.all("/mcp", (_req, res) => res.status(405).end())

console.log(mcpUrl.href)
