// The shipped Linux x64 addon must load on glibc 2.17 (RHEL 7/8, Debian 11, Ubuntu 20.04, Amazon
// Linux 2): scripts/build.mjs links it with zig against glibc 2.17 and scripts/check-glibc.mjs
// verifies the result. First the built binary, then the checker itself on crafted objdump output.
import test from "node:test"
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { check, compareVersions, muslReport, parseDynamicSymbols, parseNeeded, parseVersionReferences, report } from "../scripts/check-glibc.mjs"

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const checker = join(root, "scripts", "check-glibc.mjs")
const addon = join(root, "toolnexus.linux-x64-gnu.node")

const linuxX64Gnu =
  process.platform === "linux" && process.arch === "x64" && Boolean(process.report.getReport().header.glibcVersionRuntime)

function builtBinarySkip() {
  if (!linuxX64Gnu) return `the glibc floor applies to the linux-x64-gnu addon; this is ${process.platform}-${process.arch}${process.platform === "linux" ? " (not glibc)" : ""}`
  if (/^(1|true|yes)$/i.test(process.env.TOOLNEXUS_NATIVE_GLIBC ?? "")) return "TOOLNEXUS_NATIVE_GLIBC is set: the addon was built against this machine's glibc on purpose"
  return false
}

test("the built linux-x64-gnu addon needs nothing newer than GLIBC_2.17", { skip: builtBinarySkip() }, () => {
  assert.ok(existsSync(addon), `${addon} is missing: run npm run build`)
  const r = spawnSync(process.execPath, [checker, addon], { encoding: "utf8" })
  assert.equal(r.status, 0, `check-glibc failed:\n${r.stdout}${r.stderr}`)
  const m = /highest GLIBC_(\d+(?:\.\d+)*)/.exec(r.stdout)
  assert.ok(m, `no highest version in:\n${r.stdout}`)
  assert.ok(compareVersions(m[1], "2.17") <= 0, `highest ${m[1]}`)
  // The addon really is linked against glibc (not an empty or foreign file that trivially passes).
  assert.match(r.stdout, /: [1-9]\d* versioned glibc symbols/)
})

// --- the checker on crafted objdump output -------------------------------------------------------

// `objdump -T` as binutils 2.40 prints it (versions in parentheses), plus two lines in the older
// style without parentheses, a non-glibc version, unversioned weak symbols and a defined symbol.
const DYNSYM = `
fixture.node:     file format elf64-x86-64

DYNAMIC SYMBOL TABLE:
0000000000000000  w   D  *UND*\t0000000000000000              __gmon_start__
0000000000000000  w   DF *UND*\t0000000000000000 (GLIBC_2.2.5) __cxa_finalize
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.14) memcpy
0000000000000000      DF *UND*\t0000000000000000 (GCC_3.0)    _Unwind_Resume
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.3)  __tls_get_addr
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.34) pthread_create
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.33) stat64
0000000000000000  w   DF *UND*\t0000000000000000 (GLIBC_2.28) statx
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.29) pow
0000000000000000      DF *UND*\t0000000000000000  GLIBC_2.17  clock_gettime
0000000000000000      DF *UND*\t0000000000000000  GLIBC_2.18  __cxa_thread_atexit_impl
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_PRIVATE) _dl_find_object
00000000005fa620 g    DF .text\t0000000000006c73  Base        napi_register_module_v1
`

const VERSION_REFS = `
fixture.node:     file format elf64-x86-64

Dynamic Section:
  NEEDED               libc.so.6

Version References:
  required from libgcc_s.so.1:
    0x0b792650 0x00 04 GCC_3.0
  required from libm.so.6:
    0x06969189 0x00 07 GLIBC_2.29
  required from libc.so.6:
    0x09691a75 0x00 02 GLIBC_2.2.5
    0x06969197 0x00 03 GLIBC_2.17
    0x069691b4 0x00 06 GLIBC_2.34
    0x0a0a0a0a 0x02 09 GLIBC_ABI_DT_RELR
`

// What a good zig-linked addon looks like: nothing above 2.17.
const DYNSYM_OK = `
DYNAMIC SYMBOL TABLE:
0000000000000000  w   DF *UND*\t0000000000000000 (GLIBC_2.2.5) __cxa_finalize
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.3.4) __memcpy_chk
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.17) clock_gettime
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.2.5) pthread_create
`
const VERSION_REFS_OK = `
Version References:
  required from libc.so.6:
    0x09691a75 0x00 02 GLIBC_2.2.5
    0x09691974 0x00 03 GLIBC_2.3.4
    0x06969197 0x00 04 GLIBC_2.17
`

