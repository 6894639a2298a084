// The loader (loader.js): how the addon is found, and what a user reads when it is not. Each case
// is a temporary copy of the package (package.json, index.js, dist/, loader.js) loaded by a child process;
// the platform package is a real directory under node_modules where a case needs one.
import test from "node:test"
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const PKG = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"))
const VERSION = PKG.version
const SCOPE = PKG.napi.packageName

// This host as napi names it, found independently of the loader.
const glibc = process.platform === "linux" ? process.report.getReport().header.glibcVersionRuntime : null
const ABI =
  process.platform === "linux"
    ? `linux-${process.arch}-${glibc ? "gnu" : "musl"}`
    : process.platform === "win32"
      ? `win32-${process.arch}-msvc`
      : `${process.platform}-${process.arch}`
const PLATFORM_PKG = `${SCOPE}-${ABI}`
const BUILT = path.join(ROOT, `toolnexus.${ABI}.node`)

const ALL = [
  "linux-x64-gnu", "linux-arm64-gnu", "linux-x64-musl", "linux-arm64-musl",
  "darwin-x64", "darwin-arm64", "win32-x64-msvc", "win32-arm64-msvc",
]

const temps = []
test.after(() => {
  for (const t of temps) rmSync(t, { recursive: true, force: true })
})

/** A temporary copy of the root package, with `setup(dir)` adding what the case needs. */
function copy(setup = () => {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "toolnexus-loader-"))
  temps.push(dir)
  for (const f of ["package.json", "index.js", "dist", "loader.js"]) cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true })
  writeFileSync(
    path.join(dir, "probe.cjs"),
    `try {
  const tn = require("./index.js")
  console.log(JSON.stringify({ loaded: true, sanitized: tn.sanitize("a b") }))
} catch (e) {
  console.log(JSON.stringify({
    loaded: false, message: e.message, code: e.code,
    cause: e.cause === undefined ? null : String(e.cause && e.cause.message),
    nested: e.cause !== undefined && e.cause !== null && e.cause.cause !== undefined,
  }))
}
`,
  )
  setup(dir)
  return dir
}

/** A platform package under node_modules holding `binary` (bytes or a file to copy). */
function platformPackage(dir, { binary, version = VERSION, abi = ABI } = {}) {
  const pdir = path.join(dir, "node_modules", ...`${SCOPE}-${abi}`.split("/"))
  mkdirSync(pdir, { recursive: true })
  const meta = JSON.parse(readFileSync(path.join(ROOT, "npm", abi, "package.json"), "utf8"))
  writeFileSync(path.join(pdir, "package.json"), JSON.stringify({ ...meta, version }))
  if (binary !== undefined) {
    const to = path.join(pdir, meta.main)
    if (Buffer.isBuffer(binary) || typeof binary === "string" && !existsSync(binary)) writeFileSync(to, binary)
    else cpSync(binary, to)
  }
  return pdir
}

/** Loads the copy in a child (with `preload`, a CommonJS file run first) and returns what it saw. */
function probe(dir, preload, env = process.env) {
  const args = []
  if (preload) {
    writeFileSync(path.join(dir, "preload.cjs"), preload)
    args.push("-r", path.join(dir, "preload.cjs"))
  }
  const r = spawnSync(process.execPath, [...args, path.join(dir, "probe.cjs")], { cwd: dir, encoding: "utf8", env })
  assert.equal(r.status, 0, r.stderr)
  return { ...JSON.parse(r.stdout.trim().split("\n").pop()), stderr: r.stderr }
}

const firstLine = (m) => m.split("\n")[0]

