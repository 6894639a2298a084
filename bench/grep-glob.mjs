// grep and glob over a generated tree of 50,000 files: the built-in tools of this package
// (Rust: a fixed-order walk + grep-searcher) against ripgrep (`rg`, as a child process) and
// against the same operation written in plain Node (a recursive fs walk, readFile, split into
// lines, RegExp). All produce the same `file:line:text` / relative-path output; the script
// checks they agree (as sets) before it reports a timing.
//
//   node bench/grep-glob.mjs            FILES=50000 REPS=5 by default
//
// `rg` is taken from PATH; failing that, from bench/.tools (gitignored), where the script puts
// the Debian package's binary itself (`apt-get download ripgrep` + `dpkg-deb -x`, no root
// needed). If neither works the rg column is reported as skipped, with the reason.
//
// Not a test: it prints medians and ratios and writes bench/grep-glob.json.

import fs from "node:fs"
import { spawn, spawnSync } from "node:child_process"
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

// ---- ripgrep ----

const TOOLS = path.join(here, ".tools")

function rgVersion(bin) {
  const r = spawnSync(bin, ["--version"], { encoding: "utf8" })
  return r.status === 0 ? r.stdout.split("\n")[0].trim() : null
}

/** `{ bin, version, source }`, or `{ skipped: reason }`. */
function findRg() {
  const onPath = rgVersion("rg")
  if (onPath) return { bin: "rg", version: onPath, source: "PATH" }
  const local = path.join(TOOLS, "usr", "bin", "rg")
  if (fs.existsSync(local)) {
    const v = rgVersion(local)
    if (v) return { bin: local, version: v, source: "bench/.tools (Debian package ripgrep)" }
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-rg-deb-"))
  try {
    const dl = spawnSync("apt-get", ["download", "ripgrep"], { cwd: tmp, encoding: "utf8", timeout: 120_000 })
    if (dl.error || dl.status !== 0) {
      return { skipped: `rg not on PATH and \`apt-get download ripgrep\` failed: ${(dl.error?.message ?? dl.stderr).trim()}` }
    }
    const deb = fs.readdirSync(tmp).find((f) => f.endsWith(".deb"))
    if (!deb) return { skipped: "rg not on PATH and `apt-get download ripgrep` left no .deb" }
    fs.mkdirSync(TOOLS, { recursive: true })
    const x = spawnSync("dpkg-deb", ["-x", path.join(tmp, deb), TOOLS], { encoding: "utf8" })
    if (x.error || x.status !== 0) return { skipped: `dpkg-deb -x ${deb} failed: ${(x.error?.message ?? x.stderr).trim()}` }
    const v = rgVersion(local)
    if (!v) return { skipped: `${local} from ${deb} does not run` }
    return { bin: local, version: v, source: `bench/.tools (Debian package, ${deb})` }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

// The walk our tools make: hidden files and files a .gitignore names are listed, no ignore file
// is read, directories named node_modules or .git are skipped, links are not followed, binary
// files are searched as text, the pattern is case-sensitive. rg is told the same.
const RG_COMMON = ["--no-config", "--hidden", "--no-ignore", "-g", "!node_modules/", "-g", "!.git/"]

/** Runs rg to completion; resolves to its stdout split into lines (the final newline dropped). */
function runRg(bin, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] })
    const out = []
    let err = ""
    child.stdout.on("data", (d) => out.push(d))
    child.stderr.on("data", (d) => (err += d))
    child.on("error", reject)
    child.on("close", (code) => {
      // 0: matches, 1: none; anything else is an error
      if (code !== 0 && code !== 1) return reject(new Error(`rg exited ${code}: ${err.trim()}`))
      const text = Buffer.concat(out).toString("utf8")
      resolve(text === "" ? [] : text.replace(/\n$/, "").split("\n"))
    })
  })
}

// ---- timing ----

async function time(fn) {
  const t0 = process.hrtime.bigint()
  const value = await fn()
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Wall time of a child process from spawn to exit, its stdout discarded after it is read. */
function timeChild(bin, args) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint()
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout.on("data", () => {})
    child.on("error", reject)
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`${bin} ${args.join(" ")} exited ${code}`))
      resolve(Number(process.hrtime.bigint() - t0) / 1e6)
    })
  })
}

// The patterns: the same search for every peer. The lookaround one runs on our ECMAScript
// engine (regress) and on rg's PCRE2 (`-P`); the plain one on the fast engines of both.
const GREP_PATTERN = "needle_\\d+"
const LOOKAROUND_PATTERN = "(?<=const )needle_\\d+(?= =)"
const GLOB_PATTERN = "**/*.ts"
// Our grep searches on min(available cores, 8) threads; our glob walks on one.
const GREP_THREADS = Math.min(Math.max(os.availableParallelism(), 1), 8)
const GLOB_THREADS = 1

function ourCall(tools, op, root) {
  if (op === "grep") return tools.grep.execute({ pattern: GREP_PATTERN, path: root, limit: LIMIT })
  if (op === "grep_lookaround") return tools.grep.execute({ pattern: LOOKAROUND_PATTERN, path: root, limit: LIMIT })
  return tools.glob.execute({ pattern: GLOB_PATTERN, path: root, limit: LIMIT })
}

// `--child <op> <root>`: one call of our tool in a fresh process, its output on stdout (the same
// shape of measurement as rg's: spawn to exit). `--child none` only loads the addon.
if (process.argv[2] === "--child") {
  const [, , , op, root] = process.argv
  const tools = Object.fromEntries(createBuiltinTools().map((t) => [t.name, t]))
  if (op !== "none") process.stdout.write((await ourCall(tools, op, root)).output + "\n")
  process.exit(0)
}

const sorted = (xs) => [...xs].sort().join("\n")

