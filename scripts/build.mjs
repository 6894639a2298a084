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
// Extra arguments are passed on to `napi build` (`npm run build -- --verbose`); one that picks a target
// or a cross-compile mode (`--target`, `-x`, `--use-napi-cross`, ...) turns the zig route off.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { delimiter, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = dirname(dirname(fileURLToPath(import.meta.url)))

// The glibc floor and the pinned toolchain. Changing a pin reinstalls the toolchain on the next build.
const GLIBC_FLOOR = "2.17"
const ZIGBUILD = "cargo-zigbuild==0.24.1"
const ZIG = "ziglang==0.15.2"
const TARGET = "x86_64-unknown-linux-gnu"
const ARM64_TARGET = "aarch64-unknown-linux-gnu"
// The Debian toolchain the arm64 build uses, and what installs it.
const DEBIAN_RUST = "/usr/bin/rustc"
const DEBIAN_CARGO = "/usr/bin/cargo"
const ARM64_STD = "/usr/lib/rustlib/aarch64-unknown-linux-gnu"
const ARM64_PACKAGES = "dpkg --add-architecture arm64 && apt-get update && apt-get install rustc-web cargo-web libstd-rust-web-dev:arm64"

const toolsDir = join(root, ".tools")
const zigbuildDir = join(toolsDir, "zigbuild")
const stampFile = join(zigbuildDir, "toolnexus-toolchain.json")

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

// Install cargo-zigbuild and zig into .tools/zigbuild unless the pinned versions are already there.
// The install goes to a scratch directory first and is renamed into place, so an interrupted install
// never leaves a half toolchain that looks complete.
async function ensureToolchain() {
  const wanted = { packages: [ZIGBUILD, ZIG] }
  if (existsSync(stampFile)) {
    try {
      const have = JSON.parse(readFileSync(stampFile, "utf8"))
      if (JSON.stringify(have.packages) === JSON.stringify(wanted.packages)) return true
    } catch {
      // unreadable stamp: reinstall
    }
  }
  const python = process.env.PYTHON || "python3"
  console.error(`build: installing ${ZIGBUILD} and ${ZIG} into ${zigbuildDir} (first use)`)
  mkdirSync(toolsDir, { recursive: true })
  const scratch = `${zigbuildDir}.partial-${process.pid}`
  rmSync(scratch, { recursive: true, force: true })
  const started = Date.now()
  const probe = spawnSync(python, ["-m", "pip", "--version"], { encoding: "utf8" })
  const viaPip = !probe.error && probe.status === 0
  const installed = viaPip ? pipInstall(python, scratch) : await wheelInstall(python, scratch)
  if (!installed) {
    rmSync(scratch, { recursive: true, force: true })
    return false
  }
  writeFileSync(join(scratch, "toolnexus-toolchain.json"), `${JSON.stringify(wanted, null, 2)}\n`)
  rmSync(zigbuildDir, { recursive: true, force: true })
  renameSync(scratch, zigbuildDir)
  console.error(`build: toolchain installed in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return true
}

function pipInstall(python, scratch) {
  const status = run(
    python,
    ["-m", "pip", "install", "--quiet", "--no-compile", "--only-binary=:all:", "--target", scratch, ZIGBUILD, ZIG],
    { env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1", PIP_ROOT_USER_ACTION: "ignore" } },
  )
  if (status !== 0) console.warn(`build: pip could not install ${ZIGBUILD} ${ZIG} (exit ${status})`)
  return status === 0
}

// Without pip: the same two wheels straight from PyPI, checked against the sha256 PyPI lists, unpacked
// with Python's own zipfile module or unzip, laid out as pip would (scripts into bin/).
async function wheelInstall(python, scratch) {
  const unpack = (file) => {
    const viaPython = spawnSync(python, ["-m", "zipfile", "-e", file, scratch], { stdio: "inherit" })
    if (!viaPython.error && viaPython.status === 0) return true
    const viaUnzip = spawnSync("unzip", ["-q", "-o", file, "-d", scratch], { stdio: "inherit" })
    return !viaUnzip.error && viaUnzip.status === 0
  }
  try {
    mkdirSync(scratch, { recursive: true })
    for (const spec of [ZIGBUILD, ZIG]) {
      const [name, version] = spec.split("==")
      // PyPI's simple index (PEP 691, JSON form): every file with its sha256.
      const index = await fetch(`https://pypi.org/simple/${name}/`, { headers: { accept: "application/vnd.pypi.simple.v1+json" } })
      if (!index.ok) throw new Error(`PyPI answered ${index.status} for ${name}`)
      const prefix = `${name.replace(/-/g, "_")}-${version}-`
      const wheel = (await index.json()).files.find(
        (f) => f.filename.startsWith(prefix) && f.filename.endsWith(".whl") && /manylinux[^-]*x86_64/.test(f.filename),
      )
      if (!wheel) throw new Error(`no manylinux x86_64 wheel of ${spec} on PyPI`)
      const got = await fetch(wheel.url)
      if (!got.ok) throw new Error(`PyPI answered ${got.status} for ${wheel.filename}`)
      const bytes = Buffer.from(await got.arrayBuffer())
      const sha = createHash("sha256").update(bytes).digest("hex")
      if (sha !== wheel.hashes.sha256) throw new Error(`${wheel.filename}: sha256 ${sha}, PyPI lists ${wheel.hashes.sha256}`)
      const file = join(scratch, wheel.filename)
      writeFileSync(file, bytes)
      if (!unpack(file)) throw new Error(`cannot unpack ${wheel.filename}: neither \`${python} -m zipfile\` nor unzip worked`)
      rmSync(file)
    }
    const bin = join(scratch, "bin")
    mkdirSync(bin, { recursive: true })
    for (const d of readdirSync(scratch).filter((n) => n.endsWith(".data"))) {
      const scripts = join(scratch, d, "scripts")
      if (!existsSync(scripts)) continue
      for (const f of readdirSync(scripts)) renameSync(join(scripts, f), join(bin, f))
    }
    for (const f of readdirSync(bin)) chmodSync(join(bin, f), 0o755)
    chmodSync(join(scratch, "ziglang", "zig"), 0o755)
    return true
  } catch (e) {
    console.warn(`build: could not fetch the zig toolchain from PyPI without pip: ${e instanceof Error ? e.message : e}`)
    return false
  }
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
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "src", "crates", "Cargo.toml", "Cargo.lock", "build.rs", "package.json", "scripts/build.mjs", "rust-toolchain.toml"],
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

