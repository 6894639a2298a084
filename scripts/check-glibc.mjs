#!/usr/bin/env node
// Checks that a Linux ELF binary (the addon) needs nothing newer than a glibc floor, or, with
// --musl, that a musl build needs nothing of glibc at all.
//
//   node scripts/check-glibc.mjs [--max 2.17] <file.node>
//   node scripts/check-glibc.mjs --musl <file.node>
//
// Reads the dynamic symbols with `objdump -T` and the version requirements with `objdump -p`
// (both from binutils), prints the highest GLIBC version the binary asks for, and exits 1 listing
// every symbol (and every version requirement) newer than the floor. A weak reference counts too:
// its version still has to exist when the dynamic loader resolves it. Exit 2: objdump is missing
// or could not read the file.
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

export const DEFAULT_MAX = "2.17"

// "2.2.5" -> [2, 2, 5]; anything that is not a dotted number (GLIBC_PRIVATE, GLIBC_ABI_DT_RELR) -> null.
function numeric(version) {
  return /^\d+(\.\d+)*$/.test(version) ? version.split(".").map(Number) : null
}

export function compareVersions(a, b) {
  const x = numeric(a)
  const y = numeric(b)
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0)
    if (d !== 0) return d < 0 ? -1 : 1
  }
  return 0
}

// `objdump -T` lines look like
//   0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) dlopen
//   0000000000000000  w   DF *UND*  0000000000000000  GLIBC_2.2.5 __cxa_finalize
// (older binutils print the version without parentheses). Returns one entry per versioned
// GLIBC symbol: { name, version, weak, line }.
export function parseDynamicSymbols(text) {
  const symbols = []
  for (const line of text.split("\n")) {
    // address, one space, seven flag characters (the second is "w" for weak), section, size, version, name
    const m = /^[0-9a-fA-F]+ (.{7}) \s*\S+\s+[0-9a-fA-F]+\s+\(?GLIBC_([A-Za-z0-9_.]+)\)?\s+(\S+)\s*$/.exec(line)
    if (!m) continue
    symbols.push({ name: m[3], version: m[2], weak: m[1][1] === "w", line: line.trim() })
  }
  return symbols
}

// The "Version References" block of `objdump -p`:
//   required from libc.so.6:
//     0x09691a75 0x00 02 GLIBC_2.2.5
//     0x0d696914 0x00 05 GLIBC_2.34
// Returns [{ library, version, weak }] for the GLIBC entries (flag 0x02 marks a weak requirement).
export function parseVersionReferences(text) {
  const refs = []
  let library = null
  let inRefs = false
  for (const line of text.split("\n")) {
    if (/^Version References:/.test(line)) {
      inRefs = true
      continue
    }
    if (!inRefs) continue
    const req = /^\s*required from (\S+?):?\s*$/.exec(line)
    if (req) {
      library = req[1]
      continue
    }
    const ver = /^\s*0x[0-9a-fA-F]+\s+0x([0-9a-fA-F]+)\s+\d+\s+GLIBC_(\S+)\s*$/.exec(line)
    if (ver) {
      refs.push({ library, version: ver[2], weak: (Number.parseInt(ver[1], 16) & 0x2) !== 0 })
      continue
    }
    if (line.trim() && !/^\s/.test(line)) inRefs = false
  }
  return refs
}

// Decides. `symbols` from parseDynamicSymbols, `refs` from parseVersionReferences.
// Returns { highest, offending: [symbol], offendingRefs: [ref] }; a non-numeric version
// (GLIBC_PRIVATE and the like) always offends: no released glibc promises it.
export function check(symbols, refs = [], max = DEFAULT_MAX) {
  const tooNew = (v) => numeric(v) === null || compareVersions(v, max) > 0
  let highest = null
  for (const v of [...symbols, ...refs].map((s) => s.version)) {
    if (numeric(v) && (highest === null || compareVersions(v, highest) > 0)) highest = v
  }
  return {
    highest,
    offending: symbols.filter((s) => tooNew(s.version)),
    offendingRefs: refs.filter((r) => tooNew(r.version)),
  }
}

