// Signing in to a remote MCP server that asks for OAuth (issue 54), against a server and an
// authorization server that are both the official TypeScript SDK's (__test__/peers/mcp/
// oauth-server.mjs, a child process on 127.0.0.1): discovery, dynamic registration, the
// authorization code with PKCE through `waitFor` (a Request of kind "authorization"), the token on
// every request, its refresh, and the ways a sign-in fails.
import test from "node:test"
import assert from "node:assert/strict"
import path from "node:path"
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { createToolkit, loadMcp } from "../index.js"
import fs from "node:fs"
import os from "node:os"
import { REPO, cleanEnv, within, startLLM, oaText, oaCalls, runChild } from "./support/llm.mjs"

const SERVER = path.join(REPO, "__test__", "peers", "mcp", "oauth-server.mjs")

async function startServer(t, args = []) {
  const child = spawn(process.execPath, [SERVER, ...args], { env: cleanEnv(), stdio: ["ignore", "pipe", "inherit"] })
  t.after(() => child.kill())
  const url = await within(20_000, new Promise((resolve) => child.stdout.once("data", (d) => resolve(String(d).trim()))), "the server's URL")
  const stats = async () => (await fetch(new URL("/stats", url))).json()
  return { url, stats }
}

/** A person who signs in at once: opens the URL and answers with where the browser was sent back. */
function signer(seen = []) {
  return async (request) => {
    seen.push(request)
    const res = await fetch(request.url, { redirect: "manual" })
    return { id: request.id, ok: true, data: { url: res.headers.get("location") } }
  }
}

function captureWarnings(t) {
  const warnings = []
  const original = console.warn
  console.warn = (...args) => warnings.push(args.join(" "))
  t.after(() => {
    console.warn = original
  })
  return warnings
}

test("a server that asks for OAuth is signed in to through waitFor: one authorization Request, then list and call with the token", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t)
  const seen = []
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000 } }, { waitFor: signer(seen) })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { hosted: "connected" })
  assert.equal(seen.length, 1)
  const [request] = seen
  assert.equal(request.kind, "authorization")
  assert.match(request.id, /^pnd-/)
  assert.equal(request.prompt, 'Sign in to the MCP server "hosted" to continue')
  assert.deepEqual(request.data, { server: "hosted", redirectUri: "http://127.0.0.1/callback" })
  const auth = new URL(request.url)
  assert.equal(auth.origin, new URL(url).origin)
  assert.equal(auth.pathname, "/authorize")
  assert.equal(auth.searchParams.get("code_challenge_method"), "S256")
  assert.equal(auth.searchParams.get("resource"), url)
  assert.equal(auth.searchParams.get("scope"), "mcp:tools")
  assert.deepEqual(mcp.tools.map((x) => x.name), ["hosted_whoami"])
  const result = await mcp.tools[0].execute({})
  assert.equal(result.isError, false)
  assert.match(result.output, /^client [0-9a-f-]{36}$/)
  const s = await stats()
  assert.equal(s.registered, 1)
  assert.equal(s.authorized, 1)
  assert.deepEqual(s.grants, { authorization_code: 1, refresh_token: 0 })
  // Only the first request went without a token.
  assert.equal(s.refused, 1)
})

test("a token about to expire is refreshed with its refresh token: no second sign-in", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t, ["--token-seconds", "2"])
  const seen = []
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000 } }, { waitFor: signer(seen) })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { hosted: "connected" })
  // Past its lifetime: used as it is, it would be refused.
  await new Promise((r) => setTimeout(r, 2_500))
  const result = await mcp.tools[0].execute({})
  assert.equal(result.isError, false, result.output)
  assert.equal(seen.length, 1)
  const s = await stats()
  assert.equal(s.grants.refresh_token, 1)
  assert.equal(s.authorized, 1)
})

test("a toolkit's waitFor signs in to its MCP servers too", { timeout: 60_000 }, async (t) => {
  const { url } = await startServer(t)
  const seen = []
  const kit = await createToolkit({ builtins: false, mcpConfig: { hosted: { url, timeout: 20_000 } }, waitFor: signer(seen) })
  t.after(() => kit.close())
  assert.deepEqual(kit.mcpStatus(), { hosted: "connected" })
  assert.equal(seen.length, 1)
  const out = await kit.execute("hosted_whoami", {})
  assert.equal(out.isError, false)
})

