"use strict"
// Finds and loads the native addon. The root package ships JavaScript and types only; the addon
// for each platform is its own package (`@toolnexus/binding-<platform>`), an optional dependency
// that npm installs only where its `os`, `cpu` and `libc` match. A local build next to this file
// (`toolnexus.<platform>.node`, what `npm run build` writes in a checkout) comes first. Before
// both, `NAPI_RS_NATIVE_LIBRARY_PATH` (the override napi-rs packages honour) names the one file to
// load: a build kept elsewhere; when it does not load, that is the error, with nothing tried after.
//
// When nothing loads, this throws ONE error that says what was detected, what was looked for,
// which platforms have a prebuilt addon, and the command that fixes it. A file that exists but
// fails to load (damaged, another architecture, a newer glibc than the system's) is named first,
// with the loader's own error as `cause`.

const fs = require("node:fs")
const path = require("node:path")
const manifest = require("./package.json")
const { version } = manifest

/**
 * The running platform: Node's names, the C library on Linux, and the target as napi names it.
 * @typedef {object} Host
 * @property {NodeJS.Platform} platform
 * @property {string} arch
 * @property {"musl" | "glibc" | null} libc null off Linux
 * @property {string} abi
 * @property {string | null} [libcVersion] the glibc version, found only for an error message
 */

/**
 * One place the addon was looked for that did not load, and why (a thrown value: anything).
 * @typedef {{ where: string, error: unknown, local?: boolean, override?: boolean }} Failure
 */

/**
 * What this file reads of Node's diagnostic report.
 * @typedef {{ header?: { glibcVersionRuntime?: string }, sharedObjects?: unknown }} Report
 */

const SCOPE = "@toolnexus/binding"
const REPOSITORY = "https://github.com/toolnexus/toolnexus-rs"

/** The platforms with a prebuilt addon (package.json `napi.targets`, as napi names them). */
const SUPPORTED = [
  "linux-x64-gnu",
  "linux-arm64-gnu",
  "linux-x64-musl",
  "linux-arm64-musl",
  "darwin-x64",
  "darwin-arm64",
  "win32-x64-msvc",
  "win32-arm64-msvc",
]

/** @param {string} name */
const isMusl = (name) => /(?:^|\/)(?:ld-musl-|libc\.musl-)/.test(name)

/**
 * Which C library this Node runs on: the one mapped into this very process (/proc/self/maps,
 * read in well under a millisecond), else what Node's diagnostic report says about itself (which
 * costs 10-40 ms, so it is the fallback, and the source of the glibc version for error messages).
 * The maps are searched for plain substrings: in a fresh process, compiling a regular expression
 * for its first use costs more than reading the file.
 * @returns {"musl" | "glibc"}
 */
function linuxLibc() {
  try {
    const maps = fs.readFileSync("/proc/self/maps", "utf8")
    if (maps.includes("/ld-musl-") || maps.includes("/libc.musl-")) return "musl"
    if (maps.includes("/libc.so.6\n") || maps.endsWith("/libc.so.6") || /\/libc-2\.\d+\.so\s*$/m.test(maps)) return "glibc"
  } catch {
    // no /proc: ask the report
  }
  const r = report()
  if (r && r.header && r.header.glibcVersionRuntime) return "glibc"
  if (r && Array.isArray(r.sharedObjects) && r.sharedObjects.some((f) => isMusl(String(f)))) return "musl"
  return r && r.header ? "musl" : "glibc"
}

/**
 * Node's diagnostic report of this process, without its network part; null when unavailable.
 * @returns {Report | null}
 */
function report() {
  // Missing on some runtimes; `excludeNetwork` exists only on newer Node.
  const rep = /** @type {(NodeJS.ProcessReport & { excludeNetwork?: boolean }) | undefined} */ (process.report)
  if (!rep || typeof rep.getReport !== "function") return null
  const before = rep.excludeNetwork
  try {
    rep.excludeNetwork = true
    return /** @type {Report} */ (rep.getReport())
  } catch {
    return null
  } finally {
    try {
      rep.excludeNetwork = before
    } catch {}
  }
}

/**
 * The glibc version, for messages only (the report is slow: asked only when loading failed).
 * @returns {string | null}
 */
function glibcVersion() {
  const r = report()
  return (r && r.header && r.header.glibcVersionRuntime) || null
}

/**
 * The running platform, as napi names targets: `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`.
 * @returns {Host}
 */
