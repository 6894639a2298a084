#!/usr/bin/env node
// Checks the layering rule of ARCHITECTURE.md, on the import graph of each crate:
//  1. No import cycle between the modules (files) of a crate. Every `crate::…` and `super::…`
//     path a file names (in `use` statements and inline) is resolved to the file that defines the
//     module it reaches (a name the crate root re-exports, to the module it comes from); unit-test
//     modules are left out. A strongly connected group of two or more files is a cycle.
//  2. For the core, the layer table of ARCHITECTURE.md (between `<!-- layers:begin -->` and
//     `<!-- layers:end -->`: a Markdown table `| Layer | Modules | … |`, top layer first, each module
//     a `name` in backticks) names every top-level module (a file or folder directly under the
//     crate's source folder) exactly once and nothing else, and no file imports a module of a
//     higher layer than its own. Modules of one layer may import each other.
// Anything found is printed and the exit code is 1.
// Usage: node .ci/layers.mjs                      both crates; the table checked against crates/core/src
//        node .ci/layers.mjs [--layers FILE.md] [--edges] DIR ...
//          the crates in DIR ...; with --layers, FILE.md's table checked against the first DIR;
//          with --edges, each top-level module's imports of other top-level modules are printed.
import { readFileSync, readdirSync, statSync, existsSync } from "node:fs"
import { join, relative } from "node:path"

const args = process.argv.slice(2)
const flag = (name) => {
  const i = args.indexOf(name)
  if (i < 0) return undefined
  const [, value] = args.splice(i, name === "--edges" ? 1 : 2)
  return value ?? true
}
const printEdges = flag("--edges") === true
let layersDoc = flag("--layers")
if (layersDoc === true) {
  console.error("--layers needs a file")
  process.exit(2)
}
const roots = args.length ? args : ["crates/core/src", "src"]
if (!args.length) layersDoc = "ARCHITECTURE.md"

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

/** The file's top-level module (`client/run.rs` -> "client"), or undefined for the crate root. */
function topOf(root, file) {
  return modPath(root, file)[0]
}

/** What the crate root re-exports (`pub use error::{Error, …}`): name -> the module path it comes from. */
function rootExports(root) {
  const file = fileOf(root, [])
  const out = new Map()
  if (!file) return out
  for (const m of code(readFileSync(file, "utf8")).matchAll(/\bpub\s+use\s+([^;]+);/g)) {
    for (const p of expand(m[1])) {
      const segs = p.split("::").filter((x) => x && x !== "crate" && x !== "self")
      if (segs.length > 1) out.set(segs[segs.length - 1], segs.slice(0, -1))
    }
  }
  return out
}

/**
 * The import graph of one crate: file -> Map(target file -> the first path written for it).
 * Files of a unit-test module (`#[cfg(test)] mod tests;`) are left out, as inline ones are.
 */
function graph(root) {
  let files = rustFiles(root)
  const tests = []
  for (const file of files) {
    const text = code(readFileSync(file, "utf8"))
    for (const m of text.matchAll(/#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g)) {
      tests.push([...modPath(root, file), m[1]].join("/"))
    }
  }
  const isTest = (f) => {
    const p = modPath(root, f).join("/")
    return tests.some((t) => p === t || p.startsWith(t + "/"))
  }
  files = files.filter((f) => !isTest(f))
  const exported = rootExports(root)
  const rootFile = fileOf(root, [])
  const edges = new Map(files.map((f) => [f, new Map()]))
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
      let path = [...base, ...segs].filter((x) => x !== "self")
      let target = fileOf(root, path)
      // `crate::Error`: a name the root re-exports is an import of the module it comes from.
      if (target === rootFile && file !== rootFile && exported.has(path[0])) {
        path = [...exported.get(path[0]), ...path.slice(1)]
        target = fileOf(root, path)
      }
      const out = edges.get(file)
      if (target && target !== file && !out.has(target)) out.set(target, p)
    }
  }
  return { files, edges }
}

