// The package has two entries: index.js for require() and index.mjs for import, one set of
// objects behind both. ESM consumers get every named export either way.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { createRequire } from "node:module"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as esm from "../index.mjs"
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

test("package.json exposes both entries and their types through exports", () => {
  const manifest = require("../package.json")
  assert.equal(manifest.name, "toolnexus")
  assert.equal(manifest.main, "index.js")
  assert.deepEqual(manifest.exports["."], {
    import: { types: "./index.d.mts", default: "./index.mjs" },
    require: { types: "./index.d.ts", default: "./index.js" },
  })
  for (const file of ["index.js", "index.mjs", "index.d.ts", "index.d.mts"]) assert.ok(manifest.files.includes(file), `${file} is published`)
})

test("the ES module entry exports exactly what the CommonJS entry does, the same objects, and it as default", () => {
  const cjs = require("../index.js")
  const named = Object.keys(esm).filter((k) => k !== "default")
  assert.deepEqual(named.sort(), Object.keys(cjs).sort())
  for (const name of named) assert.equal(esm[name], cjs[name], `${name} is shared`)
  assert.equal(esm.default, cjs)
})

test("a project importing the package by name gets the ES module entry, requiring it the CommonJS one, one copy between them", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-entry-"))
  try {
    fs.mkdirSync(path.join(dir, "node_modules"))
    fs.symlinkSync(fileURLToPath(new URL("..", import.meta.url)), path.join(dir, "node_modules", "toolnexus"), "dir")
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
    fs.writeFileSync(
      path.join(dir, "main.js"),
      `import tn, { createClient, agents } from "toolnexus"
      import { createRequire } from "node:module"
      const cjs = createRequire(import.meta.url)("toolnexus")
      console.log(JSON.stringify({
        imported: import.meta.resolve("toolnexus").split("/").pop(),
        required: createRequire(import.meta.url).resolve("toolnexus").split("/").pop(),
        same: tn === cjs && createClient === cjs.createClient && agents === cjs.agents,
      }))`,
    )
    const r = spawnSync(process.execPath, ["main.js"], { cwd: dir, encoding: "utf8" })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { imported: "index.mjs", required: "index.js", same: true })
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
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
