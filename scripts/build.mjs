#!/usr/bin/env node
// `npm run build`: the release addon.
//
// On Linux x64 with glibc the addon is linked by zig against glibc 2.17 (cargo-zigbuild, driven by
// `napi build --cross-compile`), so the shipped `toolnexus.linux-x64-gnu.node` loads on RHEL 7/8,
// Debian 11, Ubuntu 20.04 and Amazon Linux 2, not only on the glibc of the machine that built it.
// The toolchain (cargo-zigbuild and zig, both wheels from PyPI) is installed on first use into
// `.tools/` in the repository (gitignored) with `python3 -m pip install --target`.
//
// Everywhere else (macOS, Windows, musl) and with TOOLNEXUS_NATIVE_GLIBC=1 this is the plain
// `napi build --platform --release`, linked against whatever the host has.
//
// `--linux-arm64` (`npm run build:linux-arm64`) builds `toolnexus.linux-arm64-gnu.node` the same way
// from an x64 Linux machine: Debian's rustc-web/cargo-web, whose standard library for
// aarch64-unknown-linux-gnu comes as `libstd-rust-web-dev:arm64` (rustup cannot fetch one without
// its own server), with zig linking against glibc 2.17, into target/linux-arm64.
//
// `--linux-x64-musl` (`npm run build:linux-x64-musl`) builds `toolnexus.linux-x64-musl.node`: Debian's
// Rust builds the musl standard library from source (-Zbuild-std) and zig links against its own musl,
// into target/linux-x64-musl; the result is checked to need nothing of glibc.
//
// Extra arguments are passed on to `napi build` (`npm run build -- --verbose`); one that picks a target
// or a cross-compile mode (`--target`, `-x`, `--use-napi-cross`, ...) turns the zig route off.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { DEBIAN_CARGO, DEBIAN_RUST, RUST_SRC, debianRustEnv, ensureToolchain, root, toolsDir, zigEnv } from "./toolchain.mjs"

// The glibc floor and the pinned toolchain. Changing a pin reinstalls the toolchain on the next build.
const GLIBC_FLOOR = "2.17"
const TARGET = "x86_64-unknown-linux-gnu"
const ARM64_TARGET = "aarch64-unknown-linux-gnu"
const MUSL_TARGET = "x86_64-unknown-linux-musl"
// The Debian toolchain the arm64 and musl builds use, and what installs it.
const ARM64_STD = "/usr/lib/rustlib/aarch64-unknown-linux-gnu"
const ARM64_PACKAGES = "dpkg --add-architecture arm64 && apt-get update && apt-get install rustc-web cargo-web libstd-rust-web-dev:arm64"

const baseArgs = ["build", "--platform", "--release", "--no-js", "--dts", "binding.d.ts"]

function fail(message) {
  console.error(`build: ${message}`)
  process.exit(1)
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: "inherit", cwd: root, ...opts })
  if (r.error) fail(`could not start ${cmd}: ${r.error.message}`)
  return r.status ?? 1
}

function isLinuxX64Gnu() {
  if (process.platform !== "linux" || process.arch !== "x64") return false
  // Node reports the runtime glibc version on glibc systems and nothing on musl.
  const header = process.report?.getReport?.().header
  return Boolean(header?.glibcVersionRuntime)
}

function napiCli() {
  const require = createRequire(join(root, "package.json"))
  let pkgPath
  try {
    pkgPath = require.resolve("@napi-rs/cli/package.json")
  } catch {
    fail("@napi-rs/cli is not installed; run `npm ci` first")
  }
  const pkg = JSON.parse(readFileSync(pkgPath, "utf8"))
  const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin.napi
  return join(dirname(pkgPath), bin)
}

function napiBuild(args, env = process.env) {
  return run(process.execPath, [napiCli(), ...args], { env })
}

/** The sha256 of a file's bytes, or null when it is missing. */
function fileHash(file) {
  return existsSync(file) ? createHash("sha256").update(readFileSync(file)).digest("hex") : null
}

/**
 * One hash over every source the addon is built from (path and bytes, tracked or not), or null
 * when git cannot list them (then the build always runs).
 */