test("a sign-in only the tool call needs happens at the call, and the call goes through", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t, ["--protect", "calls"])
  const seen = []
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000 } }, { waitFor: signer(seen) })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { hosted: "connected" })
  assert.equal(seen.length, 0)
  const result = await mcp.tools[0].execute({})
  assert.equal(result.isError, false, result.output)
  assert.equal(seen.length, 1)
  assert.equal((await stats()).grants.authorization_code, 1)
})

test("without waitFor or oauth settings the server fails, and the warning names why and where its metadata is", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t)
  const warnings = captureWarnings(t)
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000 } })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { hosted: "failed" })
  const warning = warnings.find((w) => w.includes('"hosted"'))
  assert.match(warning, /authorization required: the server answered HTTP 401 \(WWW-Authenticate: Bearer /)
  assert.ok(warning.includes("its protected-resource metadata is at"), warning)
  assert.equal((await stats()).registered, 0)
})

test("oauth: false never signs in, even with a waitFor", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t)
  captureWarnings(t)
  const seen = []
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000, oauth: false } }, { waitFor: signer(seen) })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { hosted: "failed" })
  assert.equal(seen.length, 0)
  assert.equal((await stats()).registered, 0)
})

test("a declined sign-in, or an answer without a code, fails the server with the reason named", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t)
  const warnings = captureWarnings(t)
  const declined = await loadMcp({ a: { url, timeout: 20_000 } }, { waitFor: async (r) => ({ id: r.id, ok: false, reason: "declined" }) })
  t.after(() => declined.close())
  assert.deepEqual(declined.status, { a: "failed" })
  assert.match(warnings.find((w) => w.includes('"a"')), /signing in failed: sign-in was not completed \(declined\)/)
  const empty = await loadMcp({ b: { url, timeout: 20_000 } }, { waitFor: async (r) => ({ id: r.id, ok: true, data: {} }) })
  t.after(() => empty.close())
  assert.deepEqual(empty.status, { b: "failed" })
  assert.match(warnings.find((w) => w.includes('"b"')), /signing in failed: the sign-in answer has neither data\.url nor data\.code with data\.state/)
  const thrown = await loadMcp({ c: { url, timeout: 20_000 } }, { waitFor: async () => { throw new Error("no browser here") } })
  t.after(() => thrown.close())
  assert.deepEqual(thrown.status, { c: "failed" })
  assert.match(warnings.find((w) => w.includes('"c"')), /signing in failed: sign-in failed: no browser here/)
  assert.equal((await stats()).grants.authorization_code, 0)
})

test("a bad oauth setting is named at the server, and the others still load", { timeout: 60_000 }, async (t) => {
  const warnings = captureWarnings(t)
  const mcp = await loadMcp({ bad: { url: "http://127.0.0.1:9/mcp", oauth: { grant: "client_credentials" } } })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { bad: "failed" })
  assert.match(warnings.find((w) => w.includes('"bad"')), /oauth: client_credentials needs clientId/)
})

test("a static Authorization header means no OAuth: the server's refusal is the answer", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t)
  const warnings = captureWarnings(t)
  const seen = []
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000, headers: { Authorization: "Bearer not-a-token" } } }, { waitFor: signer(seen) })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { hosted: "failed" })
  assert.equal(seen.length, 0)
  assert.match(warnings.find((w) => w.includes('"hosted"')), /authorization required: the server answered HTTP 401/)
  assert.ok(!warnings.join("\n").includes("not-a-token"))
  assert.equal((await stats()).registered, 0)
})

/** A scripted model: it calls `hosted_whoami`, then says what the tool answered. */
async function whoamiModel(t) {
  const llm = await startLLM((entry) => {
    const messages = entry.json?.messages ?? []
    const last = messages.at(-1)
    if (last?.role === "tool") return oaText(`Done: ${last.content}`)
    return oaCalls([{ id: "call_1", name: "hosted_whoami", args: {} }])
  })
  t.after(() => llm.close())
  return llm
}