test("the supported list is napi.targets, and every npm/<target> package is pinned, scoped and filtered", () => {
  const src = readFileSync(path.join(ROOT, "loader.js"), "utf8")
  const listed = JSON.parse(src.match(/const SUPPORTED = (\[[^\]]*\])/)[1].replace(/,\s*\]/, "]"))
  const arch = { x86_64: "x64", aarch64: "arm64" }
  const fromTargets = PKG.napi.targets.map((t) => {
    const [cpu, , os, env] = t.split("-")
    return os === "linux" ? `linux-${arch[cpu]}-${env}` : os === "darwin" ? `darwin-${arch[cpu]}` : `win32-${arch[cpu]}-${env}`
  })
  assert.deepEqual([...listed].sort(), [...fromTargets].sort())
  assert.deepEqual([...listed].sort(), [...ALL].sort())
  assert.deepEqual(readdirSync(path.join(ROOT, "npm")).sort(), [...ALL].sort())
  for (const abi of ALL) {
    const m = JSON.parse(readFileSync(path.join(ROOT, "npm", abi, "package.json"), "utf8"))
    const [os, cpu, libc] = abi.split("-")
    assert.equal(m.name, `${SCOPE}-${abi}`)
    assert.equal(m.version, VERSION, `${abi} version`)
    assert.deepEqual(m.os, [os])
    assert.deepEqual(m.cpu, [cpu])
    if (os === "linux") assert.deepEqual(m.libc, [libc === "gnu" ? "glibc" : "musl"])
    else assert.equal(m.libc, undefined)
    assert.equal(m.main, `toolnexus.${abi}.node`)
    assert.deepEqual(m.files, [m.main])
    assert.equal(m.publishConfig?.access, "public", "a scoped package is private unless published public")
  }
})

test("no binary anywhere: one error naming the platform, the package, the targets and the install command", () => {
  const r = probe(copy())
  assert.equal(r.loaded, false)
  assert.equal(r.code, "ERR_TOOLNEXUS_NATIVE")
  assert.equal(r.cause, null, "nothing failed to load, so there is no cause to bury")
  assert.match(firstLine(r.message), new RegExp(`not installed`))
  assert.ok(r.message.includes(`${process.platform} ${process.arch}`), r.message)
  if (glibc) assert.ok(r.message.includes(`(glibc ${glibc})`), r.message)
  assert.ok(r.message.includes(`Fix: npm install ${PLATFORM_PKG}@${VERSION}`), r.message)
  assert.ok(r.message.includes(`Supported: ${ALL.join(", ")}.`), r.message)
  assert.doesNotMatch(r.message, /package-lock/)
})

test("a damaged .node in the platform package: its own load failure comes first, and is the cause", () => {
  const dir = copy((d) => platformPackage(d, { binary: Buffer.from("this is not a shared library\n") }))
  const r = probe(dir)
  assert.equal(r.loaded, false)
  const file = path.join(dir, "node_modules", ...PLATFORM_PKG.split("/"), `toolnexus.${ABI}.node`)
  assert.ok(firstLine(r.message).startsWith(`toolnexus: the native addon ${file} failed to load: `), r.message)
  assert.ok(r.cause, "the loader's error is the cause")
  const reason = r.cause.split("\n")[0].replace(`${file}: `, "")
  assert.ok(reason.length > 0 && firstLine(r.message).endsWith(`failed to load: ${reason}`), `${r.message}\n--\n${r.cause}`)
  assert.equal(r.nested, false, "one level of cause, no chain")
  assert.ok(r.message.includes(`npm install --force ${PLATFORM_PKG}@${VERSION}`), r.message)
  assert.ok(r.message.includes("Supported: "), r.message)
})

