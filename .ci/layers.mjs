#!/usr/bin/env node
// Checks the layering rule of ARCHITECTURE.md: no import cycle between the modules (files) of a
// crate. Every `crate::…` and `super::…` path a file names (in `use` statements and inline) is
// resolved to the file that defines the module it reaches; unit-test modules are left out. A
// strongly connected group of two or more files is a cycle: they are printed and the exit code
// is 1. Usage: node .ci/layers.mjs [crate source dir ...] (default: crates/core/src and src).
import { readFileSync, readdirSync, statSync, existsSync } from "node:fs"
import { join, relative } from "node:path"

const roots = process.argv.slice(2).length ? process.argv.slice(2) : ["crates/core/src", "src"]

function rustFiles(dir) {
  const out = []
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) out.push(...rustFiles(p))
    else if (name.endsWith(".rs")) out.push(p)
  }
  return out
}

/** The module path of a file, relative to the crate root: `client/mod.rs` -> ["client"]. */
function modPath(root, file) {
  const rel = relative(root, file).replace(/\.rs$/, "").split("/")
  const last = rel[rel.length - 1]
  if (last === "mod" || (rel.length === 1 && (last === "lib" || last === "main"))) rel.pop()
  return rel
}

/** The file defining module `path` (or the nearest enclosing module that has a file). */
function fileOf(root, path) {
  for (let n = path.length; n >= 0; n--) {
    const p = path.slice(0, n)
    if (n === 0) return [join(root, "lib.rs"), join(root, "main.rs")].find(existsSync)
    const a = join(root, ...p) + ".rs"
    const b = join(root, ...p, "mod.rs")
    if (existsSync(a)) return a
    if (existsSync(b)) return b
  }
}

/** The text without comments, string literals and `#[cfg(test)] mod … { … }` blocks. */
function code(text) {
  let s = text
    .replace(/\/\/[^\n]*/g, "")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/r#*"[\s\S]*?"#*/g, '""')
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
  for (;;) {
    const m = /#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{/.exec(s)
    if (!m) break
    let depth = 0
    let i = m.index + m[0].length - 1
    for (; i < s.length; i++) {
      if (s[i] === "{") depth++
      else if (s[i] === "}" && --depth === 0) break
    }
    s = s.slice(0, m.index) + s.slice(i + 1)
  }
  // Inside an inline `mod name { … }`, `super` is the file's own module.
  for (const m of [...s.matchAll(/\bmod\s+\w+\s*\{/g)].reverse()) {
    let depth = 0
    let i = m.index + m[0].length - 1
    for (; i < s.length; i++) {
      if (s[i] === "{") depth++
      else if (s[i] === "}" && --depth === 0) break
    }
    s = s.slice(0, m.index) + s.slice(m.index, i + 1).replace(/\bsuper::/g, "self::") + s.slice(i + 1)
  }
  return s
}

/** Expand `a::{b, c::{d, e}}` into ["a::b", "a::c::d", "a::c::e"]. */
function expand(tree) {
  // `x as y` names x: drop the alias while the words are still apart (`lease as le`, not `leaseasle`).
  tree = tree.replace(/\s+as\s+\w+/g, "").replace(/\s+/g, "")
  const open = tree.indexOf("{")
  if (open < 0) return [tree]
  const prefix = tree.slice(0, open)
  const inner = tree.slice(open + 1, tree.lastIndexOf("}"))
  const parts = []
  let depth = 0
  let start = 0
  for (let i = 0; i <= inner.length; i++) {
    const c = inner[i]
    if (c === "{") depth++
    else if (c === "}") depth--
    else if ((c === "," && depth === 0) || i === inner.length) {
      const part = inner.slice(start, i)
      if (part) parts.push(...expand(part).map((x) => prefix + x))
      start = i + 1
    }
  }
  return parts
}

let failed = false
for (const root of roots) {
  const files = rustFiles(root)
  const edges = new Map(files.map((f) => [f, new Set()]))
  for (const file of files) {
    const here = modPath(root, file)
    const src = code(readFileSync(file, "utf8"))
    const children = new Set([...src.matchAll(/\bmod\s+(\w+)\s*;/g)].map((m) => m[1]))
    const paths = []
    for (const m of src.matchAll(/\buse\s+([^;]+);/g)) paths.push(...expand(m[1]))
    for (const m of src.matchAll(/\b((?:crate|super|self)(?:::\w+)+)/g)) paths.push(m[1])
    for (const p of paths) {
      const segs = p.split("::").filter((x) => x && x !== "*")
      let base
      if (segs[0] === "self") segs.shift()
      if (children.has(segs[0])) base = here.slice()
      else if (segs[0] === "crate") base = []
      else if (segs[0] === "super") {
        // `super` of a file module is its parent; a `mod.rs`/`lib.rs` file is its own module.
        base = here.slice()
        while (segs[0] === "super") {
          base.pop()
          segs.shift()
        }
      } else continue
      if (segs[0] === "crate") segs.shift()
      const target = fileOf(root, [...base, ...segs].filter((x) => x !== "self"))
      if (target && target !== file) edges.get(file)?.add(target)
    }
  }
  // Tarjan's strongly connected components.
  let index = 0
  const idx = new Map()
  const low = new Map()
  const stack = []
  const on = new Set()
  const sccs = []
  const visit = (v) => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v), low.get(w)))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)))
    }
    if (low.get(v) === idx.get(v)) {
      const c = []
      let w
      do {
        w = stack.pop()
        on.delete(w)
        c.push(w)
      } while (w !== v)
      if (c.length > 1) sccs.push(c)
    }
  }
  for (const f of files) if (!idx.has(f)) visit(f)
  const count = [...edges.values()].reduce((n, s) => n + s.size, 0)
  if (sccs.length === 0) {
    console.log(`${root}: ${files.length} modules, ${count} imports, no cycle`)
    continue
  }
  failed = true
  console.log(`${root}: ${sccs.length} import cycle(s)`)
  for (const c of sccs) {
    console.log(`  cycle of ${c.length}:`)
    for (const f of c) {
      const into = [...edges.get(f)].filter((t) => c.includes(t)).map((t) => relative(root, t))
      console.log(`    ${relative(root, f)} -> ${into.join(", ")}`)
    }
  }
}
process.exit(failed ? 1 : 0)