/** A program that runs (or resumes) the agent on the toolkit, kept on `store`. */
const agentProgram = (step) => `
  import { createClient, createToolkit } from ENTRY
  const [url, llm, store] = JSON.parse(process.env.ARGS)
  const toolkit = await createToolkit({ builtins: false, mcpConfig: { hosted: { url, timeout: 20000 } }, store })
  const client = createClient({ baseUrl: llm, style: "openai", model: "m", apiKey: "k", store })
  try {
    ${step}
  } finally {
    await toolkit.close()
  }
`

/** The stores a parked login is checked on: SQLite always, PostgreSQL and Redis when started (.ci/run starts them). */
const engines = [
  ["SQLite", () => `sqlite:${path.join(fs.mkdtempSync(path.join(os.tmpdir(), "tn-oauth-park-")), "state.db")}`],
  ["PostgreSQL", process.env.TOOLNEXUS_TEST_POSTGRES && (() => process.env.TOOLNEXUS_TEST_POSTGRES)],
  ["Redis", process.env.TOOLNEXUS_TEST_REDIS && (() => process.env.TOOLNEXUS_TEST_REDIS)],
]

for (const [engine, storeOf] of engines) test(`a login a tool call needs parks the run on ${engine} in one process and is finished in a second`, { skip: !storeOf && `${engine} is not started (scripts/engines.sh)`, timeout: 120_000 }, async (t) => {
  const { url, stats } = await startServer(t, ["--protect", "calls"])
  const llm = await whoamiModel(t)
  const store = storeOf()
  if (store.startsWith("sqlite:")) t.after(() => fs.rmSync(path.dirname(store.slice("sqlite:".length)), { recursive: true, force: true }))

  // First process: no waitFor. The call needs a sign-in, so the run parks on the login.
  const first = await runChild(
    agentProgram(`
      const r = await client.run("Who am I?", { toolkit })
      console.log(JSON.stringify({ status: r.status, pending: r.pending, messages: r.messages }))
    `),
    { env: { ...process.env, ARGS: JSON.stringify([url, llm.url, store]) }, timeoutMs: 60_000 },
  )
  assert.equal(first.code, 0, first.stderr)
  const parked = JSON.parse(first.stdout.trim().split("\n").at(-1))
  assert.equal(parked.status, "pending")
  assert.equal(parked.pending.kind, "authorization")
  assert.equal(parked.pending.prompt, 'Sign in to the MCP server "hosted" to continue')
  assert.deepEqual(parked.pending.data, { server: "hosted", redirectUri: "http://127.0.0.1/callback" })
  assert.equal(new URL(parked.pending.url).pathname, "/authorize")
  // Nothing secret rides on what was handed out.
  const handedOut = JSON.stringify(parked)
  assert.ok(!/code_verifier|client_secret|access_token/.test(handedOut), handedOut)

  // The person signs in (here: the authorization server approves at once).
  const res = await fetch(parked.pending.url, { redirect: "manual" })
  const landedOn = res.headers.get("location")
  assert.match(landedOn, /^http:\/\/127\.0\.0\.1\/callback\?code=/)

  // Second process, same store: the answer finishes the login and the call goes through.
  const second = await runChild(
    agentProgram(`
      const { pending, messages } = JSON.parse(process.env.PARKED)
      const answerFor = (id) => ({ id, ok: true, data: { url: process.env.LANDED } })
      // Only the Request the library parked: an invented id, a pending with a field removed and an
      // edited history are refused, and use nothing up.
      const invented = { ...pending, id: "pnd-invented" }
      const { data, ...withoutData } = pending
      const edited = structuredClone(messages)
      edited.filter((m) => m.tool_calls).pop().tool_calls[0].function.arguments = JSON.stringify({ note: "x" })
      const refused = await Promise.all([
        client.runWithAnswer(toolkit, messages, invented, answerFor(invented.id)).catch((e) => e.code),
        client.runWithAnswer(toolkit, messages, withoutData, answerFor(pending.id)).catch((e) => e.code),
        client.runWithAnswer(toolkit, edited, pending, answerFor(pending.id)).catch((e) => e.code),
      ])
      console.log(JSON.stringify({ refused }))
      const done = await client.runWithAnswer(toolkit, messages, pending, { id: pending.id, ok: true, data: { url: process.env.LANDED } })
      console.log(JSON.stringify({ status: done.status, text: done.text }))
      // Once: the same answer again is refused, and no second token is got.
      const again = await client.runWithAnswer(toolkit, messages, pending, { id: pending.id, ok: true, data: { url: process.env.LANDED } }).catch((e) => e.code)
      console.log(JSON.stringify({ again }))
    `),
    { env: { ...process.env, ARGS: JSON.stringify([url, llm.url, store]), PARKED: JSON.stringify(parked), LANDED: landedOn }, timeoutMs: 60_000 },
  )
  assert.equal(second.code, 0, second.stderr)
  const lines = second.stdout.trim().split("\n").map((l) => JSON.parse(l))
  assert.deepEqual(lines[0].refused, ["EUNKNOWNREQUEST", "EREQUESTMISMATCH", "EREQUESTMISMATCH"])
  assert.equal(lines[1].status, "done")
  assert.match(lines[1].text, /^Done: client [0-9a-f-]{36}$/)
  assert.equal(lines[2].again, "ESTORECONFLICT")
  let s = await stats()
  assert.equal(s.registered, 1)
  assert.equal(s.authorized, 1)
  assert.equal(s.grants.authorization_code, 1)

  // A third process on the store is signed in already: its call needs no login at all.
  const third = await runChild(
    agentProgram(`
      const r = await client.run("Who am I now?", { toolkit })
      console.log(JSON.stringify({ status: r.status, text: r.text }))
    `),
    { env: { ...process.env, ARGS: JSON.stringify([url, llm.url, store]) }, timeoutMs: 60_000 },
  )
  assert.equal(third.code, 0, third.stderr)
  const last = JSON.parse(third.stdout.trim().split("\n").at(-1))
  assert.equal(last.status, "done")
  s = await stats()
  assert.equal(s.authorized, 1)
  assert.equal(s.grants.authorization_code, 1)
})