test("compareVersions orders dotted glibc versions numerically", () => {
  assert.equal(compareVersions("2.2.5", "2.17"), -1)
  assert.equal(compareVersions("2.17", "2.3.4"), 1)
  assert.equal(compareVersions("2.17", "2.17"), 0)
  assert.equal(compareVersions("2.17", "2.17.0"), 0)
  assert.equal(compareVersions("2.18", "2.17"), 1)
  assert.equal(compareVersions("2.34", "2.4"), 1)
})

test("parseDynamicSymbols: every versioned glibc symbol, weak marked, other versions ignored", () => {
  const syms = parseDynamicSymbols(DYNSYM)
  assert.deepStrictEqual(
    syms.map((s) => [s.name, s.version, s.weak]),
    [
      ["__cxa_finalize", "2.2.5", true],
      ["memcpy", "2.14", false],
      ["__tls_get_addr", "2.3", false],
      ["pthread_create", "2.34", false],
      ["stat64", "2.33", false],
      ["statx", "2.28", true],
      ["pow", "2.29", false],
      ["clock_gettime", "2.17", false],
      ["__cxa_thread_atexit_impl", "2.18", false],
      ["_dl_find_object", "PRIVATE", false],
    ],
  )
})

test("parseVersionReferences: the GLIBC requirements per library, with the weak flag", () => {
  assert.deepStrictEqual(parseVersionReferences(VERSION_REFS), [
    { library: "libm.so.6", version: "2.29", weak: false },
    { library: "libc.so.6", version: "2.2.5", weak: false },
    { library: "libc.so.6", version: "2.17", weak: false },
    { library: "libc.so.6", version: "2.34", weak: false },
    { library: "libc.so.6", version: "ABI_DT_RELR", weak: true },
  ])
  assert.deepStrictEqual(parseVersionReferences(DYNSYM), [], "no Version References block, nothing found")
})

test("check: the highest version and everything above the floor, weak and private included", () => {
  const { highest, offending, offendingRefs } = check(parseDynamicSymbols(DYNSYM), parseVersionReferences(VERSION_REFS), "2.17")
  assert.equal(highest, "2.34")
  assert.deepStrictEqual(offending.map((s) => s.name).sort(), [
    "__cxa_thread_atexit_impl", "_dl_find_object", "pow", "pthread_create", "stat64", "statx",
  ])
  assert.deepStrictEqual(offendingRefs.map((r) => r.version), ["2.29", "2.34", "ABI_DT_RELR"])
  // A higher floor lets the same binary through up to it.
  const at34 = check(parseDynamicSymbols(DYNSYM), parseVersionReferences(VERSION_REFS), "2.34")
  assert.deepStrictEqual(at34.offending.map((s) => s.name), ["_dl_find_object"])
})

test("report: lists each offending symbol once with its version, newest first, and the bare requirements", () => {
  const r = report("fixture.node", DYNSYM, VERSION_REFS, "2.17")
  assert.equal(r.ok, false)
  assert.equal(r.highest, "2.34")
  const lines = r.text.split("\n")
  assert.match(lines[0], /^fixture\.node: 10 versioned glibc symbols, highest GLIBC_2\.34, floor GLIBC_2\.17$/)
  assert.ok(lines.includes("FAIL: 6 symbol(s) newer than GLIBC_2.17:"), r.text)
  const listed = lines.filter((l) => /^ {2}GLIBC_/.test(l)).map((l) => l.trim())
  assert.deepStrictEqual(listed.slice(0, 6), [
    "GLIBC_2.34  pthread_create",
    "GLIBC_2.33  stat64",
    "GLIBC_2.29  pow",
    "GLIBC_2.28  statx  (weak)",
    "GLIBC_2.18  __cxa_thread_atexit_impl",
    "GLIBC_PRIVATE  _dl_find_object",
  ])
  assert.ok(listed.includes("GLIBC_ABI_DT_RELR  from libc.so.6  (weak)"), r.text)
  assert.ok(!r.text.includes("memcpy") && !r.text.includes("clock_gettime"), "symbols at or under the floor are not listed")

  const ok = report("good.node", DYNSYM_OK, VERSION_REFS_OK, "2.17")
  assert.equal(ok.ok, true)
  assert.equal(ok.highest, "2.17")
  assert.match(ok.text, /highest GLIBC_2\.17/)
})

// The CLI end to end, with a stand-in `objdump` on PATH that prints the crafted text.
const posix = process.platform !== "win32"

