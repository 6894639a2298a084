#!/usr/bin/env node
// Packs what a release publishes, for this machine only: the root package (optionalDependencies
// written as `napi pre-publish` writes them) and the platform package of the host, holding the
// local build (`toolnexus.<platform>.node`, from `npm run build`; another platform's, from its
// cross-build, when asked: `packLocal(out, "linux-arm64-gnu")`). Both are packed from staging
// copies, so the checkout is left as it is. Usage: node scripts/pack-local.mjs [out dir]
// (default: ./pack) [--abi=linux-arm64-gnu]. Prints the two tarballs' paths as JSON.
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

function npmPack(dir, out) {
  const json = execFileSync("npm", ["pack", "--json", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    shell: process.platform === "win32",
  })
  const [info] = JSON.parse(json.slice(json.indexOf("[")))
  return { file: path.join(out, info.filename), size: info.size, unpackedSize: info.unpackedSize, entries: info.entryCount }
}

export function packLocal(out, abi = hostAbi()) {
  mkdirSync(out, { recursive: true })
  const pkg = readRoot()
  if (!pkg.napi.targets.map(abiOf).includes(abi)) throw new Error(`${abi} is not one of napi.targets`)
  const binary = path.join(root, `${pkg.napi.binaryName}.${abi}.node`)
  if (!existsSync(binary)) throw new Error(`${path.basename(binary)} is missing: npm run build first`)
  const stage = mkdtempSync(path.join(os.tmpdir(), "toolnexus-stage-"))
  try {
    // The root package: its `files`, the manifest with optionalDependencies, and what prepack runs.
    const rootStage = path.join(stage, "root")
    mkdirSync(path.join(rootStage, "scripts"), { recursive: true })
    for (const f of [...pkg.files, "README.md", "LICENSE"]) cpSync(path.join(root, f), path.join(rootStage, f), { recursive: true })
    for (const f of ["check-pack.mjs", "targets.mjs"]) cpSync(path.join(root, "scripts", f), path.join(rootStage, "scripts", f))
    writeFileSync(path.join(rootStage, "package.json"), JSON.stringify({ ...pkg, optionalDependencies: optionalDependencies(pkg) }, null, 2) + "\n")
    // The platform package: npm/<abi> plus the binary (what `napi artifacts` stages in CI).
    const platStage = path.join(stage, abi)
    cpSync(path.join(root, "npm", abi), platStage, { recursive: true })
    cpSync(binary, path.join(platStage, path.basename(binary)))
    return { root: npmPack(rootStage, out), platform: npmPack(platStage, out), abi }
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2)
  const abi = args.find((a) => a.startsWith("--abi="))?.slice(6)
  const out = args.find((a) => !a.startsWith("--")) ?? "pack"
  console.log(JSON.stringify(packLocal(path.resolve(out), abi), null, 2))
}
