// The bundle (dist/toolnexus.js, what index.js loads) keeps every class's and function's name as
// lib/ wrote it: user code logs and branches on `constructor.name` and `fn.name`.
import { test } from "node:test"
import assert from "node:assert/strict"
import { createRequire } from "node:module"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const require = createRequire(import.meta.url)
const bundled = require("../index.js")
const source = require("../lib/index.js")

/** Every function reachable from an export object, by its dotted path. */
function functions(obj, prefix = "", seen = new Set()) {
  const out = []
  if (obj === null || (typeof obj !== "object" && typeof obj !== "function") || seen.has(obj)) return out
  seen.add(obj)
  for (const key of Object.keys(obj)) {
    const v = obj[key]
    if (typeof v === "function") out.push([prefix + key, v])
    if (v !== null && typeof v === "object") out.push(...functions(v, `${prefix}${key}.`, seen))
  }
  return out
}

test("the bundle loads, not lib/ itself (otherwise this file checks nothing)", () => {
  assert.match(require.resolve("../index.js"), /index\.js$/)
  assert.notEqual(bundled.createToolkit, source.createToolkit)
})

test("every exported class and function has the name lib/ gives it", () => {
  const fromSource = new Map(functions(source))
  const list = functions(bundled)
  assert.ok(list.length > 40, `found ${list.length} functions`)
  for (const [path, fn] of list) {
    assert.ok(fromSource.has(path), `${path} is exported by the bundle but not by lib/index.js`)
    assert.equal(fn.name, fromSource.get(path).name, `${path}.name`)
  }
})

test("instances name their classes: FileTaskStore, InMemoryTaskStore and the rest", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "tn-names-"))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const { FileTaskStore, InMemoryTaskStore, InMemoryConversationStore, SqliteStore, createToolkit, createClient } = bundled
  assert.equal(new FileTaskStore(dir).constructor.name, "FileTaskStore")
  assert.equal(new InMemoryTaskStore().constructor.name, "InMemoryTaskStore")
  assert.equal(new InMemoryConversationStore().constructor.name, "InMemoryConversationStore")
  assert.equal(new SqliteStore(join(dir, "s.db")).constructor.name, "SqliteStore")
  assert.equal((await createToolkit({})).constructor.name, "Toolkit")
  assert.equal(createClient({ baseUrl: "http://127.0.0.1:1", model: "m" }).constructor.name, "Client")
})
