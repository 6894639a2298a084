// One export list: lib/index.js's module.exports. The entries are checked against it, in order
// and by identity (index.js, what `require("toolnexus")` gives; index.mjs, the named ES exports),
// and the public types against it: index.d.ts declares a value (function, class, const,
// namespace) for each name and for no other.
import { test } from "node:test"
import assert from "node:assert/strict"
import { createRequire } from "node:module"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const list = Object.keys(require("../lib/index.js"))
const cjs = require("../index.js")

/** The value names a .d.ts exports: `export declare function|class|const|namespace|enum X`. */
function declaredValues(file) {
  const text = readFileSync(join(root, file), "utf8")
  const names = new Set()
  for (const m of text.matchAll(/^export\s+(?:declare\s+)?(?:function|class|const|let|var|namespace|enum|abstract\s+class)\s+([A-Za-z_$][\w$]*)/gm)) {
    // A namespace holding only types is no value.
    if (/namespace/.test(m[0]) && m[1] === "StandardSchemaV1") continue
    names.add(m[1])
  }
  return names
}

test("lib/index.js lists the exports once; index.js hands out each, in that order, the same objects", () => {
  assert.ok(list.length > 50, `${list.length} exports`)
  assert.deepEqual(Object.keys(cjs), list)
})

test("index.mjs exports exactly the list, each the very object index.js gives", async () => {
  const esm = await import("../index.mjs")
  const named = Object.keys(esm).filter((k) => k !== "default")
  assert.deepEqual(named.sort(), [...list].sort())
  for (const name of list) assert.equal(esm[name], cjs[name], name)
  assert.equal(esm.default, cjs)
})

test("index.d.ts declares a value for every export and none that does not exist", () => {
  const declared = declaredValues("index.d.ts")
  assert.deepEqual([...list].filter((n) => !declared.has(n)), [], "exported but not declared")
  assert.deepEqual([...declared].filter((n) => !list.includes(n)), [], "declared but not exported")
})

test("index.d.mts re-exports the same types (it is the ES entry's types)", () => {
  const mts = readFileSync(join(root, "index.d.mts"), "utf8")
  assert.match(mts, /export \* from "\.\/index\.js"|export \* from "\.\/index"/)
})