/** The cycles of a graph (Tarjan's strongly connected components of two or more files). */
function cycles(files, edges) {
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
    for (const w of edges.get(v)?.keys() ?? []) {
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
  return sccs
}

/**
 * The layer table of a Markdown file: [{ layer, modules: [name, …] }, …], top layer first.
 * Throws, saying what is wrong, when the delimited section or its table cannot be read.
 */
function layerTable(file) {
  const text = readFileSync(file, "utf8")
  const begin = text.indexOf("<!-- layers:begin -->")
  const end = text.indexOf("<!-- layers:end -->")
  if (begin < 0 || end < begin) throw new Error(`${file}: no <!-- layers:begin --> … <!-- layers:end --> section`)
  const rows = text
    .slice(begin, end)
    .split("\n")
    .filter((l) => l.trim().startsWith("|"))
    .map((l) => l.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim()))
  const [header, rule, ...body] = rows
  if (!header || !/^layer$/i.test(header[0]) || !/^modules$/i.test(header[1] ?? "") || !rule?.every((c) => /^:?-+:?$/.test(c))) {
    throw new Error(`${file}: the layers section holds no table whose first columns are "Layer | Modules"`)
  }
  const layers = body.map((cells) => ({
    layer: cells[0].replace(/[`*]/g, ""),
    modules: [...(cells[1] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1].replace(/\/$/, "")),
  }))
  for (const l of layers) if (!l.layer || !l.modules.length) throw new Error(`${file}: a layer row without a name or modules: "${l.layer}"`)
  return layers
}

/** The failures of `root`'s graph against the layer table in `doc`, as lines of text. */
function layerFailures(root, doc, files, edges) {
  const out = []
  let layers
  try {
    layers = layerTable(doc)
  } catch (e) {
    return [e.message]
  }
  const rank = new Map()
  for (const [i, { layer, modules }] of layers.entries()) {
    for (const m of modules) {
      if (rank.has(m)) out.push(`${doc}: \`${m}\` is in two layers ("${layers[rank.get(m)].layer}" and "${layer}")`)
      else rank.set(m, i)
    }
  }
  const modules = new Set(files.map((f) => topOf(root, f)).filter(Boolean))
  for (const m of [...modules].sort()) {
    if (!rank.has(m)) out.push(`${doc}: the layer table does not name the module \`${m}\` (${join(root, m)}…)`)
  }
  for (const m of rank.keys()) {
    if (!modules.has(m)) out.push(`${doc}: the layer table names \`${m}\`, which is no module of ${root}`)
  }
  for (const file of files) {
    const from = topOf(root, file)
    if (!rank.has(from)) continue
    const seen = new Set()
    for (const [target, written] of edges.get(file)) {
      const to = topOf(root, target)
      if (!rank.has(to) || to === from || seen.has(to) || rank.get(to) >= rank.get(from)) continue
      seen.add(to)
      out.push(
        `${file} (layer "${layers[rank.get(from)].layer}") imports \`${to}\` (\`${written}\`, layer "${layers[rank.get(to)].layer}"): a higher layer`,
      )
    }
  }
  return out
}

let failed = false
for (const [n, root] of roots.entries()) {
  const { files, edges } = graph(root)
  const count = [...edges.values()].reduce((k, s) => k + s.size, 0)
  if (printEdges) {
    const tops = new Map()
    for (const [file, into] of edges) {
      for (const target of into.keys()) {
        const [a, b] = [topOf(root, file), topOf(root, target)]
        if (a && b && a !== b) tops.set(a, (tops.get(a) ?? new Set()).add(b))
      }
    }
    for (const [a, bs] of [...tops].sort()) console.log(`${root}: ${a} -> ${[...bs].sort().join(", ")}`)
  }
  const sccs = cycles(files, edges)
  if (sccs.length === 0) console.log(`${root}: ${files.length} modules, ${count} imports, no cycle`)
  else {
    failed = true
    console.log(`${root}: ${sccs.length} import cycle(s)`)
    for (const c of sccs) {
      console.log(`  cycle of ${c.length}:`)
      for (const f of c) {
        const into = [...edges.get(f).keys()].filter((t) => c.includes(t)).map((t) => relative(root, t))
        console.log(`    ${relative(root, f)} -> ${into.join(", ")}`)
      }
    }
  }
  if (n === 0 && layersDoc) {
    const problems = layerFailures(root, layersDoc, files, edges)
    if (problems.length === 0) console.log(`${root}: every import keeps to the layers of ${layersDoc}`)
    else {
      failed = true
      console.log(`${root}: ${problems.length} layering problem(s) against ${layersDoc}`)
      for (const p of problems) console.log(`  ${p}`)
    }
  }
}
process.exit(failed ? 1 : 0)