const rg = findRg()
console.log(rg.skipped ? `rg: skipped (${rg.skipped})` : `rg: ${rg.version} from ${rg.source}`)

const root = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-grep-bench-"))
try {
  const t0 = Date.now()
  makeTree(root)
  console.log(`tree: ${FILES} files under ${root} (${Date.now() - t0} ms to generate)`)
  const tools = Object.fromEntries(createBuiltinTools().map((t) => [t.name, t]))
  const rgArgs = {
    // file:line:text, as our grep prints it: -n --no-heading, the root as given
    grep: [...RG_COMMON, "-a", "-j", String(GREP_THREADS), "-n", "--no-heading", "-e", GREP_PATTERN, root],
    glob: [...RG_COMMON, "-j", String(GLOB_THREADS), "--files", "-g", GLOB_PATTERN, root],
    grep_lookaround: [...RG_COMMON, "-a", "-P", "-j", String(GREP_THREADS), "-n", "--no-heading", "-e", LOOKAROUND_PATTERN, root],
  }
  const ops = {
    grep: {
      rust: async () => (await ourCall(tools, "grep", root)).output.split("\n"),
      node: () => nodeGrep(root, GREP_PATTERN),
      rg: () => runRg(rg.bin, rgArgs.grep),
    },
    grep_lookaround: {
      rust: async () => (await ourCall(tools, "grep_lookaround", root)).output.split("\n"),
      node: () => nodeGrep(root, LOOKAROUND_PATTERN),
      rg: () => runRg(rg.bin, rgArgs.grep_lookaround),
    },
    glob: {
      rust: async () => (await ourCall(tools, "glob", root)).output.split("\n"),
      node: () => nodeGlob(root, ".ts"),
      // rg prints root/rel; our glob prints rel
      rg: async () => (await runRg(rg.bin, rgArgs.glob)).map((f) => path.relative(root, f)),
    },
  }
  const self = fileURLToPath(import.meta.url)
  const report = {
    files: FILES,
    reps: REPS,
    node: process.version,
    cores: os.availableParallelism(),
    rg: rg.skipped ? { skipped: rg.skipped } : { version: rg.version, source: rg.source, args: Object.fromEntries(Object.entries(rgArgs).map(([op, args]) => [op, args.map((a) => (a === root ? "<root>" : a))])) },
    threads: { grep: GREP_THREADS, grep_lookaround: GREP_THREADS, glob: GLOB_THREADS },
    method:
      "toolnexus_ms: execute() in this process (output string to JS, split); rg_ms: spawn of rg to its exit, its stdout read and split in this process; toolnexus_child_ms: the same spawn-to-exit shape for a fresh node process that loads the addon and makes one call; node_startup_ms: that process with no call. Medians.",
    goals: { vs_rg: "toolnexus_ms <= 1.5 x rg_ms", vs_node: "toolnexus_ms <= 0.5 x node_ms" },
    results: {},
  }
  const startup = []
  for (let r = 0; r < REPS; r++) startup.push(await timeChild(process.execPath, [self, "--child", "none"]))
  report.node_startup_ms = median(startup)
  for (const [op, impl] of Object.entries(ops)) {
    const a = await impl.rust()
    const b = await impl.node()
    if (a.length !== b.length || sorted(a) !== sorted(b)) throw new Error(`${op}: toolnexus and Node outputs differ (${a.length} vs ${b.length} lines)`)
    const peers = [["rust", impl.rust], ["node", impl.node]]
    if (!rg.skipped) {
      const c = await impl.rg()
      if (a.length !== c.length || sorted(a) !== sorted(c)) throw new Error(`${op}: toolnexus and rg outputs differ (${a.length} vs ${c.length} lines)`)
      peers.push(["rg", impl.rg])
    }
    peers.push(["child", () => timeChild(process.execPath, [self, "--child", op, root])])
    const ms = Object.fromEntries(peers.map(([who]) => [who, []]))
    for (let r = 0; r < REPS; r++) {
      // rotate which goes first, so none always runs on a warmer page cache
      for (let k = 0; k < peers.length; k++) {
        const [who, fn] = peers[(r + k) % peers.length]
        ms[who].push(who === "child" ? await fn() : (await time(fn)).ms)
      }
    }
    const res = {
      lines: a.length,
      toolnexus_ms: median(ms.rust),
      toolnexus_child_ms: median(ms.child),
      node_ms: median(ms.node),
      ratio: median(ms.rust) / median(ms.node),
    }
    if (rg.skipped) res.rg = "skipped"
    else {
      res.rg_ms = median(ms.rg)
      res.ratio_vs_rg = res.toolnexus_ms / res.rg_ms
    }
    res.goals_met = { vs_node: res.ratio <= 0.5, ...(rg.skipped ? {} : { vs_rg: res.ratio_vs_rg <= 1.5 }) }
    report.results[op] = res
    const vsRg = rg.skipped ? "rg skipped" : `rg ${res.rg_ms.toFixed(1)} ms (ours/rg ${res.ratio_vs_rg.toFixed(2)}x, goal <= 1.5)`
    console.log(
      `${op}: ${res.lines} lines; toolnexus ${res.toolnexus_ms.toFixed(1)} ms (as a child process ${res.toolnexus_child_ms.toFixed(1)} ms, of which ~${report.node_startup_ms.toFixed(1)} ms node + addon start-up), ` +
        `${vsRg}, plain Node ${res.node_ms.toFixed(1)} ms (ours/Node ${res.ratio.toFixed(2)}x, goal <= 0.5) (median of ${REPS})`,
    )
  }
  fs.writeFileSync(path.join(here, "grep-glob.json"), JSON.stringify(report, null, 2) + "\n")
} finally {
  fs.rmSync(root, { recursive: true, force: true })
}
