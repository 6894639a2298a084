// scripts/windows/reruns.mjs: which Windows suite files run again after wine failed to start them
// (`spawn UNKNOWN`), and that a failing test is never one of them. The TAP below is the shape
// Node 20's runner printed under wine in CI.
import { test } from "node:test"
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { reruns } from "../scripts/windows/reruns.mjs"

const spawnFailed = (n, file) =>
  [
    `# Subtest: Z:\\\\tmp\\\\ci\\\\toolnexus\\\\__test__\\\\${file}`,
    `not ok ${n} - Z:\\\\tmp\\\\ci\\\\toolnexus\\\\__test__\\\\${file}`,
    "  ---",
    "  duration_ms: 29.3344",
    "  failureType: 'testCodeFailure'",
    "  error: 'spawn UNKNOWN'",
    "  code: 'UNKNOWN'",
    "  ...",
  ].join("\r\n")
const passed = (n, name) => [`# Subtest: ${name}`, `ok ${n} - ${name}`, "  ---", "  duration_ms: 1", "  ..."].join("\r\n")
const failed = (n, name) =>
  [`# Subtest: ${name}`, `not ok ${n} - ${name}`, "  ---", "  failureType: 'testCodeFailure'", "  error: 'Expected values to be strictly equal'", "  ..."].join("\r\n")

test("files wine could not start are the reruns when they are the only failures", () => {
  const tap = ["TAP version 13", spawnFailed(1, "adapters.test.mjs"), passed(2, "a test"), spawnFailed(3, "skills.test.mjs")].join("\r\n")
  assert.deepEqual(reruns(tap), { files: ["__test__/adapters.test.mjs", "__test__/skills.test.mjs"], other: 0 })
})

test("a failing test is counted, never run again", () => {
  const tap = ["TAP version 13", spawnFailed(1, "adapters.test.mjs"), failed(2, "a test")].join("\n")
  assert.deepEqual(reruns(tap), { files: ["__test__/adapters.test.mjs"], other: 1 })
  // A test that failed with spawn UNKNOWN inside its own code is a test failure, not a file wine lost.
  const own = ["TAP version 13", failed(1, "spawns a child").replace("Expected values to be strictly equal'", "spawn UNKNOWN'")].join("\n")
  assert.deepEqual(reruns(own), { files: [], other: 1 })
})

test("the command prints the files and exits 0 only when they are all that failed", () => {
  const dir = mkdtempSync(join(tmpdir(), "tn-reruns-"))
  try {
    const run = (tap) => {
      writeFileSync(join(dir, "suite.txt"), tap)
      return spawnSync(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), "..", "scripts", "windows", "reruns.mjs"), join(dir, "suite.txt")], { encoding: "utf8" })
    }
    const lost = run(["TAP version 13", spawnFailed(1, "adapters.test.mjs"), passed(2, "x")].join("\r\n"))
    assert.equal(lost.status, 0)
    assert.equal(lost.stdout, "__test__/adapters.test.mjs\n")
    assert.equal(run(["TAP version 13", spawnFailed(1, "adapters.test.mjs"), failed(2, "x")].join("\n")).status, 1)
    assert.equal(run(["TAP version 13", passed(1, "x")].join("\n")).status, 1, "nothing to run again")
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
