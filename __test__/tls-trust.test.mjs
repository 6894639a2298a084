// https trust as Node's own: a self-signed certificate made the usual way (`openssl req -x509`,
// which marks it CA:TRUE) and listed in NODE_EXTRA_CA_CERTS is trusted by Node's `fetch`, so the
// client's built-in HTTP and `httpTool` must trust it too; one that is not in the file is
// refused by all of them. Each case runs in a child process with the variable set (Node reads
// it at startup), against a node:https server answering an OpenAI-style chat completion.

import test from "node:test"
import assert from "node:assert/strict"
import https from "node:https"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { execFileSync } from "node:child_process"
import { oaText, runChild } from "./support/llm.mjs"

const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

/**
 * A self-signed certificate for localhost and 127.0.0.1, made as the openssl docs show; or for
 * `subject` with `altNames` (`null`: no subjectAltName at all, the host only in the CN).
 */
function selfSigned(dir, name, { subject = "/CN=localhost", altNames = "DNS:localhost,IP:127.0.0.1" } = {}) {
  const key = path.join(dir, `${name}.key`)
  const cert = path.join(dir, `${name}.crt`)
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", subject]
      .concat(altNames === null ? [] : ["-addext", `subjectAltName=${altNames}`])
      .concat(["-keyout", key, "-out", cert]),
    { stdio: "ignore" },
  )
  const text = execFileSync("openssl", ["x509", "-noout", "-text", "-in", cert]).toString()
  assert.match(text, /CA:TRUE/, "openssl marks it a CA")
  assert.equal(/Subject Alternative Name/.test(text), altNames !== null, text)
  return { key: fs.readFileSync(key), cert: fs.readFileSync(cert), certPath: cert }
}

/** An https server on 127.0.0.1 presenting `pair`, answering every request with a completion. */
async function serve(pair) {
  const server = https.createServer({ key: pair.key, cert: pair.cert }, (req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify(oaText("over tls").body))
    })
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `https://localhost:${server.address().port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((r) => server.close(r))
    },
  }
}

/** In a child trusting `caFile`: our client's run, our `httpTool`, and Node's own `fetch`. */
async function compare(url, caFile) {
  const r = await runChild(
    `
    const { createClient, createToolkit, httpTool } = await import(ENTRY)
    const url = ${JSON.stringify(url)}
    const out = {}
    try {
      const c = createClient({ baseUrl: url + "/v1", apiKey: "k", model: "m", style: "openai", retries: 0 })
      out.client = { text: (await c.run("hi", { toolkit: await createToolkit({}) })).text }
    } catch (e) {
      out.client = { error: e.message, class: e.constructor.name, cause: e.cause?.message }
    }
    const t = await httpTool({ name: "h", description: "", method: "POST", url: url + "/v1/chat/completions" }).execute({})
    out.httpTool = t.isError ? { error: t.output } : { text: JSON.parse(t.output).choices[0].message.content }
    try {
      const res = await fetch(url + "/v1/chat/completions", { method: "POST", body: "{}" })
      out.fetch = { text: (await res.json()).choices[0].message.content }
    } catch (e) {
      out.fetch = { error: String(e.cause?.code ?? e.cause ?? e) }
    }
    console.log(JSON.stringify(out))
  `,
    { env: { ...process.env, NODE_EXTRA_CA_CERTS: caFile } },
  )
  assert.equal(r.code, 0, r.stderr)
  return JSON.parse(r.stdout.trim())
}

test("a self-signed CA:TRUE certificate in NODE_EXTRA_CA_CERTS is trusted as Node's fetch trusts it", { skip: !hasOpenssl && "no openssl" }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-tls-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const pair = selfSigned(dir, "server")
  const server = await serve(pair)
  t.after(server.close)
  const out = await compare(server.url, pair.certPath)
  assert.deepEqual(out, { client: { text: "over tls" }, httpTool: { text: "over tls" }, fetch: { text: "over tls" } })
})

test("a self-signed certificate not in NODE_EXTRA_CA_CERTS is refused, as Node's fetch refuses it", { skip: !hasOpenssl && "no openssl" }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-tls-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const trusted = selfSigned(dir, "trusted")
  const other = selfSigned(dir, "other")
  const server = await serve(other)
  t.after(server.close)
  const out = await compare(server.url, trusted.certPath)
  assert.match(out.fetch.error ?? "", /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/, JSON.stringify(out))
  assert.equal(out.client.error, "fetch failed", JSON.stringify(out))
  assert.equal(out.client.class, "TypeError", JSON.stringify(out))
  assert.match(out.client.cause ?? "", /certificate/i, JSON.stringify(out))
  // The reference's httpTool reports fetch's message, as ours does.
  assert.equal(out.httpTool.error, "fetch failed", JSON.stringify(out))
})

// Without a subjectAltName, Node's tls.checkServerIdentity reads the host from the subject's CN
// (never an IP address, and not when the certificate lists any DNS alt name).
test("a self-signed certificate naming its host only in its CN is trusted as Node's fetch trusts it", { skip: !hasOpenssl && "no openssl" }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-tls-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const pair = selfSigned(dir, "server", { altNames: null })
  const server = await serve(pair)
  t.after(server.close)
  const out = await compare(server.url, pair.certPath)
  assert.deepEqual(out, { client: { text: "over tls" }, httpTool: { text: "over tls" }, fetch: { text: "over tls" } })
})

test("a CN that names another host, an IP address, or sits beside a DNS alt name is refused, as Node's fetch refuses it", { skip: !hasOpenssl && "no openssl" }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tn-tls-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const cases = [
    { name: "other-host", subject: "/CN=example.com", altNames: null, host: "localhost" },
    { name: "ip-host", subject: "/CN=localhost", altNames: null, host: "127.0.0.1" },
    { name: "dns-alt-name", subject: "/CN=localhost", altNames: "DNS:example.com", host: "localhost" },
  ]
  for (const c of cases) {
    const pair = selfSigned(dir, c.name, c)
    const server = await serve(pair)
    try {
      const out = await compare(server.url.replace("localhost", c.host), pair.certPath)
      const seen = `${c.name}: ${JSON.stringify(out)}`
      assert.equal(out.fetch.error, "ERR_TLS_CERT_ALTNAME_INVALID", seen)
      assert.equal(out.client.error, "fetch failed", seen)
      assert.equal(out.client.class, "TypeError", seen)
      assert.match(out.client.cause ?? "", /certificate/i, seen)
      assert.equal(out.httpTool.error, "fetch failed", seen)
    } finally {
      await server.close()
    }
  }
})