function fakeObjdump(dynsym, refs) {
  const dir = mkdtempSync(join(tmpdir(), "check-glibc-"))
  writeFileSync(join(dir, "dynsym.txt"), dynsym)
  writeFileSync(join(dir, "refs.txt"), refs)
  // A node script with an absolute shebang, so it runs with nothing else on PATH.
  const script = join(dir, "objdump")
  writeFileSync(
    script,
    `#!${process.execPath}\n` +
      `const fs = require("node:fs")\n` +
      `const file = { "-T": "dynsym.txt", "-p": "refs.txt" }[process.argv[2]]\n` +
      `if (!file) { console.error("unexpected " + process.argv.slice(2).join(" ")); process.exit(9) }\n` +
      `process.stdout.write(fs.readFileSync(${JSON.stringify(dir)} + "/" + file, "utf8"))\n`,
  )
  chmodSync(script, 0o755)
  return dir
}

function runChecker(pathDir, args) {
  return spawnSync(process.execPath, [checker, ...args], { encoding: "utf8", env: { ...process.env, PATH: pathDir } })
}

test("check-glibc CLI: exit 1 and the offending symbols on stderr", { skip: !posix && "the stand-in objdump is an executable script" }, (t) => {
  const dir = fakeObjdump(DYNSYM, VERSION_REFS)
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const r = runChecker(dir, ["whatever.node"])
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stderr, /highest GLIBC_2\.34/)
  assert.match(r.stderr, /GLIBC_2\.34 {2}pthread_create/)
  assert.match(r.stderr, /GLIBC_2\.28 {2}statx {2}\(weak\)/)
  const higher = runChecker(dir, ["--max", "2.40", "whatever.node"])
  assert.equal(higher.status, 1, "GLIBC_PRIVATE fails whatever the floor")
  assert.doesNotMatch(higher.stderr, /pthread_create/)
})

test("check-glibc CLI: exit 0 and the highest version on a clean binary", { skip: !posix && "the stand-in objdump is an executable script" }, (t) => {
  const dir = fakeObjdump(DYNSYM_OK, VERSION_REFS_OK)
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const r = runChecker(dir, ["good.node"])
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /good\.node: 4 versioned glibc symbols, highest GLIBC_2\.17, floor GLIBC_2\.17/)
  assert.match(r.stdout, /ok: nothing newer than GLIBC_2\.17/)
})

test("check-glibc CLI: without objdump it says so and fails", (t) => {
  const empty = mkdtempSync(join(tmpdir(), "check-glibc-empty-"))
  t.after(() => rmSync(empty, { recursive: true, force: true }))
  const r = runChecker(empty, ["whatever.node"])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /objdump not found.*binutils/)
})

test("check-glibc CLI: a usage error without a file", () => {
  const r = spawnSync(process.execPath, [checker], { encoding: "utf8" })
  assert.equal(r.status, 2)
  assert.match(r.stderr, /usage: node scripts\/check-glibc\.mjs/)
})

// The musl addon (npm run build:linux-x64-musl): nothing of glibc, no library beside musl's libc.
const MUSL_HEADERS = `
Dynamic Section:
  NEEDED               libc.so
  SONAME               libtoolnexus_node.so
`

test("muslReport: a build needing only musl's libc passes", () => {
  assert.deepEqual(parseNeeded(MUSL_HEADERS), ["libc.so"])
  const r = muslReport("a.node", "0000000000000000      DF *UND*  0000000000000000  malloc\n", MUSL_HEADERS)
  assert.equal(r.ok, true, r.text)
  assert.match(r.text, /needs libc\.so; 0 glibc-versioned symbols/)
  assert.equal(muslReport("b.node", "", MUSL_HEADERS.replace("libc.so", "libc.musl-x86_64.so.1")).ok, true)
})

test("muslReport: a glibc symbol, a glibc version or a foreign library each fail, named", () => {
  const glibcSym = "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.2.5) malloc\n"
  const r1 = muslReport("a.node", glibcSym, MUSL_HEADERS)
  assert.equal(r1.ok, false)
  assert.match(r1.text, /FAIL: glibc symbol GLIBC_2\.2\.5 malloc/)
  const headers = `${MUSL_HEADERS}  NEEDED               libgcc_s.so.1\n\nVersion References:\n  required from libc.so.6:\n    0x09691a75 0x00 02 GLIBC_2.2.5\n`
  const r2 = muslReport("b.node", "", headers)
  assert.equal(r2.ok, false)
  assert.match(r2.text, /FAIL: glibc version requirement GLIBC_2\.2\.5 from libc\.so\.6/)
  assert.match(r2.text, /FAIL: needs libgcc_s\.so\.1, which is not musl's C library/)
})