function detect() {
  const { platform, arch } = process
  /** @type {Host["libc"]} */
  let libc = null
  /** @type {string} */
  let abi
  if (platform === "linux") {
    libc = linuxLibc()
    abi = `linux-${arch}-${libc === "musl" ? "musl" : "gnu"}`
  } else if (platform === "win32") {
    abi = `win32-${arch}-msvc`
  } else {
    abi = `${platform}-${arch}`
  }
  return { platform, arch, libc, abi }
}

/**
 * The host in words: `linux x64 (glibc 2.31)`.
 * @param {Host} host
 * @returns {string}
 */
function describe(host) {
  const libc = host.libc ? ` (${host.libc}${host.libcVersion ? " " + host.libcVersion : ""})` : ""
  return `${host.platform} ${host.arch}${libc}`
}

/**
 * The first line of an error's message (dlopen's messages are one line; keep it that way).
 * @param {unknown} e a thrown value: its `message` when it has a truthy one, else itself
 * @returns {string}
 */
const firstLine = (e) => String((e && /** @type {{ message?: unknown }} */ (e).message) || e).split("\n")[0]

/**
 * Where this copy of toolnexus came from, for the fix an error suggests (asked only when loading
 * failed): "pack", a root tarball of `npm run pack:local` (its package.json says so: the local
 * form carries no optional dependencies, and the platform packages are not on the registry, so
 * its platform package is the second tarball pack:local writes); "checkout", the repository itself
 * (beside Cargo.toml: a clone, or a directory `npm install` linked to); else "registry".
 * @param {string} abi this host's platform, as napi names it
 * @returns {{ kind: "pack", tarball: string } | { kind: "checkout" } | { kind: "registry" }}
 */
function origin(abi) {
  const mark = /** @type {{ toolnexus?: { localPack?: unknown, packDir?: unknown } }} */ (manifest).toolnexus
  if (mark && typeof mark === "object" && mark.localPack === true) {
    // The file `npm pack` names the platform package's tarball, where pack:local wrote it.
    const file = `${SCOPE.slice(1).replace("/", "-")}-${abi}-${version}.tgz`
    const dir = typeof mark.packDir === "string" ? mark.packDir : null
    const tarball = dir && fs.existsSync(path.join(dir, file)) ? path.join(dir, file) : path.join("<toolnexus-rs>", "pack", file)
    return { kind: "pack", tarball }
  }
  if (fs.existsSync(path.join(__dirname, "Cargo.toml"))) return { kind: "checkout" }
  return { kind: "registry" }
}

/**
 * The one error thrown when nothing loads: what was detected, what was looked for, the fix.
 * @param {Host} host
 * @param {string} pkg the platform package's name
 * @param {Failure[]} failures
 * @param {boolean} supported whether the platform has a prebuilt addon
 * @returns {Error & { code?: string }}
 */
