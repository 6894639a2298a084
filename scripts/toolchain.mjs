// The cross-linking toolchain the build scripts share: cargo-zigbuild and zig (both wheels from
// PyPI, pinned) installed on first use into `.tools/zigbuild` (gitignored), Debian's Rust (rustc-web,
// cargo-web) for the targets whose standard library rustup cannot fetch here, and zig's C compiler
// as a target's `CC`. Used by build.mjs (the x64 and arm64 glibc builds, the musl build) and
// check-targets.mjs.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { delimiter, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

export const root = dirname(dirname(fileURLToPath(import.meta.url)))
export const toolsDir = join(root, ".tools")
export const zigbuildDir = join(toolsDir, "zigbuild")
export const zig = join(zigbuildDir, "ziglang", "zig")
const stampFile = join(zigbuildDir, "toolnexus-toolchain.json")
const ZIGBUILD = "cargo-zigbuild==0.24.1"
const ZIG = "ziglang==0.15.2"

// Debian's Rust: rustc and cargo 1.96 at /usr/bin, and the standard library's sources for -Zbuild-std.
export const DEBIAN_RUST = "/usr/bin/rustc"
export const DEBIAN_CARGO = "/usr/bin/cargo"
export const RUST_SRC = "/usr/lib/rustlib/src/rust/library"

// Install cargo-zigbuild and zig into .tools/zigbuild unless the pinned versions are already there.
// The install goes to a scratch directory first and is renamed into place, so an interrupted install
// never leaves a half toolchain that looks complete.
export async function ensureToolchain() {
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
  const r = spawnSync(
    python,
    ["-m", "pip", "install", "--quiet", "--no-compile", "--only-binary=:all:", "--target", scratch, ZIGBUILD, ZIG],
    { stdio: "inherit", env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1", PIP_ROOT_USER_ACTION: "ignore" } },
  )
  const status = r.error ? 1 : (r.status ?? 1)
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


export function zigEnv() {
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

/**
 * The environment that runs Debian's cargo and rustc ahead of rustup's proxies (through a directory
 * of links of its own, not all of /usr/bin), with zig's toolchain on PATH as zigEnv sets it.
 * `bootstrap` also lets that cargo take nightly flags (-Zbuild-std), as Debian's own builds do.
 */
export function debianRustEnv({ bootstrap = false } = {}) {
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
  if (bootstrap) env.RUSTC_BOOTSTRAP = "1"
  return env
}

/**
 * A C compiler for one target (a C++ one with `cxx`): zig cc (zig c++) with zig's target name, as
 * a small script in .tools/cc (cc-rs wants one program). cc-rs adds `--target=<llvm triple>`,
 * which zig does not read (it takes `-target`), so the script drops it. Returns the script's path.
 */
export function zigCC(zigTarget, extraFlags = [], { cxx = false } = {}) {
  const dir = join(toolsDir, "cc")
  mkdirSync(dir, { recursive: true })
  const driver = cxx ? "c++" : "cc"
  const file = join(dir, `${driver}-${zigTarget}`)
  const flags = extraFlags.map((f) => `'${f.replace(/'/g, "'\\''")}'`).join(" ")
  const body = [
    "#!/bin/sh",
    "for a in \"$@\"; do shift; case \"$a\" in --target=*) ;; *) set -- \"$@\" \"$a\" ;; esac; done",
    `exec '${zig}' ${driver} -target ${zigTarget} ${flags} "$@"`,
    "",
  ].join("\n")
  if (!existsSync(file) || readFileSync(file, "utf8") !== body) writeFileSync(file, body, { mode: 0o755 })
  return file
}

/**
 * zig's archiver as one program for cc-rs's `AR`: llvm-ar (any object format), or with `lib` set
 * llvm-lib, which takes lib.exe's arguments as cc-rs gives them for MSVC targets.
 */
export function zigAR({ lib = false } = {}) {
  const dir = join(toolsDir, "cc")
  mkdirSync(dir, { recursive: true })
  const tool = lib ? "lib" : "ar"
  const file = join(dir, tool)
  const body = `#!/bin/sh\nexec '${zig}' ${tool} "$@"\n`
  if (!existsSync(file) || readFileSync(file, "utf8") !== body) writeFileSync(file, body, { mode: 0o755 })
  return file
}