function inputsHash() {
  const listed = spawnSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "src", "crates", "Cargo.toml", "Cargo.lock", "build.rs", "package.json", "scripts/build.mjs", "scripts/toolchain.mjs", "rust-toolchain.toml"],
    { cwd: root, encoding: "utf8" },
  )
  if (listed.status !== 0) return null
  const hash = createHash("sha256")
  for (const file of listed.stdout.split("\0").filter(Boolean).sort()) {
    const full = join(root, file)
    if (!existsSync(full)) continue
    hash.update(file).update("\0").update(readFileSync(full)).update("\0")
  }
  return hash.digest("hex")
}

/** Whether the last build was of these inputs and its outputs are still the ones it wrote. */
function upToDate(inputs) {
  try {
    const last = JSON.parse(readFileSync(stamp, "utf8"))
    return last.inputs === inputs && last.addon === fileHash(addon) && last.types === fileHash(join(root, "binding.d.ts"))
  } catch {
    return false
  }
}


const arm64 = process.argv.includes("--linux-arm64")
const musl = process.argv.includes("--linux-x64-musl")
const extra = process.argv.slice(2).filter((a) => a !== "--linux-arm64" && a !== "--linux-x64-musl")
const native = /^(1|true|yes)$/i.test(process.env.TOOLNEXUS_NATIVE_GLIBC ?? "")
// An explicit target or cross-compile choice on the command line is the caller's: build exactly that.
const ownTarget = extra.some((a) => /^(--target|-t|--cross-compile|-x|--use-cross|--use-napi-cross)(=|$)/.test(a))

if (arm64) process.exit(await buildArm64())
if (musl) process.exit(await buildMusl())

if (!isLinuxX64Gnu() || native || ownTarget) {
  if (native) console.error("build: TOOLNEXUS_NATIVE_GLIBC is set: linking against this machine's glibc")
  process.exit(napiBuild([...baseArgs, ...extra]))
}

if (!(await ensureToolchain())) {
  // A fresh machine without the toolchain still gets a working addon; CI checks the floor itself.
  console.warn(
    `build: the zig toolchain is not available, so this build links against this machine's glibc (not ${GLIBC_FLOOR}); ` +
      "install python3-pip (or python3 / unzip) for the portable build, or set TOOLNEXUS_NATIVE_GLIBC=1 to silence this",
  )
  process.exit(napiBuild([...baseArgs, ...extra]))
}
// Unchanged inputs and the addon they built still in place: nothing to do. (napi's type-definition
// pass makes Cargo recompile the binding crate on every build, minutes with LTO, even when nothing
// changed; CI builds twice, for the demo and for the tests.)
const addon = join(root, "toolnexus.linux-x64-gnu.node")
const stamp = join(toolsDir, "build-stamp.json")
const inputs = inputsHash()
if (extra.length === 0 && inputs && !/^(1|true|yes)$/i.test(process.env.TOOLNEXUS_FORCE_BUILD ?? "") && upToDate(inputs)) {
  console.error("build: the addon is up to date (its sources are unchanged since it was built); TOOLNEXUS_FORCE_BUILD=1 rebuilds")
  process.exit(0)
}
// The `.2.17` suffix is cargo-zigbuild's glibc pin: Cargo builds x86_64-unknown-linux-gnu and zig links
// against glibc 2.17's symbol versions. The output name stays toolnexus.linux-x64-gnu.node.
const status = napiBuild([...baseArgs, "--cross-compile", "--target", `${TARGET}.${GLIBC_FLOOR}`, ...extra], zigEnv())
if (status !== 0) process.exit(status)
if (extra.length === 0 && inputs) writeFileSync(stamp, JSON.stringify({ inputs, addon: fileHash(addon), types: fileHash(join(root, "binding.d.ts")) }))

// A cheap guard: the build fails here, not on a user's RHEL 8, if anything newer slipped in. It needs
// objdump (binutils); without it the check is left to CI (.ci/run runs it too).
if (spawnSync("objdump", ["--version"], { stdio: "ignore" }).error) {
  console.error("build: objdump (binutils) not found: skipping the glibc floor check")
  process.exit(0)
}
const checker = join(root, "scripts", "check-glibc.mjs")
process.exit(run(process.execPath, [checker, "--max", GLIBC_FLOOR, join(root, "toolnexus.linux-x64-gnu.node")]))


