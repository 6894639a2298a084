#!/usr/bin/env node
// `npm run check:targets`: `cargo check` of the addon and the core for every target package.json
// configures (napi.targets), from this x64 Linux machine. CI runs it; a warning in our own code on
// any target fails it, as clippy's -D warnings does on Linux.
//
// Each target's standard library is built from source (-Zbuild-std) by Debian's Rust (rustc-web,
// cargo-web, rust-web-src), since rustup has no other target's std here. Build scripts compile C
// (ring, mimalloc, SQLite), so each target gets zig's C compiler as its CC:
// - macOS (x86_64, aarch64): zig carries the macOS libc headers but not Apple's SDK frameworks.
//   mimalloc's macOS source includes <CommonCrypto/CommonRandom.h> for CCRandomGenerateBytes; the
//   check gives it a two-line stand-in declaring that one function as Apple's SDK does
//   (scripts/targets/include). The shipped macOS addon is built on macOS by the release workflow
//   with the real SDK, so it keeps mimalloc, the allocator every other target runs and the bench
//   measures; switching macOS to the system allocator would have made that build differ from the
//   others only so this check could pass.
// - Windows gnu (x86_64): MinGW's headers through zig; scripts/windows.sh also builds and runs it.
// - Windows msvc (x86_64, aarch64): the Rust code for the MSVC targets is checked, its C parts
//   compiled against zig's MinGW headers (nothing links in a check). A real MSVC build needs the
//   Windows SDK, MSVC's headers and link.exe, which exist only on Windows: the release workflow
//   builds it on a Windows runner.
// - musl (x86_64, aarch64): zig's own musl. `npm run build:linux-x64-musl` builds and links the
//   x64 one.
//
//   node scripts/check-targets.mjs [triple ...]   (default: every configured target)
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { DEBIAN_CARGO, DEBIAN_RUST, RUST_SRC, debianRustEnv, ensureToolchain, root, toolsDir, zigAR, zigCC } from "./toolchain.mjs"
import { readRoot } from "./targets.mjs"

// zig's name for each target, and the compiler flags its C code needs.
const stub = join(root, "scripts", "targets", "include")
const ZIG_TARGET = {
  "x86_64-apple-darwin": ["x86_64-macos", [`-I${stub}`]],
  "aarch64-apple-darwin": ["aarch64-macos", [`-I${stub}`]],
  "x86_64-pc-windows-gnu": ["x86_64-windows-gnu", []],
  "x86_64-pc-windows-msvc": ["x86_64-windows-gnu", []],
  "aarch64-pc-windows-msvc": ["aarch64-windows-gnu", []],
  "x86_64-unknown-linux-musl": ["x86_64-linux-musl", []],
  "aarch64-unknown-linux-musl": ["aarch64-linux-musl", []],
}

function fail(message) {
  console.error(`check:targets: ${message}`)
  process.exit(1)
}

const configured = readRoot().napi.targets
// The configured targets but the host's own (clippy and the tests cover it), and the gnu Windows
// target the wine suite runs.
const defaults = [...configured.filter((t) => t !== "x86_64-unknown-linux-gnu" && t !== "aarch64-unknown-linux-gnu"), "x86_64-pc-windows-gnu"]
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : defaults
const unknown = wanted.filter((t) => !ZIG_TARGET[t])
if (unknown.length) fail(`no check set up for ${unknown.join(", ")} (known: ${Object.keys(ZIG_TARGET).join(", ")})`)
if (process.platform !== "linux" || process.arch !== "x64") fail("runs on x64 Linux")
const missing = [DEBIAN_RUST, DEBIAN_CARGO, RUST_SRC].filter((f) => !existsSync(f))
if (missing.length) fail(`needs Debian's Rust and its standard library's sources (missing ${missing.join(", ")}): apt-get install rustc-web cargo-web rust-web-src`)
if (!(await ensureToolchain())) fail("needs the zig toolchain (python3 with pip, or python3 and unzip, to install it)")

const env = debianRustEnv({ bootstrap: true })
// napi-build's script for the gnu Windows target wants a folder holding `libnode.dll` (the import
// library of node.exe's exports that scripts/build-windows.mjs makes for linking). A check links
// nothing, so an empty file of that name serves.
const libnode = join(toolsDir, "cc", "libnode")
mkdirSync(libnode, { recursive: true })
if (!existsSync(join(libnode, "libnode.dll"))) writeFileSync(join(libnode, "libnode.dll"), "")
env.LIBNODE_PATH = libnode
for (const triple of wanted) {
  const [zigTarget, flags] = ZIG_TARGET[triple]
  const key = triple.replace(/-/g, "_")
  env[`CC_${key}`] = zigCC(zigTarget, flags)
  // mimalloc is compiled as C++ for MSVC targets.
  env[`CXX_${key}`] = zigCC(zigTarget, flags, { cxx: true })
  env[`AR_${key}`] = zigAR({ lib: triple.endsWith("-msvc") })
}
// One cargo invocation for every target: the build scripts and proc macros (host code) compile
// once for all of them, and cargo keeps both cores busy across targets. (One invocation per target
// took ~140 s each, five of them 11 minutes of CI's hour.)
const started = Date.now()
console.error(`check:targets: ${wanted.join(", ")}`)
const args = ["check", "-Zbuild-std", ...wanted.flatMap((t) => ["--target", t]), "--target-dir", join(root, "target", "check-targets"), "-p", "toolnexus-node", "-p", "toolnexus-core", "--message-format", "short"]
const r = spawnSync(DEBIAN_CARGO, args, { cwd: root, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
if (r.error) fail(`could not start cargo: ${r.error.message}`)
const output = `${r.stdout}${r.stderr}`
// A warning in our own code, as cargo's short format prints it (`src/x.rs:1:2: warning: ...`).
const ours = output.split("\n").filter((l) => /^(src|crates)\/\S+: warning: /.test(l))
const seconds = ((Date.now() - started) / 1000).toFixed(0)
if (r.status !== 0) {
  process.stderr.write(output)
  fail(`FAILED (cargo exit ${r.status}) for ${wanted.join(", ")} in ${seconds} s`)
}
if (ours.length) {
  process.stderr.write(`${ours.join("\n")}\n`)
  fail(`FAILED (${ours.length} warning(s) in our code) for ${wanted.join(", ")} in ${seconds} s`)
}
for (const triple of wanted) console.log(`${triple.padEnd(28)} ok`)
console.log(`${wanted.length} target(s) checked in ${seconds} s`)
process.exit(0)
