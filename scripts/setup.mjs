#!/usr/bin/env node
// The set-up a fresh clone needs before `npm run build`, `npm run demo` or `npm test`: the build
// tools are the package's own dev dependencies, so when the napi CLI is missing this runs `npm ci`
// (the lock file's exact versions). Once they are there it does nothing.
import { existsSync } from "node:fs"
import { spawnSync } from "node:child_process"
import path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const napi = path.join(root, "node_modules", ".bin", process.platform === "win32" ? "napi.cmd" : "napi")

if (!existsSync(napi)) {
  console.error("[setup] node_modules/.bin/napi is missing (a fresh clone?): npm ci")
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit", shell: process.platform === "win32" })
  if (r.status !== 0) {
    console.error(`[setup] npm ci failed (exit ${r.status ?? r.signal}); run it yourself to see why`)
    process.exit(1)
  }
}