test("a parked login answered with a refusal, or a code that is not valid, fails that call with the reason and keeps nothing", { timeout: 120_000 }, async (t) => {
  const { url, stats } = await startServer(t, ["--protect", "calls"])
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000 } })
  t.after(() => mcp.close())
  const [tool] = mcp.tools
  const parked = await tool.execute({})
  assert.equal(parked.isError, true)
  const request = parked.metadata.pending
  assert.equal(request.kind, "authorization")
  assert.equal(parked.output, `Sign in to the MCP server "hosted" to continue\n${request.url}`)
  const declined = await tool.execute({}, { answer: { id: request.id, ok: false, reason: "declined" } })
  assert.deepEqual(declined, { output: "authorization failed: sign-in was not completed (declined)", isError: true, metadata: { server: "hosted" } })
  // That login is used up: the call asks for a new one.
  const again = await tool.execute({}, { answer: { id: request.id, ok: true, data: { url: "http://127.0.0.1/callback?code=x&state=y" } } })
  assert.equal(again.metadata.pending.kind, "authorization")
  assert.notEqual(again.metadata.pending.id, request.id)
  const forged = await tool.execute({}, { answer: { id: again.metadata.pending.id, ok: true, data: { url: "http://127.0.0.1/callback?code=forged&state=forged" } } })
  assert.equal(forged.isError, true)
  assert.match(forged.output, /^authorization failed: /)
  assert.equal((await stats()).grants.authorization_code, 0)
})

/** A token for the peer got the way an app's own login would: register, authorize, exchange. */
async function appToken(url) {
  const redirect = "http://127.0.0.1/app"
  const reg = await fetch(new URL("/register", url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "app", redirect_uris: [redirect], token_endpoint_auth_method: "none" }),
  }).then((r) => r.json())
  const verifier = "v".repeat(64)
  const challenge = createHash("sha256").update(verifier).digest("base64url")
  const auth = new URL("/authorize", url)
  const query = { response_type: "code", client_id: reg.client_id, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: "S256", state: "s" }
  for (const [k, v] of Object.entries(query)) auth.searchParams.set(k, v)
  const back = new URL((await fetch(auth, { redirect: "manual" })).headers.get("location"))
  const body = new URLSearchParams({ grant_type: "authorization_code", code: back.searchParams.get("code"), code_verifier: verifier, redirect_uri: redirect, client_id: reg.client_id })
  return (await fetch(new URL("/token", url), { method: "POST", body }).then((r) => r.json())).access_token
}