// The text report and exit code for one binary, given objdump's two outputs.
export function report(file, dynamicSymbols, privateHeaders, max = DEFAULT_MAX) {
  const symbols = parseDynamicSymbols(dynamicSymbols)
  const refs = parseVersionReferences(privateHeaders)
  const { highest, offending, offendingRefs } = check(symbols, refs, max)
  const lines = []
  lines.push(`${file}: ${symbols.length} versioned glibc symbols, highest GLIBC_${highest ?? "(none)"}, floor GLIBC_${max}`)
  if (offending.length === 0 && offendingRefs.length === 0) {
    lines.push(`ok: nothing newer than GLIBC_${max}`)
    return { ok: true, text: lines.join("\n"), highest }
  }
  lines.push(`FAIL: ${offending.length} symbol(s) newer than GLIBC_${max}:`)
  // Newest first, then the non-numeric versions (GLIBC_PRIVATE), each group by name.
  const rank = (a, b) => {
    const [x, y] = [numeric(a.version), numeric(b.version)]
    if (x && y) return compareVersions(b.version, a.version)
    if (x || y) return x ? -1 : 1
    return a.version.localeCompare(b.version)
  }
  const sorted = [...offending].sort((a, b) => rank(a, b) || a.name.localeCompare(b.name))
  for (const s of sorted) lines.push(`  GLIBC_${s.version}  ${s.name}${s.weak ? "  (weak)" : ""}`)
  const refOnly = offendingRefs.filter((r) => !offending.some((s) => s.version === r.version))
  if (refOnly.length) {
    lines.push(`FAIL: version requirement(s) newer than GLIBC_${max} with no symbol listed above:`)
    for (const r of refOnly) lines.push(`  GLIBC_${r.version}  from ${r.library}${r.weak ? "  (weak)" : ""}`)
  }
  return { ok: false, text: lines.join("\n"), highest }
}

// The NEEDED entries of `objdump -p`'s dynamic section:  "  NEEDED               libc.so".
export function parseNeeded(text) {
  return [...text.matchAll(/^\s*NEEDED\s+(\S+)\s*$/gm)].map((m) => m[1])
}

// musl's C library under the names a musl binary may ask for: `libc.so` (what zig and musl-gcc
// write; musl's loader answers it with itself) and Alpine's `libc.musl-<arch>.so.1`.
const MUSL_LIBC = /^(libc\.so|libc\.musl-[a-z0-9_]+\.so\.1)$/

// The report for a musl build: no symbol or version requirement of glibc's, and no library beside
// musl's C library (a libgcc_s or a libc.so.6 would not be on a bare Alpine).
export function muslReport(file, dynamicSymbols, privateHeaders) {
  const symbols = parseDynamicSymbols(dynamicSymbols)
  const refs = parseVersionReferences(privateHeaders)
  const needed = parseNeeded(privateHeaders)
  const foreign = needed.filter((n) => !MUSL_LIBC.test(n))
  const lines = [`${file}: needs ${needed.join(", ") || "(no library)"}; ${symbols.length} glibc-versioned symbols`]
  const ok = symbols.length === 0 && refs.length === 0 && foreign.length === 0
  if (ok) lines.push("ok: no glibc symbol, version or library")
  for (const s of symbols.slice(0, 20)) lines.push(`FAIL: glibc symbol GLIBC_${s.version} ${s.name}`)
  if (symbols.length > 20) lines.push(`FAIL: ... and ${symbols.length - 20} more glibc symbols`)
  for (const r of refs) lines.push(`FAIL: glibc version requirement GLIBC_${r.version} from ${r.library}`)
  for (const n of foreign) lines.push(`FAIL: needs ${n}, which is not musl's C library`)
  return { ok, text: lines.join("\n") }
}

function objdump(flag, file) {
  const r = spawnSync("objdump", [flag, file], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 })
  if (r.error?.code === "ENOENT") {
    console.error("check-glibc: objdump not found. It comes with binutils (Debian/Ubuntu: apt-get install binutils).")
    process.exit(2)
  }
  if (r.error || r.status !== 0) {
    console.error(`check-glibc: objdump ${flag} ${file} failed: ${r.error?.message ?? r.stderr.trim()}`)
    process.exit(2)
  }
  return r.stdout
}

function main(argv) {
  let max = DEFAULT_MAX
  let musl = false
  const files = []
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--musl") musl = true
    else if (argv[i] === "--max") max = argv[++i]
    else if (argv[i].startsWith("--max=")) max = argv[i].slice(6)
    else files.push(argv[i])
  }
  if (files.length !== 1 || !numeric(max ?? "")) {
    console.error("usage: node scripts/check-glibc.mjs [--max 2.17 | --musl] <file.node>")
    process.exit(2)
  }
  const [file] = files
  const result = musl ? muslReport(file, objdump("-T", file), objdump("-p", file)) : report(file, objdump("-T", file), objdump("-p", file), max)
  ;(result.ok ? console.log : console.error)(result.text)
  process.exit(result.ok ? 0 : 1)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2))
