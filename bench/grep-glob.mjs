// grep and glob over a generated tree of 50,000 files: the built-in tools of this package
// (Rust: ignore + grep-searcher) against the same operation written in plain Node (a recursive
// fs walk, readFile, split into lines, RegExp). Both produce the same `file:line:text` /
// relative-path output; the script checks they agree before it reports a timing.
//
//   node bench/grep-glob.mjs            FILES=50000 REPS=5 by default
//
// Not a test: it prints medians and the ratio and writes bench/grep-glob.json.

import fs from "node:fs"
import fsp from "node:fs/promises"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { createRequire } from "node:module"

const here = path.dirname(fileURLToPath(import.meta.url))
const { createBuiltinTools } = createRequire(import.meta.url)(path.join(here, "..", "index.js"))

const FILES = Number(process.env.FILES ?? 50_000)
const REPS = Number(process.env.REPS ?? 5)
const PER_DIR = 100
const LIMIT = 10_000_000 // far above any result count: every run scans the whole tree

function makeTree(root) {
  const exts = [".ts", ".js", ".md", ".txt"]
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(root, `pkg${Math.floor(i / (PER_DIR * 10))}`, `mod${Math.floor(i / PER_DIR) % 10}`)
    if (i % PER_DIR === 0) fs.mkdirSync(dir, { recursive: true })
    const lines = []
    for (let l = 0; l < 20; l++) lines.push(l === 7 && i % 13 === 0 ? `const needle_${i} = ${l}` : `line ${l} of file ${i}: lorem ipsum dolor`)
    fs.writeFileSync(path.join(dir, `file${i}${exts[i % exts.length]}`), lines.join("\n"))
  }
}

// ---- the plain-Node peers ----

function* walk(dir) {
  let entries
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return
  }
  for (const e of entries) {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) {
      if (e.name !== "node_modules" && e.name !== ".git") yield* walk(full)
    } else if (e.isFile()) yield full
  }
}

async function nodeGrep(root, pattern) {
  const re = new RegExp(pattern)
  const out = []
  for (const file of walk(root)) {
    const lines = fs.readFileSync(file, "utf8").split("\n")
    for (let i = 0; i < lines.length; i++) if (re.test(lines[i])) out.push(`${file}:${i + 1}:${lines[i]}`)
  }
  return out
}

function nodeGlob(root, suffix) {
  const out = []
  for (const file of walk(root)) if (file.endsWith(suffix)) out.push(path.relative(root, file))
  return out.sort()
}

// ---- timing ----

async function time(fn) {
  const t0 = process.hrtime.bigint()
  const value = await fn()
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const root = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-grep-bench-"))
try {
  const t0 = Date.now()
  makeTree(root)
  console.log(`tree: ${FILES} files under ${root} (${Date.now() - t0} ms to generate)`)
  const tools = Object.fromEntries(createBuiltinTools().map((t) => [t.name, t]))
  const ops = {
    grep: {
      rust: async () => (await tools.grep.execute({ pattern: "needle_\\d+", path: root, limit: LIMIT })).output.split("\n"),
      node: () => nodeGrep(root, "needle_\\d+"),
    },
    glob: {
      rust: async () => (await tools.glob.execute({ pattern: "**/*.ts", path: root, limit: LIMIT })).output.split("\n"),
      node: () => nodeGlob(root, ".ts"),
    },
  }
  const report = { files: FILES, reps: REPS, node: process.version, results: {} }
  for (const [op, impl] of Object.entries(ops)) {
    const a = await impl.rust()
    const b = await impl.node()
    const same = a.length === b.length && [...a].sort().join("\n") === [...b].sort().join("\n")
    if (!same) throw new Error(`${op}: outputs differ (${a.length} vs ${b.length} lines)`)
    const rust = []
    const node = []
    for (let r = 0; r < REPS; r++) {
      // alternate which goes first, so neither always runs on a warmer page cache
      const pair = r % 2 ? [["node", impl.node], ["rust", impl.rust]] : [["rust", impl.rust], ["node", impl.node]]
      for (const [who, fn] of pair) (who === "rust" ? rust : node).push((await time(fn)).ms)
    }
    const res = { lines: a.length, toolnexus_ms: median(rust), node_ms: median(node), ratio: median(rust) / median(node) }
    report.results[op] = res
    console.log(`${op}: ${res.lines} lines; toolnexus ${res.toolnexus_ms.toFixed(1)} ms, plain Node ${res.node_ms.toFixed(1)} ms, ratio ${res.ratio.toFixed(2)}x (median of ${REPS})`)
  }
  fs.writeFileSync(path.join(here, "grep-glob.json"), JSON.stringify(report, null, 2) + "\n")
} finally {
  fs.rmSync(root, { recursive: true, force: true })
}