test("a damaged local build comes first too, with the fix to rebuild it", () => {
  const dir = copy((d) => writeFileSync(path.join(d, `toolnexus.${ABI}.node`), "garbage"))
  const r = probe(dir)
  assert.equal(r.loaded, false)
  assert.ok(firstLine(r.message).startsWith(`toolnexus: the native addon ${path.join(dir, `toolnexus.${ABI}.node`)} failed to load`), r.message)
  assert.ok(r.cause)
  assert.match(r.message, /Fix: rebuild it \(npm run build/)
})

test("a real shared library that is not a Node addon: Node's own complaint is what the user reads", { skip: process.platform !== "linux" }, () => {
  const lib = process.report.getReport().sharedObjects.find((f) => /\/libm\.so/.test(f) || /\/libdl\.so/.test(f))
  assert.ok(lib, "libm or libdl among Node's shared objects")
  const r = probe(copy((d) => platformPackage(d, { binary: lib })))
  assert.equal(r.loaded, false)
  assert.ok(r.cause)
  assert.match(r.cause, /did not self-register/)
  assert.ok(firstLine(r.message).includes(r.cause.split("\n")[0]), `${r.message}\n--\n${r.cause}`)
})

test("a binary that needs a newer glibc than the system's: dlopen's complaint first, and the glibc versions", { skip: !glibc && "not a glibc system" }, () => {
  assert.ok(existsSync(BUILT), `${BUILT} is missing: npm run build first`)
  // The local build with one of the glibc versions it requires renamed to one no glibc has
  // (GLIBC_2.x -> GLIBC_9.x, same length): the dynamic loader refuses it as it would refuse a
  // binary linked against a newer glibc than the one installed.
  const bytes = readFileSync(BUILT)
  const m = /GLIBC_2\.(\d+)\0/.exec(bytes.toString("latin1"))
  assert.ok(m, "the addon requires some GLIBC_2.x version")
  bytes.write("9", m.index + "GLIBC_".length, "latin1")
  const r = probe(copy((d) => platformPackage(d, { binary: bytes })))
  assert.equal(r.loaded, false)
  assert.ok(r.cause)
  assert.ok(r.cause.includes(`GLIBC_9.${m[1]}' not found`), r.cause)
  assert.ok(firstLine(r.message).includes(`GLIBC_9.${m[1]}' not found`), r.message)
  assert.ok(r.message.includes(`it needs glibc 9.${m[1]}; this system has glibc ${glibc}.`), r.message)
  assert.match(r.message, new RegExp(`Fix: run it on a system with glibc >= 9\\.${m[1]}`))
})

test("a platform package of another version is refused, with the pinned install command", () => {
  const r = probe(copy((d) => platformPackage(d, { binary: Buffer.from("x"), version: "0.0.1" })))
  assert.equal(r.loaded, false)
  assert.match(firstLine(r.message), /it is version 0\.0\.1; this toolnexus is/)
  assert.ok(r.message.includes(`${PLATFORM_PKG}@${VERSION}`))
})

test("an installed platform package without its binary says so", () => {
  const r = probe(copy((d) => platformPackage(d)))
  assert.equal(r.loaded, false)
  assert.match(firstLine(r.message), /installed but toolnexus\..+\.node is missing/)
})

test("an unsupported platform: says so, lists the supported ones, and how to build from source", () => {
  const r = probe(copy(), `Object.defineProperty(process, "platform", { value: "freebsd" })\n`)
  assert.equal(r.loaded, false)
  assert.equal(r.cause, null)
  assert.ok(firstLine(r.message).includes(`freebsd ${process.arch} (freebsd-${process.arch}) is not a supported platform`), r.message)
  assert.match(r.message, /build it from source \(Rust stable, Node >= 20\): git clone \S+ && cd \S+ && npm run build/)
  assert.ok(r.message.includes(`Supported: ${ALL.join(", ")}.`))
  assert.doesNotMatch(r.message, /npm install @/, "no package to install for an unsupported platform")
})

test("musl is told apart from glibc by the C library mapped into the process", { skip: process.platform !== "linux" }, () => {
  // What an Alpine process sees: musl's loader mapped into it, and a report without a glibc.
  const musl = `/lib/ld-musl-${process.arch === "x64" ? "x86_64" : "aarch64"}.so.1`
  const stub = `const fs = require("fs")
const read = fs.readFileSync
fs.readFileSync = function (file, ...rest) {
  if (file === "/proc/self/maps") return "7f0000000000-7f0000001000 r-xp 00000000 08:01 42  ${musl}\\n"
  return read.call(this, file, ...rest)
}
process.report.getReport = () => ({ header: {}, sharedObjects: ["${musl}"] })
`
  const r = probe(copy(), stub)
  assert.equal(r.loaded, false)
  assert.ok(r.message.includes(`${process.platform} ${process.arch} (musl)`), r.message)
  assert.ok(r.message.includes(`npm install ${SCOPE}-linux-${process.arch}-musl@${VERSION}`), r.message)
})

test("the C library is read off the process's mappings in each form they name it", { skip: (process.platform !== "linux" || !glibc) && "needs a linux glibc host" }, () => {
  // The report is stubbed to say the other C library: only the mappings can give the right answer.
  const stubbed = (maps, report) => `const fs = require("fs")
const read = fs.readFileSync
fs.readFileSync = function (file, ...rest) {
  if (file === "/proc/self/maps") return ${JSON.stringify(maps)}
  return read.call(this, file, ...rest)
}
process.report.getReport = () => (${JSON.stringify(report)})
`
  const saysMusl = { header: {}, sharedObjects: ["/lib/ld-musl-x86_64.so.1"] }
  const line = (file) => `7f0000000000-7f0000001000 r-xp 00000000 08:01 42                         ${file}`
  const pkg = copy((d) => platformPackage(d, { binary: BUILT }))
  for (const maps of [
    `${line("/usr/bin/node")}\n${line("/usr/lib/x86_64-linux-gnu/libc.so.6")}\n${line("[stack]")}\n`,
    `${line("/usr/bin/node")}\n${line("/lib64/libc-2.17.so")}`,
    `${line("/usr/lib64/libc.so.6")}`,
  ]) {
    const r = probe(pkg, stubbed(maps, saysMusl))
    assert.equal(r.loaded, true, `${maps}: ${r.message}`)
  }
  const saysGlibc = { header: { glibcVersionRuntime: glibc }, sharedObjects: [] }
  const r = probe(pkg, stubbed(`${line("/usr/bin/node")}\n${line("/lib/libc.musl-x86_64.so.1")}\n`, saysGlibc))
  assert.equal(r.loaded, false)
  assert.ok(r.message.includes(`${process.platform} ${process.arch} (musl)`), r.message)
})

test("the platform package's binary loads when it is there", () => {
  assert.ok(existsSync(BUILT), `${BUILT} is missing: npm run build first`)
  const r = probe(copy((d) => platformPackage(d, { binary: BUILT })))
  assert.equal(r.loaded, true, r.message)
  assert.equal(r.sanitized, "a_b")
  assert.equal(r.stderr, "")
})

test("a local build comes before the platform package (a checkout after npm run build)", () => {
  assert.ok(existsSync(BUILT), `${BUILT} is missing: npm run build first`)
  // The platform package is damaged: loading succeeds only if the local file is taken first.
  const r = probe(copy((d) => {
    cpSync(BUILT, path.join(d, `toolnexus.${ABI}.node`))
    platformPackage(d, { binary: Buffer.from("damaged") })
  }))
  assert.equal(r.loaded, true, r.message)
})

test("NAPI_RS_NATIVE_LIBRARY_PATH loads the addon from another folder, before a local build and the platform package", () => {
  assert.ok(existsSync(BUILT), `${BUILT} is missing: npm run build first`)
  const elsewhere = mkdtempSync(path.join(os.tmpdir(), "toolnexus-addon-"))
  temps.push(elsewhere)
  cpSync(BUILT, path.join(elsewhere, "custom-name.node"))
  // Both the usual places are damaged: only the override can load.
  const dir = copy((d) => {
    writeFileSync(path.join(d, `toolnexus.${ABI}.node`), "damaged")
    platformPackage(d, { binary: Buffer.from("damaged") })
  })
  const absolute = probe(dir, undefined, { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: path.join(elsewhere, "custom-name.node") })
  assert.equal(absolute.loaded, true, absolute.message)
  assert.equal(absolute.sanitized, "a_b")
  assert.equal(absolute.stderr, "")
  // A relative path is taken from the working directory (the copy's).
  const relative = probe(dir, undefined, { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: path.relative(dir, path.join(elsewhere, "custom-name.node")) })
  assert.equal(relative.loaded, true, relative.message)
})

test("NAPI_RS_NATIVE_LIBRARY_PATH naming nothing loadable is the error, with no fallback", () => {
  assert.ok(existsSync(BUILT), `${BUILT} is missing: npm run build first`)
  const missing = path.join(os.tmpdir(), "toolnexus-no-such-addon.node")
  // A good platform package is there, and still not taken: the user asked for that file.
  const dir = copy((d) => platformPackage(d, { binary: BUILT }))
  const r = probe(dir, undefined, { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: missing })
  assert.equal(r.loaded, false)
  assert.equal(r.code, "ERR_TOOLNEXUS_NATIVE")
  assert.ok(firstLine(r.message).startsWith(`toolnexus: the native addon ${missing} (NAPI_RS_NATIVE_LIBRARY_PATH) failed to load: Cannot find module`), r.message)
  assert.ok(r.message.includes(`Fix: point NAPI_RS_NATIVE_LIBRARY_PATH at a toolnexus addon built for ${ABI}`), r.message)
  assert.ok(r.cause.startsWith("Cannot find module"), r.cause)
  // A file that is not an addon: dlopen's own words.
  const junk = path.join(dir, "junk.node")
  writeFileSync(junk, "not an addon")
  const bad = probe(dir, undefined, { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: junk })
  assert.equal(bad.loaded, false)
  assert.ok(firstLine(bad.message).includes(`${junk} (NAPI_RS_NATIVE_LIBRARY_PATH) failed to load`), bad.message)
})

test("a damaged local build falls back to the platform package, with a warning", () => {
  assert.ok(existsSync(BUILT), `${BUILT} is missing: npm run build first`)
  const r = probe(copy((d) => {
    writeFileSync(path.join(d, `toolnexus.${ABI}.node`), "damaged")
    platformPackage(d, { binary: BUILT })
  }))
  assert.equal(r.loaded, true, r.message)
  assert.match(r.stderr, /the local build .* failed to load .*; using @toolnexus\/binding-/)
})

// Packing: `npm pack` (real npm, --dry-run) of temporary copies.
function npmPack(dir) {
  return spawnSync("npm", ["pack", "--dry-run", "--json"], { cwd: dir, encoding: "utf8", shell: process.platform === "win32" })
}

function rootCopy(extra) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "toolnexus-pack-"))
  temps.push(dir)
  for (const f of [...PKG.files, "README.md", "LICENSE", "scripts/check-pack.mjs", "scripts/targets.mjs"]) cpSync(path.join(ROOT, f), path.join(dir, f), { recursive: true })
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ ...PKG, ...extra }, null, 2))
  return dir
}