function zigEnv() {
  const env = { ...process.env }
  // cargo-zigbuild looks for `python3 -m ziglang` first, then `zig`: PYTHONPATH makes the first
  // find the pinned wheel in .tools, and the second is pointed at the same binary.
  env.PYTHONPATH = [zigbuildDir, env.PYTHONPATH].filter(Boolean).join(delimiter)
  env.CARGO_ZIGBUILD_ZIG_PATH = join(zigbuildDir, "ziglang", "zig")
  env.PATH = [join(zigbuildDir, "bin"), env.PATH].filter(Boolean).join(delimiter)
  // Keep zig's and cargo-zigbuild's caches next to the toolchain rather than in ~/.cache.
  env.CARGO_ZIGBUILD_CACHE_DIR ??= join(toolsDir, "cache", "cargo-zigbuild")
  env.ZIG_GLOBAL_CACHE_DIR ??= join(toolsDir, "cache", "zig")
  env.ZIG_LOCAL_CACHE_DIR ??= join(toolsDir, "cache", "zig-local")
  return env
}

const arm64 = process.argv.includes("--linux-arm64")
const extra = process.argv.slice(2).filter((a) => a !== "--linux-arm64")
const native = /^(1|true|yes)$/i.test(process.env.TOOLNEXUS_NATIVE_GLIBC ?? "")
// An explicit target or cross-compile choice on the command line is the caller's: build exactly that.
const ownTarget = extra.some((a) => /^(--target|-t|--cross-compile|-x|--use-cross|--use-napi-cross)(=|$)/.test(a))

if (arm64) process.exit(await buildArm64())

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
  // Debian's cargo and rustc ahead of rustup's proxies, through a directory of their own (not all of /usr/bin).
  const shims = join(toolsDir, "debian-rust")
  mkdirSync(shims, { recursive: true })
  for (const [name, target] of [["cargo", DEBIAN_CARGO], ["rustc", DEBIAN_RUST], ["rustdoc", "/usr/bin/rustdoc"]]) {
    const link = join(shims, name)
    rmSync(link, { force: true })
    symlinkSync(target, link)
  }
  const env = zigEnv()
  env.PATH = [join(zigbuildDir, "bin"), shims, env.PATH].join(delimiter)
  delete env.RUSTUP_TOOLCHAIN
  env.CARGO = DEBIAN_CARGO
  env.RUSTC = DEBIAN_RUST
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
