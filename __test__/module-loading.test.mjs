// The package entry is CommonJS; ESM consumers must still get every named export.
import test from "node:test"
import assert from "node:assert/strict"
import { createRequire } from "node:module"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
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

test("the agents namespace compiles its code on first use and then holds plain data members", () => {
  // A fresh process, so nothing else has touched the namespace yet.
  const program = `
    const { agents } = require(process.argv[1])
    const before = Object.keys(agents)
    // Until a member is read, each is an accessor: the namespace's code has not run.
    const accessors = (ks) => ks.every((k) => typeof Object.getOwnPropertyDescriptor(agents, k).get === "function")
    const loadedEarly = !accessors(before)
    const { Agent } = agents
    const after = Object.keys(agents)
    const plain = after.every((k) => {
      const d = Object.getOwnPropertyDescriptor(agents, k)
      return "value" in d && d.writable && d.enumerable && d.configurable && d.value !== undefined
    })
    const a = agents.agent("helper", { does: "helps" })
    console.log(JSON.stringify({ before, after, loadedEarly, loadedLate: !accessors(Object.keys(agents)), plain, agent: typeof Agent, made: a, isAgent: a instanceof Agent }))
  `
  const r = spawnSync(process.execPath, ["-e", program, fileURLToPath(new URL("../index.js", import.meta.url))], { encoding: "utf8" })
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.equal(out.loadedEarly, false, "the agents code does not run at import")
  assert.equal(out.loadedLate, true, "reading a member loads it")
  assert.deepEqual(out.after, out.before, "the same members, in the same order, before and after")
  assert.equal(out.before.length, 22)
  assert.equal(out.plain, true, "every member is a plain data property once loaded")
  assert.equal(out.agent, "function")
  assert.deepEqual(out.made, { name: "helper", spec: { does: "helps" } })
  assert.equal(out.isAgent, true, "agents.agent makes an instance of agents.Agent")
})

test("writing an agents member before any read keeps the written value", () => {
  const program = `
    const { agents } = require(process.argv[1])
    const mine = () => "mine"
    agents.harness = mine
    console.log(JSON.stringify({ same: agents.harness === mine, other: typeof agents.fromDir }))
  `
  const r = spawnSync(process.execPath, ["-e", program, fileURLToPath(new URL("../index.js", import.meta.url))], { encoding: "utf8" })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { same: true, other: "function" })
})