test("mcpToken: its token is sent as the bearer, and a server that takes it needs no sign-in", { timeout: 60_000 }, async (t) => {
  const { url, stats } = await startServer(t)
  const token = await appToken(url)
  const asks = []
  const mcp = await loadMcp({ own: { url, timeout: 20_000 } }, { mcpToken: async (ask) => (asks.push(ask), token) })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, { own: "connected" })
  const r = await mcp.tools[0].execute({})
  assert.equal(r.isError, false, r.output)
  assert.deepEqual(asks, [{ server: "own", url }])
  const s = await stats()
  assert.equal(s.refused, 0)
  assert.equal(s.grants.authorization_code, 1, "the app's own login only")
})

test("mcpToken: asked again with the challenge when the server refuses; no token, or a hook that throws (warned), lets the sign-in take its course", { timeout: 60_000 }, async (t) => {
  const { url } = await startServer(t)
  const warnings = captureWarnings(t)
  const asks = []
  const seen = []
  const none = await loadMcp({ a: { url, timeout: 20_000 } }, { waitFor: signer(seen), mcpToken: async (ask) => (asks.push(ask), undefined) })
  t.after(() => none.close())
  assert.deepEqual(none.status, { a: "connected" })
  assert.deepEqual(asks[0], { server: "a", url })
  assert.equal(asks[1].server, "a")
  assert.match(asks[1].challenge, /^Bearer /)
  assert.equal(seen.length, 1)

  const other = await startServer(t)
  const throwing = await loadMcp(
    { b: { url: other.url, timeout: 20_000 } },
    {
      waitFor: signer(seen),
      mcpToken: async (ask) => {
        if (ask.challenge) throw new Error("token cache down")
        return "not-a-real-token"
      },
    },
  )
  t.after(() => throwing.close())
  assert.deepEqual(throwing.status, { b: "connected" })
  assert.equal(seen.length, 2)
  assert.ok(warnings.some((w) => w.includes('mcpToken failed for MCP server "b": token cache down')), JSON.stringify(warnings))
  assert.ok(!warnings.join("\n").includes("not-a-real-token"))
})

test("an agent runtime parked on a login resumes with the answer: the login is finished and the call goes through", { timeout: 120_000 }, async (t) => {
  const { url, stats } = await startServer(t, ["--protect", "calls"])
  const llmServer = await whoamiModel(t)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-oauth-runtime-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const store = `sqlite:${path.join(dir, "state.db")}`
  const { agents } = await import("../index.js")
  const mcp = await loadMcp({ hosted: { url, timeout: 20_000 } }, { store })
  t.after(() => mcp.close())
  const who = agents.agent("who", { does: "Says who it is on the hosted server", uses: { tools: mcp.tools } })
  const llm = { baseUrl: llmServer.url, style: "openai", model: "m", apiKey: "k" }
  const first = await who.run("Who am I?", { llm, store })
  assert.equal(first.status, "pending")
  assert.equal(first.pending.kind, "authorization")
  const res = await fetch(first.pending.url, { redirect: "manual" })
  const runtime = who.createRuntime({ llm, store })
  t.after(() => runtime.close(runtime.root))
  await runtime.resume({ id: first.pending.id, ok: true, data: { url: res.headers.get("location") } })
  const done = await runtime.wait(runtime.root.children[0])
  assert.equal(done.status, "done", JSON.stringify(done))
  assert.match(done.text, /^Done: client [0-9a-f-]{36}$/)
  assert.equal((await stats()).grants.authorization_code, 1)
})

test("a store option that names no store of ours is what the reference did with it, ignored: warned, sign-ins kept in memory", async (t) => {
  const warnings = captureWarnings(t)
  const custom = { async get() {}, async save() {}, async delete() { return false } }
  const kit = await createToolkit({ builtins: false, store: custom })
  t.after(() => kit.close())
  assert.deepEqual(kit.tools(), [])
  const mcp = await loadMcp({}, { store: "file:./tasks" })
  t.after(() => mcp.close())
  assert.deepEqual(mcp.status, {})
  assert.ok(warnings.some((w) => w.includes('createToolkit: `store` is a value of type object, not "memory"')), JSON.stringify(warnings))
  assert.ok(warnings.some((w) => w.includes('loadMcp: `store` is "file:./tasks"') && w.endsWith("MCP sign-ins are kept in memory")), JSON.stringify(warnings))
})
