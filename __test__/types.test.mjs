// SPEC §1 / §10 helpers: pending, authRequired, pendingOf, sanitize.
import test from "node:test"
import assert from "node:assert/strict"
import { pending, authRequired, pendingOf, sanitize } from "../index.js"

const ID_FORMAT = /^pnd-[0-9a-z]+-\d+$/

test("pending: builds an error result whose output is the prompt", () => {
  const r = pending({ kind: "approval", prompt: "Approve the refund?" })
  assert.equal(r.isError, true)
  assert.equal(r.output, "Approve the refund?")
  assert.deepEqual(Object.keys(r), ["output", "isError", "metadata"])
  assert.deepEqual(Object.keys(r.metadata), ["pending"])
})

test("pending: the output adds the url on its own line", () => {
  const r = pending({ kind: "authorization", prompt: "Sign in to the CRM", url: "https://crm.test/sso?x=1" })
  assert.equal(r.output, "Sign in to the CRM\nhttps://crm.test/sso?x=1")
  assert.equal(r.metadata.pending.url, "https://crm.test/sso?x=1")
})

test("pending: a generated id has the pnd-<base36>-<seq> form and is unique", () => {
  const ids = new Set()
  for (let i = 0; i < 50; i++) {
    const id = pending({ kind: "input", prompt: `q${i}` }).metadata.pending.id
    assert.match(id, ID_FORMAT)
    ids.add(id)
  }
  assert.equal(ids.size, 50)
})

test("pending: key order is the caller's keys followed by the generated id", () => {
  const r = pending({ prompt: "Pick a size", kind: "input", data: { choices: ["S", "M"] }, expiresAt: "2030-01-01T00:00:00Z" })
  const req = r.metadata.pending
  assert.deepEqual(Object.keys(req), ["prompt", "kind", "data", "expiresAt", "id"])
  assert.deepEqual(req.data, { choices: ["S", "M"] })
  assert.equal(req.expiresAt, "2030-01-01T00:00:00Z")
})

test("pending: a caller-supplied id is kept, in its own position", () => {
  const r = pending({ kind: "approval", id: "ticket-77", prompt: "OK to merge?" })
  assert.deepEqual(Object.keys(r.metadata.pending), ["kind", "id", "prompt"])
  assert.equal(r.metadata.pending.id, "ticket-77")
  assert.equal(pendingOf(r).id, "ticket-77")
})

test("pending: an explicit null or undefined id is generated in the caller's position", () => {
  // The reference builds { ...request, id }: a key the caller wrote keeps its place.
  for (const id of [null, undefined]) {
    const req = pending({ id, kind: "approval", prompt: "Proceed?" }).metadata.pending
    assert.match(req.id, ID_FORMAT)
    assert.deepEqual(Object.keys(req), ["id", "kind", "prompt"], `id: ${id}`)
  }
})

test("pending: null or undefined throws a TypeError at once, other values are accepted as the reference accepts them", () => {
  for (const bad of [null, undefined]) assert.throws(() => pending(bad), TypeError)
  const text = pending("ok?")
  assert.equal(text.output, "undefined")
  assert.deepEqual(Object.keys(pendingOf(text)), ["0", "1", "2", "id"])
  assert.equal(pending(42).output, "undefined")
})

test("pending: a missing prompt reads \"undefined\", a non-string one as JavaScript writes it", () => {
  assert.equal(pending({ kind: "input" }).output, "undefined")
  assert.equal(pending({ kind: "input", prompt: 7 }).output, "7")
  assert.equal(pending({ kind: "input", prompt: 7, url: "https://x" }).output, "7\nhttps://x")
})

test("authRequired: default prompt, authorization kind, url appended to the output", () => {
  const r = authRequired("https://idp.test/login")
  const req = pendingOf(r)
  assert.equal(req.kind, "authorization")
  assert.equal(req.prompt, "Authorization required to continue")
  assert.equal(req.url, "https://idp.test/login")
  assert.match(req.id, ID_FORMAT)
  assert.equal(r.output, "Authorization required to continue\nhttps://idp.test/login")
  assert.equal(r.isError, true)
})

test("authRequired: a custom prompt replaces the default", () => {
  const r = authRequired("https://idp.test/login", "Connect your calendar first")
  assert.equal(pendingOf(r).prompt, "Connect your calendar first")
  assert.equal(r.output, "Connect your calendar first\nhttps://idp.test/login")
})

test("pendingOf: reads the Request off a suspension, nothing off anything else", () => {
  const suspended = pending({ kind: "input", prompt: "Which repo?" })
  assert.equal(pendingOf(suspended), suspended.metadata.pending, "the very object on metadata.pending")
  assert.equal(pendingOf({ output: "fine", isError: false }), undefined)
  assert.equal(pendingOf({ output: "bad", isError: true }), undefined)
  assert.equal(pendingOf({ output: "x", isError: false, metadata: { elapsedMs: 3 } }), undefined)
  assert.equal(pendingOf({ output: "x", isError: false, metadata: {} }), undefined)
})

test("sanitize: everything outside [a-zA-Z0-9_-] becomes one underscore per UTF-16 unit", () => {
  const cases = {
    "list invoices": "list_invoices",
    "github.create_issue": "github_create_issue",
    "a/b:c@d": "a_b_c_d",
    "keep-dashes_and_underscores09": "keep-dashes_and_underscores09",
    "naïve": "na_ve",
    "🚀launch": "__launch",
    "": "",
  }
  for (const [input, expected] of Object.entries(cases)) assert.equal(sanitize(input), expected, JSON.stringify(input))
  // Same rule as a non-unicode regex replacement, over a mixed bag of inputs.
  for (const s of ["tab\there", "new\nline", "Ω≈ç", "x y\u00a0z", "𝔘nicode", "😀😀"]) {
    assert.equal(sanitize(s), s.replace(/[^a-zA-Z0-9_-]/g, "_"))
  }
})
