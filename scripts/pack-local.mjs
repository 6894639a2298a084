#!/usr/bin/env node
// Packs tarballs to install on this machine: the root package and the platform package of the host,
// holding the local build (`toolnexus.<platform>.node`, from `npm run build`; another platform's,
// from its cross-build, when asked: `packLocal(out, "linux-arm64-gnu")`). Both are packed from
// staging copies, so the checkout is left as it is.
//
// The root tarball comes in two forms:
// - local (the default, `npm run pack:local`): NO optionalDependencies. The platform packages are
//   not on the npm registry, and a project that records an optional dependency on them asks the
//   registry for each one on every install (404) and fails `npm ci` ("Missing: ... from lock
//   file"); the platform tarball is installed beside the root one instead. Its package.json says
//   where it came from, `"toolnexus": { "localPack": true, "packDir": <out dir> }`, so the loader's
//   error names the platform tarball to install rather than a registry package; and it is
//   `private`, so npm refuses to publish it.
// - release (`{ release: true }`, `--release`; scripts/verify-pack.mjs): what a release publishes,
//   optionalDependencies written as `napi pre-publish` writes them, packed through the prepack
//   check (scripts/check-pack.mjs).
//
// Usage: node scripts/pack-local.mjs [out dir] (default: ./pack) [--abi=linux-arm64-gnu] [--release].
// Prints the two tarballs' paths as JSON.
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { execFileSync } from "node:child_process"
import os from "node:os"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { abiOf, optionalDependencies, readRoot, root } from "./targets.mjs"

/** The napi name of the host (what the loader looks for). */
export function hostAbi() {
  const { platform, arch } = process
  if (platform === "linux") {
    const glibc = process.report.getReport().header.glibcVersionRuntime
    return `linux-${arch}-${glibc ? "gnu" : "musl"}`
  }
  return platform === "win32" ? `win32-${arch}-msvc` : `${platform}-${arch}`
}

function npmPack(dir, out, flags = []) {
  const json = execFileSync("npm", ["pack", "--json", "--pack-destination", out, ...flags], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    shell: process.platform === "win32",
  })
  const [info] = JSON.parse(json.slice(json.indexOf("[")))
  return { file: path.join(out, info.filename), size: info.size, unpackedSize: info.unpackedSize, entries: info.entryCount }
}

/**
 * The root package's manifest as packed: the release form carries every platform package as a
 * pinned optional dependency; the local form carries none, and says it is a local pack (and where
 * its platform tarball was written).
 */
export function rootManifest(pkg, { release = false, out } = {}) {
  if (release) return { ...pkg, optionalDependencies: optionalDependencies(pkg) }
  const { optionalDependencies: _, ...rest } = pkg
  return { ...rest, private: true, toolnexus: { ...pkg.toolnexus, localPack: true, ...(out ? { packDir: out } : {}) } }
}

/** The file name `npm pack` gives a package's tarball: `@toolnexus/binding-x` -> `toolnexus-binding-x-<version>.tgz`. */
export const tarballName = (name, version) => `${name.replace(/^@/, "").replace("/", "-")}-${version}.tgz`

export function packLocal(out, abi = hostAbi(), { release = false } = {}) {
  out = path.resolve(out)
  mkdirSync(out, { recursive: true })
  const pkg = readRoot()
  if (!pkg.napi.targets.map(abiOf).includes(abi)) throw new Error(`${abi} is not one of napi.targets`)
  const binary = path.join(root, `${pkg.napi.binaryName}.${abi}.node`)
  if (!existsSync(binary)) throw new Error(`${path.basename(binary)} is missing: npm run build first`)
  const stage = mkdtempSync(path.join(os.tmpdir(), "toolnexus-stage-"))
  try {
    // The root package: its `files`, its manifest (above), and what prepack runs.
    const rootStage = path.join(stage, "root")
    mkdirSync(path.join(rootStage, "scripts"), { recursive: true })
    for (const f of [...pkg.files, "README.md", "LICENSE"]) cpSync(path.join(root, f), path.join(rootStage, f), { recursive: true })
    for (const f of ["check-pack.mjs", "targets.mjs"]) cpSync(path.join(root, "scripts", f), path.join(rootStage, "scripts", f))
    writeFileSync(path.join(rootStage, "package.json"), JSON.stringify(rootManifest(pkg, { release, out }), null, 2) + "\n")
    // The platform package: npm/<abi> plus the binary (what `napi artifacts` stages in CI).
    const platStage = path.join(stage, abi)
    cpSync(path.join(root, "npm", abi), platStage, { recursive: true })
    cpSync(binary, path.join(platStage, path.basename(binary)))
    // The local form has no optionalDependencies by design: prepack's check (which refuses a root
    // without them, so that none is published) is for the release form.
    const packedRoot = npmPack(rootStage, out, release ? [] : ["--ignore-scripts"])
    return { root: packedRoot, platform: npmPack(platStage, out), abi, release }
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2)
  const abi = args.find((a) => a.startsWith("--abi="))?.slice(6)
  const out = args.find((a) => !a.startsWith("--")) ?? "pack"
  console.log(JSON.stringify(packLocal(path.resolve(out), abi, { release: args.includes("--release") }), null, 2))
}