function failure(host, pkg, failures, supported) {
  if (host.libc === "glibc") host.libcVersion = glibcVersion()
  const lines = []
  const spec = `${pkg}@${version}`
  const from = origin(host.abi)
  // What installs the platform package: the registry's, or the platform tarball of a local pack.
  const target = from.kind === "pack" ? from.tarball : spec
  if (failures.length) {
    const f = failures[0]
    const named = f.override ? `${f.where} (NAPI_RS_NATIVE_LIBRARY_PATH)` : f.where
    lines.push(`toolnexus: the native addon ${named} failed to load: ${firstLine(f.error).replace(`${f.where}: `, "")}`)
    for (const more of failures.slice(1)) lines.push(`  also: ${more.where}: ${firstLine(more.error)}`)
    const glibc = /GLIBC_([0-9.]+)' not found/.exec(String(f.error && /** @type {{ message?: unknown }} */ (f.error).message))
    if (glibc) {
      lines.push(
        `  it needs glibc ${glibc[1]}; this system has ${host.libcVersion ? "glibc " + host.libcVersion : "an older one"}.`,
      )
    }
    lines.push(`Detected: ${describe(host)}, platform package ${spec}.`)
    if (f.override) lines.push(`Fix: point NAPI_RS_NATIVE_LIBRARY_PATH at a toolnexus addon built for ${host.abi} (npm run build writes toolnexus.${host.abi}.node), or unset it.`)
    else if (glibc) lines.push(`Fix: run it on a system with glibc >= ${glibc[1]}, or build it from source (Rust stable, Node >= 20): ${REPOSITORY}.`)
    else if (f.local) lines.push(`Fix: rebuild it (npm run build in ${__dirname}) or delete it${supported ? ` and npm install ${target}` : ""}.`)
    else lines.push(`Fix: reinstall the platform package: npm install --force ${target}`)
  } else if (supported && from.kind === "pack") {
    lines.push(`toolnexus: the native addon for ${describe(host)} is not installed.`)
    lines.push(`Looked for: the package ${spec} and a local build ${path.join(__dirname, `toolnexus.${host.abi}.node`)}.`)
    lines.push(
      `This toolnexus is a tarball from npm run pack:local, which depends on no ${SCOPE}-* package: its platform package is the second tarball pack:local writes, installed beside it.`,
    )
    lines.push(`Fix: npm install ${from.tarball}`)
    lines.push(
      `(Or build from source (Rust stable, Node >= 20): git clone ${REPOSITORY} && cd toolnexus-rs && npm run build && npm run pack:local, then npm install both tarballs of pack/.)`,
    )
  } else if (supported && from.kind === "checkout") {
    lines.push(`toolnexus: the native addon for ${describe(host)} is not installed.`)
    lines.push(`Looked for: a local build ${path.join(__dirname, `toolnexus.${host.abi}.node`)} and the package ${spec}.`)
    lines.push(`Fix: npm run build in ${__dirname} (Rust stable, Node >= 20).`)
  } else if (supported) {
    lines.push(`toolnexus: the native addon for ${describe(host)} is not installed.`)
    lines.push(`Looked for: the package ${spec} (an optional dependency of toolnexus) and a local build ${path.join(__dirname, `toolnexus.${host.abi}.node`)}.`)
    lines.push(`Fix: npm install ${spec}`)
    lines.push(
      "(npm leaves optional dependencies out when installing with --omit=optional or --no-optional.)",
    )
  } else {
    lines.push(`toolnexus: ${describe(host)} (${host.abi}) is not a supported platform; there is no prebuilt native addon for it.`)
    lines.push(
      `Fix: build it from source (Rust stable, Node >= 20): git clone ${REPOSITORY} && cd toolnexus-rs && npm run build, then npm install <that directory> in your project.`,
    )
  }
  lines.push(`Supported: ${SUPPORTED.join(", ")}.`)
  /** @type {Error & { code?: string }} */
  const error = new Error(lines.join("\n"), failures.length ? { cause: failures[0].error } : undefined)
  error.code = "ERR_TOOLNEXUS_NATIVE"
  return error
}

/**
 * The addon: a local build, else the platform package; throws `failure(...)` when neither loads.
 * @returns {typeof import("./binding")}
 */
function load() {
  const host = detect()
  const pkg = `${SCOPE}-${host.abi}`
  const supported = SUPPORTED.includes(host.abi)
  /** @type {Failure[]} */
  const failures = []

  const override = process.env.NAPI_RS_NATIVE_LIBRARY_PATH
  if (override) {
    // Relative to the working directory, as a path typed in a shell is.
    const file = path.resolve(override)
    try {
      return require(file)
    } catch (error) {
      throw failure(host, pkg, [{ where: file, error, override: true }], supported)
    }
  }

  // A local build: a checkout after `npm run build`, or an unsupported platform built from source.
  // On Windows a MinGW build (`npm run build:win32-x64-gnu`) serves when there is no MSVC one.
  let local = path.join(__dirname, `toolnexus.${host.abi}.node`)
  const gnu = host.platform === "win32" ? path.join(__dirname, `toolnexus.win32-${host.arch}-gnu.node`) : null
  if (gnu && !fs.existsSync(local) && fs.existsSync(gnu)) local = gnu
  if (fs.existsSync(local)) {
    try {
      return require(local)
    } catch (error) {
      failures.push({ where: local, error, local: true })
    }
  }

  if (supported) {
    /** @type {string | null} */
    let manifest = null
    try {
      manifest = require.resolve(`${pkg}/package.json`)
    } catch (error) {
      if (!error || /** @type {{ code?: unknown }} */ (error).code !== "MODULE_NOT_FOUND") failures.push({ where: pkg, error })
    }
    if (manifest) {
      const dir = path.dirname(manifest)
      const meta = JSON.parse(fs.readFileSync(manifest, "utf8"))
      const file = path.join(dir, meta.main || `toolnexus.${host.abi}.node`)
      if (meta.version !== version) {
        failures.push({ where: dir, error: new Error(`it is version ${meta.version}; this toolnexus is ${version}`) })
      } else if (!fs.existsSync(file)) {
        failures.push({ where: dir, error: new Error(`the package is installed but ${path.basename(file)} is missing from it`) })
      } else {
        try {
          const binding = require(file)
          if (failures.length) {
            process.emitWarning(`toolnexus: the local build ${failures[0].where} failed to load (${firstLine(failures[0].error)}); using ${pkg}`)
          }
          return binding
        } catch (error) {
          failures.push({ where: file, error })
        }
      }
    }
  }
  throw failure(host, pkg, failures, supported)
}

module.exports = load()