/** `npm run build:linux-arm64`: toolnexus.linux-arm64-gnu.node, linked against glibc 2.17. */
async function buildArm64() {
  if (process.platform !== "linux" || process.arch !== "x64") fail("--linux-arm64 cross-builds from x64 Linux only")
  const missing = [DEBIAN_RUST, DEBIAN_CARGO, ARM64_STD].filter((f) => !existsSync(f))
  if (missing.length) fail(`--linux-arm64 needs Debian's Rust with the arm64 standard library (missing ${missing.join(", ")}): ${ARM64_PACKAGES}`)
  if (!(await ensureToolchain())) fail("--linux-arm64 needs the zig toolchain (python3 with pip, or python3 and unzip, to install it)")
  const env = debianRustEnv()
  // Its own target directory: another compiler's artifacts would make each build start over.
  env.CARGO_TARGET_DIR = join(root, "target", "linux-arm64")
  // baseArgs: the generated declarations go to binding.d.ts, never over the hand-written index.d.ts.
  const args = [...baseArgs, "--cross-compile", "--target", `${ARM64_TARGET}.${GLIBC_FLOOR}`, ...extra]
  const status = napiBuild(args, env)
  if (status !== 0) return status
  const built = join(root, "toolnexus.linux-arm64-gnu.node")
  if (!existsSync(built)) fail(`napi build finished but ${built} is missing`)
  return run(process.execPath, [join(root, "scripts", "check-glibc.mjs"), "--max", GLIBC_FLOOR, built])
}

/**
 * `npm run build:linux-x64-musl`: toolnexus.linux-x64-musl.node, the addon for Alpine and other
 * musl systems, cross-built here: Debian's Rust builds the musl standard library from its sources
 * (-Zbuild-std; rustup has no musl std here) and zig links against its own musl. A cdylib on musl
 * links the C library dynamically (`-crt-static` off), so the addon shares the host Node's musl.
 * The result is checked to need no glibc symbol and no glibc library.
 */
async function buildMusl() {
  if (process.platform !== "linux" || process.arch !== "x64") fail("--linux-x64-musl cross-builds from x64 Linux only")
  const missing = [DEBIAN_RUST, DEBIAN_CARGO, RUST_SRC].filter((f) => !existsSync(f))
  if (missing.length) fail(`--linux-x64-musl needs Debian's Rust and its standard library's sources (missing ${missing.join(", ")}): apt-get install rustc-web cargo-web rust-web-src`)
  if (!(await ensureToolchain())) fail("--linux-x64-musl needs the zig toolchain (python3 with pip, or python3 and unzip, to install it)")
  const env = debianRustEnv({ bootstrap: true })
  env.CARGO_TARGET_DIR = join(root, "target", "linux-x64-musl")
  env.CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS = "-C target-feature=-crt-static"
  // `--dev` (or TOOLNEXUS_MUSL_DEV=1): the dev profile without debug info, a check of behaviour
  // in minutes (CI's); the release profile otherwise.
  const dev = extra.includes("--dev") || /^(1|true|yes)$/i.test(process.env.TOOLNEXUS_MUSL_DEV ?? "")
  if (dev) env.CARGO_PROFILE_DEV_DEBUG ??= "0"
  const args = ["zigbuild", "-Zbuild-std", "--target", MUSL_TARGET, "-p", "toolnexus-node", ...extra.filter((a) => a !== "--dev")]
  if (!dev) args.push("--release")
  const status = run(join(toolsDir, "zigbuild", "bin", "cargo-zigbuild"), args, { env })
  if (status !== 0) return status
  const built = join(env.CARGO_TARGET_DIR, MUSL_TARGET, dev ? "debug" : "release", "libtoolnexus_node.so")
  if (!existsSync(built)) fail(`cargo finished but ${built} is missing`)
  const out = join(root, "toolnexus.linux-x64-musl.node")
  copyFileSync(built, out)
  return run(process.execPath, [join(root, "scripts", "check-glibc.mjs"), "--musl", out])
}
