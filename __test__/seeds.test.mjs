// The shared docs-example seeds (a sibling checkout ../shared), run against this package.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { REPO, cleanEnv } from "./support/llm.mjs"

const SHARED = path.resolve(REPO, "..", "shared")
const SEEDS = path.join(SHARED, "seeds")
const RUNNER = path.join(SHARED, "tools", "docs-examples.mjs")
const FIXTURES = path.join(SHARED, "fixtures")
const TSX = path.join(REPO, "node_modules", ".bin", "tsx")

const missing = [SEEDS, RUNNER].filter((p) => !fs.existsSync(p))
const skip = missing.length ? `shared seeds not available (missing ${missing.join(", ")})` : !fs.existsSync(TSX) ? `tsx not installed at ${TSX}` : false

test("the shared seed examples all pass against this package", { skip, timeout: 55_000 }, async (t) => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-seeds-"))
  t.after(() => fs.rmSync(out, { recursive: true, force: true }))
  const args = [RUNNER, "--docs", SEEDS, "--pkg", REPO, "--out", out, "--tsx", TSX]
  if (fs.existsSync(FIXTURES)) args.push("--root", FIXTURES)
  const r = await new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: REPO, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })
  const report = `${r.stdout}\n${r.stderr}`
  assert.match(r.stdout.trimEnd(), /6 passed, 0 failed$/, report)
  assert.equal(r.code, 0, report)
})
