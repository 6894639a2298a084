// The release targets of package.json `napi.targets`, with the names napi gives their packages
// and `.node` files (`linux-x64-gnu` for x86_64-unknown-linux-gnu, ...).
import { readFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const ARCH = { x86_64: "x64", aarch64: "arm64", i686: "ia32", armv7: "arm" }

/** `x86_64-unknown-linux-gnu` -> `linux-x64-gnu`, `aarch64-apple-darwin` -> `darwin-arm64`. */
export function abiOf(triple) {
  const [cpu, , os, env] = triple.split("-")
  const arch = ARCH[cpu]
  if (!arch) throw new Error(`unknown architecture in target ${triple}`)
  if (os === "linux") return `linux-${arch}-${env}`
  if (os === "darwin") return `darwin-${arch}`
  if (os === "windows") return `win32-${arch}-${env}`
  throw new Error(`unknown target ${triple}`)
}

export function readRoot(dir = root) {
  return JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"))
}

/** The optionalDependencies the published root package must carry: every target, pinned. */
export function optionalDependencies(pkg) {
  const out = {}
  for (const triple of pkg.napi.targets) out[`${pkg.napi.packageName}-${abiOf(triple)}`] = pkg.version
  return out
}
