// SPEC §7E: composeSoul and the file-backed memory tool.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { agents } from "../index.js"

const home = (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "persona-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}
const read = (dir, name) => fs.readFileSync(path.join(dir, name), "utf8")
const temps = (dir) => fs.readdirSync(dir).filter((n) => n.endsWith(".tmp"))

test("the namespace's constants", () => {
  assert.deepStrictEqual([...agents.BOOTSTRAP_ORDER], ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md"])
  assert.equal(agents.MAX_FILE_BYTES, 2097152)
  assert.equal(agents.TRUNCATION_NOTICE, "\n[truncated: exceeds 2 MB bootstrap cap]")
  assert.equal(agents.HEARTBEAT_OK, "HEARTBEAT_OK")
  assert.ok(agents.HEARTBEAT_PROMPT.startsWith("Heartbeat.") && agents.HEARTBEAT_PROMPT.includes("HEARTBEAT_OK"))
})

test("composeSoul: present files only, in bootstrap order, trimmed, each under its heading", (t) => {
  const dir = home(t)
  fs.writeFileSync(path.join(dir, "HEARTBEAT.md"), "check mail\n")
  fs.writeFileSync(path.join(dir, "SOUL.md"), "\n  calm  \n")
  fs.writeFileSync(path.join(dir, "notes.txt"), "ignored")
  assert.deepStrictEqual(agents.composeSoul(dir), { soul: "## SOUL.md\n\ncalm\n\n## HEARTBEAT.md\n\ncheck mail", found: ["SOUL.md", "HEARTBEAT.md"] })
  assert.deepStrictEqual(agents.composeSoul(path.join(dir, "missing")), { soul: "", found: [] })
})

test("composeSoul caps a file at MAX_FILE_BYTES bytes with the notice; the file is untouched", (t) => {
  const dir = home(t)
  const big = "é".repeat(agents.MAX_FILE_BYTES / 2) + "more"
  fs.writeFileSync(path.join(dir, "MEMORY.md"), big)
  const { soul } = agents.composeSoul(dir)
  assert.equal(soul, "## MEMORY.md\n\n" + "é".repeat(agents.MAX_FILE_BYTES / 2) + agents.TRUNCATION_NOTICE)
  assert.equal(read(dir, "MEMORY.md"), big)
})

test("memoryTool: declaration, add/replace/remove on self and user, loud misses", async (t) => {
  const dir = path.join(home(t), "ava")
  const tool = agents.memoryTool(dir)
  assert.equal(tool.name, "memory")
  assert.deepStrictEqual(tool.inputSchema.required, ["action", "text"])
  assert.deepStrictEqual(Object.keys(tool.inputSchema.properties), ["action", "target", "text", "with"])
  assert.match(tool.description, /load at the START of your NEXT session/)
  const run = (args) => tool.execute(args)
  assert.deepStrictEqual(await run({ action: "add", text: "prefers mornings" }), { output: "ok (add → MEMORY.md); loads next session", isError: false })
  await run({ action: "add", text: "has a cat" })
  assert.equal(read(dir, "MEMORY.md"), "- prefers mornings\n- has a cat\n")
  assert.equal((await run({ action: "replace", text: "cat", with: "dog" })).output, "ok (replace → MEMORY.md); loads next session")
  assert.equal((await run({ action: "remove", text: "- prefers mornings\n" })).output, "ok (remove → MEMORY.md); loads next session")
  assert.equal(read(dir, "MEMORY.md"), "- has a dog\n")
  assert.equal((await run({ action: "add", target: "user", text: "Sam" })).output, "ok (add → USER.md); loads next session")
  assert.equal(read(dir, "USER.md"), "- Sam\n")
  assert.deepStrictEqual(await run({ action: "remove", text: "nope" }), { output: "not found: nope", isError: true })
  assert.deepStrictEqual(await run({ action: "replace", target: "user", text: "nope", with: "x" }), { output: "not found: nope", isError: true })
  assert.deepStrictEqual(await run({ action: "shout", text: "x" }), { output: "unknown action: shout", isError: true })
  assert.deepStrictEqual(temps(dir), [])
})

test("replace is literal: $ patterns in `with` stay as written", async (t) => {
  const dir = home(t)
  fs.writeFileSync(path.join(dir, "MEMORY.md"), "budget: B\n")
  await agents.memoryTool(dir).execute({ action: "replace", text: "B", with: "$& $$ $` $'" })
  assert.equal(read(dir, "MEMORY.md"), "budget: $& $$ $` $'\n")
})

test("a MEMORY.md over 2 MB is edited whole, never rewritten as its truncated text", async (t) => {
  const dir = home(t)
  const big = "z".repeat(agents.MAX_FILE_BYTES + 100) + "\n- last\n"
  fs.writeFileSync(path.join(dir, "MEMORY.md"), big)
  const r = await agents.memoryTool(dir).execute({ action: "replace", text: "- last", with: "- final" })
  assert.equal(r.isError, false)
  const after = read(dir, "MEMORY.md")
  assert.equal(after, "z".repeat(agents.MAX_FILE_BYTES + 100) + "\n- final\n")
  assert.ok(!after.includes("[truncated"))
})

test("a write that cannot happen leaves the previous content and no temp file", async (t) => {
  const dir = home(t)
  // USER.md is a directory: the rename over it fails.
  fs.mkdirSync(path.join(dir, "USER.md"))
  fs.writeFileSync(path.join(dir, "USER.md", "keep"), "kept")
  const r = await agents.memoryTool(dir).execute({ action: "add", target: "user", text: "x" })
  assert.equal(r.isError, true)
  assert.equal(read(path.join(dir, "USER.md"), "keep"), "kept")
  assert.deepStrictEqual(temps(dir), [])
})
