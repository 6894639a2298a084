// The package entry is CommonJS; ESM consumers must still get every named export.
import test from "node:test"
import assert from "node:assert/strict"
import { createRequire } from "node:module"
import * as ns from "../index.js"
import pkgDefault, { pending, defineTool, createToolkit, createClient, toOpenAI, sanitize } from "../index.js"

const require = createRequire(import.meta.url)

const EXPORTS = [
  "pending", "authRequired", "pendingOf", "sanitize",
  "defineTool", "tool", "collectTools",
  "toOpenAI", "toAnthropic", "toGemini",
  "Toolkit", "createToolkit", "Client", "createClient",
]

test("ESM named imports of the CommonJS entry resolve to functions", () => {
  for (const fn of [pending, defineTool, createToolkit, createClient, toOpenAI, sanitize]) {
    assert.equal(typeof fn, "function")
  }
  for (const name of EXPORTS) assert.equal(typeof ns[name], "function", `named export ${name}`)
})

test("ESM named exports are the very functions require() hands out", () => {
  const cjs = require("../index.js")
  assert.equal(pkgDefault, cjs, "the default import is module.exports")
  for (const name of EXPORTS) assert.equal(ns[name], cjs[name], `${name} is shared`)
})

test("package.json exposes the entry and its types through exports", () => {
  const manifest = require("../package.json")
  assert.equal(manifest.name, "toolnexus")
  assert.equal(manifest.main, "index.js")
  assert.equal(manifest.exports["."].default, "./index.js")
  assert.equal(manifest.exports["."].types, "./index.d.ts")
})