test("the built addon binds the Node-API functions it calls when it is loaded, not by looking each one up", { skip: process.platform !== "linux" && "objdump reads ELF" }, () => {
  assert.ok(existsSync(BUILT), `${BUILT} is missing: run npm run build`)
  const r = spawnSync("objdump", ["-T", BUILT], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
  assert.equal(r.status, 0, r.stderr)
  const undefinedNames = r.stdout
    .split("\n")
    .filter((line) => /\*UND\*/.test(line))
    .map((line) => line.trim().split(/\s+/).pop())
  const napi = undefinedNames.filter((name) => /^(napi|node_api)_/.test(name))
  // napi-rs's run-time lookup (its `dyn-symbols` feature) would leave none here.
  assert.ok(napi.includes("napi_create_string_utf8") && napi.includes("napi_call_function"), `undefined Node-API symbols: ${napi}`)
})

test("npm pack of the root refuses without pinned optionalDependencies, and packs no binary with them", () => {
  let r = npmPack(rootCopy({}))
  assert.notEqual(r.status, 0)
  assert.match(r.stderr, /Refusing to pack toolnexus@.*: this package carries no native addon/)
  assert.ok(r.stderr.includes(`${SCOPE}-linux-x64-gnu: missing, wanted ${VERSION}`), r.stderr)

  const pinned = Object.fromEntries(ALL.map((a) => [`${SCOPE}-${a}`, VERSION]))
  r = npmPack(rootCopy({ optionalDependencies: { ...pinned, [`${SCOPE}-darwin-arm64`]: `^${VERSION}` } }))
  assert.notEqual(r.status, 0, "a range is not a pin")
  assert.ok(r.stderr.includes(`${SCOPE}-darwin-arm64: "^${VERSION}", wanted ${VERSION}`), r.stderr)

  r = npmPack(rootCopy({ optionalDependencies: pinned }))
  assert.equal(r.status, 0, r.stderr)
  const files = JSON.parse(r.stdout.slice(r.stdout.indexOf("[")))[0].files.map((f) => f.path).sort()
  assert.deepEqual(files, ["CHANGELOG.md", "COMPAT.md", "LICENSE", "README.md", "dist/toolnexus.js", "index.d.mts", "index.d.ts", "index.js", "index.mjs", "loader.js", "package.json"])
})

test("npm pack of a platform package refuses without its binary", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "toolnexus-pack-"))
  temps.push(dir)
  cpSync(path.join(ROOT, "npm", "linux-x64-gnu"), dir, { recursive: true })
  let r = npmPack(dir)
  assert.notEqual(r.status, 0)
  assert.match(r.stderr, /Refusing to pack @toolnexus\/binding-linux-x64-gnu: toolnexus\.linux-x64-gnu\.node is missing/)
  writeFileSync(path.join(dir, "toolnexus.linux-x64-gnu.node"), "stand-in")
  r = npmPack(dir)
  assert.equal(r.status, 0, r.stderr)
  const files = JSON.parse(r.stdout.slice(r.stdout.indexOf("[")))[0].files.map((f) => f.path).sort()
  assert.deepEqual(files, ["README.md", "package.json", "toolnexus.linux-x64-gnu.node"])
})
