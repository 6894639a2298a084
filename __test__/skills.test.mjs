// SPEC §3: skills from directories and data, the `skill` tool, the catalog, and the toolkit options.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { pathToFileURL } from "node:url"
import {
  loadSkills, listSkills, createToolkit, defineTool, SKILL_TOOL_DESCRIPTION, SKILLS_PROMPT_PREAMBLE,
} from "../index.js"
import { runChild } from "./support/llm.mjs"

function tree(files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-skills-"))
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), text)
  }
  return root
}

const md = (name, description, body) =>
  `---\nname: ${name}\n${description === undefined ? "" : `description: ${description}\n`}---\n${body}`

const hello = () =>
  tree({
    "hello-world/SKILL.md": md("hello-world", "A tiny example skill.", "\n# Hello World Skill\n\nSteps.\n"),
    "hello-world/scripts/greet.sh": "echo hi\n",
  })

test("the constants are the loader description and the catalog preamble", () => {
  assert.equal(
    SKILL_TOOL_DESCRIPTION,
    "Load a specialized skill when the task at hand matches one of the skills listed in the system prompt.\n\nUse this tool to inject the skill's instructions and resources into current conversation. The output may contain detailed workflow guidance as well as references to scripts, files, etc in the same directory as the skill.\n\nThe skill name must match one of the skills listed in your system prompt.",
  )
  assert.equal(
    SKILLS_PROMPT_PREAMBLE,
    "Skills provide specialized instructions and workflows for specific tasks.\nUse the skill tool to load a skill when a task matches its description.",
  )
})

test("loadSkills builds one plain `skill` tool whose output is byte-exact", async () => {
  const root = hello()
  const source = loadSkills(root)
  assert.deepStrictEqual(Object.keys(source.skills), ["hello-world"])
  assert.deepStrictEqual(source.skills["hello-world"], {
    name: "hello-world",
    description: "A tiny example skill.",
    location: path.join(root, "hello-world", "SKILL.md"),
    content: "\n# Hello World Skill\n\nSteps.\n",
    origin: "fs",
  })
  const t = source.tool
  assert.equal(t.name, "skill")
  assert.equal(t.source, "skill")
  assert.equal(t.description, SKILL_TOOL_DESCRIPTION)
  assert.deepStrictEqual(t.inputSchema, {
    type: "object",
    properties: { name: { type: "string", description: "The name of the skill to load" } },
    required: ["name"],
    additionalProperties: false,
  })
  const dir = path.join(root, "hello-world")
  const res = await t.execute({ name: "hello-world" })
  assert.deepStrictEqual(res, {
    output: [
      '<skill_content name="hello-world">',
      "# Skill: hello-world",
      "",
      "# Hello World Skill\n\nSteps.",
      "",
      `Base directory for this skill: ${pathToFileURL(dir).href}`,
      "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.",
      "Note: file list is sampled.",
      "",
      "<skill_files>",
      `<file>${path.join(dir, "scripts", "greet.sh")}</file>`,
      "</skill_files>",
      "</skill_content>",
    ].join("\n"),
    isError: false,
    metadata: { name: "hello-world", dir },
  })
  assert.equal(
    source.prompt(),
    `${SKILLS_PROMPT_PREAMBLE}\n\n## Available Skills\n- **hello-world**: A tiny example skill.`,
  )
  const miss = await t.execute({ name: "nope" })
  assert.deepStrictEqual(miss, { output: 'Skill "nope" not found. Available skills: hello-world', isError: true })
})

test("relative roots give relative paths and an absolute file:// base", async (t) => {
  const root = hello()
  const before = process.cwd()
  process.chdir(path.dirname(root))
  t.after(() => process.chdir(before))
  const rel = path.basename(root)
  const source = loadSkills(`./${rel}/`)
  // Relative paths with this platform's separator, as Node's path.join writes them.
  assert.equal(source.skills["hello-world"].location, path.join(rel, "hello-world", "SKILL.md"))
  const res = await source.tool.execute({ name: "hello-world" })
  assert.ok(res.output.includes(`<file>${path.join(rel, "hello-world", "scripts", "greet.sh")}</file>`), res.output)
  assert.ok(res.output.includes(`Base directory for this skill: ${pathToFileURL(path.join(root, "hello-world")).href}\n`))
  assert.equal(res.metadata.dir, path.join(rel, "hello-world"))
})

test("the file:// base percent-encodes as pathToFileURL does", async () => {
  // `?` cannot be in a Windows file name.
  const odd = process.platform === "win32" ? "we ird#%é[x]" : "we ird#?%é[x]"
  const root = tree({ [`${odd}/SKILL.md`]: md("odd", "o", "b") })
  const res = await loadSkills(root).tool.execute({ name: "odd" })
  // Node 20.18.2 and older leave `[` and `]` as they are; later releases encode them, as we always do.
  const href = pathToFileURL(path.join(root, odd)).href.replace(/\[/g, "%5B").replace(/\]/g, "%5D")
  assert.ok(res.output.includes(`Base directory for this skill: ${href}\n`), res.output)
})

test("data skills use a logical base and their resources; sampleLimit caps or omits the list", async () => {
  const source = loadSkills({
    skills: [
      { name: "refund", description: "Refunds", content: " 1. Verify.\n", resources: ["a.md", "b.md", "c.md"] },
      { name: "deploy", content: "Ship it.", base: "internal://deploy/" },
    ],
    sampleLimit: 2,
  })
  assert.deepStrictEqual(source.skills.refund, {
    name: "refund",
    description: "Refunds",
    location: "skill://refund/",
    content: " 1. Verify.\n",
    origin: "logical",
    resources: ["a.md", "b.md", "c.md"],
    base: "skill://refund/",
  })
  const r = await source.tool.execute({ name: "refund" })
  assert.equal(
    r.output,
    '<skill_content name="refund">\n# Skill: refund\n\n1. Verify.\n\nBase directory for this skill: skill://refund/\nRelative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\nNote: file list is sampled.\n\n<skill_files>\n<file>a.md</file>\n<file>b.md</file>\n</skill_files>\n</skill_content>',
  )
  assert.deepStrictEqual(r.metadata, { name: "refund", dir: "skill://refund/" })
  const d = await source.tool.execute({ name: "deploy" })
  assert.ok(d.output.endsWith("Base directory for this skill: internal://deploy/\nRelative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\n</skill_content>"))
  assert.equal(source.prompt(), `${SKILLS_PROMPT_PREAMBLE}\n\n## Available Skills\n- **refund**: Refunds`)

  const root = tree(Object.fromEntries([["s/SKILL.md", md("s", undefined, "x")], ...Array.from({ length: 12 }, (_, i) => [`s/f${String(i).padStart(2, "0")}.txt`, "x"])]))
  const count = async (limit) => (await loadSkills({ dirs: root, sampleLimit: limit }).tool.execute({ name: "s" })).output.split("<file>").length - 1
  assert.equal(await count(undefined), 10)
  assert.equal(await count(0), 10)
  assert.equal(await count(3), 3)
  assert.equal(await count(-1), 0)
  const omitted = await loadSkills({ dirs: root, sampleLimit: -1 }).tool.execute({ name: "s" })
  assert.ok(!omitted.output.includes("<skill_files>") && !omitted.output.includes("sampled"))
})

test("listSkills reports every skill unfiltered and every skip with its reason", () => {
  const a = tree({
    "one/SKILL.md": md("shared", "first", "a"),
    "two/SKILL.md": "---\ndescription: nameless\n---\n",
    "three/SKILL.md": "---\nname: [broken\n---\n",
    "node_modules/x/SKILL.md": md("hidden", "d", "x"),
  })
  const b = tree({ "SKILL.md": md("shared", "second", "b") })
  const inv = listSkills({
    dirs: [a, b],
    skills: [{ name: "shared", content: "data" }, { name: "", content: "orphan" }, { name: "fresh", content: "f" }],
    filter: { nothing: true },
  })
  assert.deepStrictEqual(inv.skills.map((s) => [s.name, s.origin]), [["shared", "fs"], ["fresh", "logical"]])
  assert.ok("description" in inv.skills[1] && inv.skills[1].description === undefined)
  assert.deepStrictEqual(inv.skipped, [
    { location: path.join(a, "two", "SKILL.md"), reason: "missing-name" },
    { location: path.join(a, "three", "SKILL.md"), reason: "malformed-frontmatter" },
    { location: path.join(b, "SKILL.md"), reason: "duplicate-name" },
    { location: "skill://shared/", reason: "duplicate-name" },
    { location: "skill://", reason: "missing-name" },
  ])
  // A bare path and an array of paths are shorthand for { dirs }.
  assert.deepStrictEqual(listSkills(a).skills.map((s) => s.name), ["shared"])
  assert.deepStrictEqual(listSkills([b]).skills.map((s) => s.description), ["second"])
})

test("the filter is an allowlist with any true entry, else a drop-list", () => {
  const skills = [{ name: "a", content: "" }, { name: "b", content: "" }, { name: "c", content: "" }]
  const keys = (filter) => Object.keys(loadSkills({ skills, filter }).skills)
  assert.deepStrictEqual(keys(undefined), ["a", "b", "c"])
  assert.deepStrictEqual(keys({}), ["a", "b", "c"])
  assert.deepStrictEqual(keys({ b: true, c: false }), ["b"])
  assert.deepStrictEqual(keys({ b: false }), ["a", "c"])
  assert.deepStrictEqual(keys({ a: 1, b: false }), ["a", "c"])
})

test("warnings: missing roots, duplicates, unknown filter names, a failing provider", async () => {
  const root = hello()
  const r = await runChild(`
    const { loadSkills, createToolkit } = await import(ENTRY)
    loadSkills({ dirs: [${JSON.stringify(root)}, "/no/such/dir", ${JSON.stringify(root)}], filter: { ghost: false } })
    const tk = await createToolkit({ skills: [], skillProvider: () => { throw new Error("db down") } })
    const tk2 = await createToolkit({ skillProvider: async () => { throw "plain" }, builtins: false })
    process.stdout.write(tk.skillsPrompt() + "|" + tk2.tools().map((t) => t.name).join(","))
  `)
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "No skills are currently available.|skill")
  assert.equal(
    r.stderr,
    [
      "[toolnexus] skills dir not found: /no/such/dir",
      `[toolnexus] duplicate skill name "hello-world" (${path.join(root, "hello-world", "SKILL.md")}) — keeping first`,
      '[toolnexus] skill filter name "ghost" matched no skill',
      "[toolnexus] skill provider failed: db down",
      "[toolnexus] skill provider failed: plain",
      "",
    ].join("\n"),
  )
})

test("createToolkit: the skill tool is a plain Tool placed before the extras", async () => {
  const root = hello()
  const extra = defineTool({ name: "extra", description: "e", run: () => "x" })
  const impostor = defineTool({ name: "skill", description: "not me", run: () => "impostor" })
  const tk = await createToolkit({ skillsDir: root, extraTools: [extra, impostor], builtins: false })
  assert.deepStrictEqual(tk.tools().map((t) => [t.name, t.source]), [["skill", "skill"], ["extra", "native"]])
  const skill = tk.get("skill")
  assert.equal(tk.get("skill"), skill, "the same wrapper every time")
  assert.equal(tk.tools()[0], skill)
  assert.equal(typeof skill.execute, "function")
  assert.deepStrictEqual(Object.keys(skill), ["name", "description", "inputSchema", "source", "execute"])
  const viaToolkit = await tk.execute("skill", { name: "hello-world" })
  const direct = await skill.execute({ name: "hello-world" })
  assert.deepStrictEqual(viaToolkit, direct)
  assert.ok(direct.output.startsWith('<skill_content name="hello-world">'))
  assert.ok(tk.skillsPrompt().endsWith("- **hello-world**: A tiny example skill."))
  assert.equal(tk.toOpenAI()[0].function.name, "skill")
  assert.deepStrictEqual(tk.toAnthropic()[0].input_schema.required, ["name"])
  // A wrapped skill tool works as an extra tool of another toolkit too.
  const other = await createToolkit({ extraTools: [skill] })
  assert.equal((await other.execute("skill", { name: "hello-world" })).output, direct.output)
})

test("createToolkit: no skills option means no skill tool and an empty prompt", async () => {
  const tk = await createToolkit({ builtins: false })
  assert.equal(tk.get("skill"), undefined)
  assert.equal(tk.skillsPrompt(), "")
  const empty = await createToolkit({ skills: [], builtins: false })
  assert.equal(empty.get("skill").source, "skill")
  assert.equal(empty.skillsPrompt(), "No skills are currently available.")
  assert.equal((await empty.execute("skill", { name: "x" })).output, 'Skill "x" not found. Available skills: none')
})

test("createToolkit: provider, data, disableSkills and skillsFilter compose", async () => {
  let calls = 0
  const tk = await createToolkit({
    skills: [{ name: "a", description: "from data", content: "a" }],
    skillProvider: async () => {
      calls++
      return [{ name: "a", description: "from provider", content: "x" }, { name: "b", description: "B", content: "b" }, { name: "c", content: "c" }]
    },
    disableSkills: ["c"],
    skillSampleLimit: -1,
    builtins: false,
  })
  assert.equal(calls, 1)
  assert.equal(tk.skillsPrompt(), `${SKILLS_PROMPT_PREAMBLE}\n\n## Available Skills\n- **a**: from data\n- **b**: B`)
  assert.ok((await tk.execute("skill", { name: "c" })).isError)
  // An explicit filter entry beats disableSkills.
  const kept = await createToolkit({ skillProvider: () => [{ name: "c", description: "C", content: "c" }], disableSkills: ["c"], skillsFilter: { c: true } })
  assert.ok(kept.skillsPrompt().includes("- **c**: C"))
  // disableTools can still drop the tool itself.
  const dropped = await createToolkit({ skills: [{ name: "a", content: "" }], disableTools: ["skill"], builtins: false })
  assert.deepStrictEqual(dropped.tools(), [])
})

test("createToolkit: a provider that resolves to a non-iterable rejects like the reference", async () => {
  await assert.rejects(createToolkit({ skillProvider: () => 5 }), TypeError)
})

test("loadSkills rejects input that is neither a path, a list nor an options object", () => {
  assert.throws(() => loadSkills(42), TypeError)
  assert.throws(() => listSkills(null), TypeError)
})

test("the skills and HTTP declarations type-check a strict consumer", { timeout: 55_000 }, async (t) => {
  const { REPO, cleanEnv } = await import("./support/llm.mjs")
  const { spawn } = await import("node:child_process")
  const tsc = path.join(REPO, "node_modules", ".bin", "tsc")
  // The declarations are the same everywhere; they are checked where tsc's shell launcher runs.
  if (process.platform === "win32") return t.skip("declarations are type-checked on Linux and macOS")
  if (!fs.existsSync(tsc)) return t.skip(`tsc not installed at ${tsc}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-tsc-skills-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, "node_modules"))
  fs.symlinkSync(REPO, path.join(dir, "node_modules", "toolnexus"), "dir")
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
  fs.writeFileSync(
    path.join(dir, "consumer.ts"),
    `
import {
  loadSkills, listSkills, httpTool, createToolkit, SKILL_TOOL_DESCRIPTION, SKILLS_PROMPT_PREAMBLE,
  type SkillSource, type SkillInfo, type SkillInventory, type SkillSkip, type SkillSkipReason,
  type LoadSkillsOptions, type SkillDef, type HttpToolOptions, type Tool, type ToolResult,
} from "toolnexus"

const defs: SkillDef[] = [{ name: "refund", description: "Refunds", content: "steps", resources: ["a.md"], base: "x://" }]
const opts: LoadSkillsOptions = { dirs: ["skills"], skills: defs, filter: { refund: true }, sampleLimit: -1 }
const source: SkillSource = loadSkills(opts)
const info: SkillInfo | undefined = source.skills["refund"]
const origin: "fs" | "logical" | undefined = info?.origin
const tool: Tool = source.tool
const catalog: string = source.prompt()
const inv: SkillInventory = listSkills("skills")
const skip: SkillSkip | undefined = inv.skipped[0]
const reason: SkillSkipReason | undefined = skip?.reason
listSkills(["a", "b"])
const h: HttpToolOptions = { name: "n", description: "d", method: "POST", url: "http://h/{id}", headers: { A: "\${K}" }, query: ["q"], body: "form", timeout: 5, resultMode: "status+text" }
const ht: Tool = httpTool(h)
export async function main(): Promise<string> {
  const r: ToolResult = await ht.execute({ id: 1 }, { timeout: 10, signal: new AbortController().signal })
  const tk = await createToolkit({ skillsDir: "skills", skillProvider: async () => defs, skillsFilter: { a: false }, disableSkills: ["b"], skillSampleLimit: 3 })
  return [SKILL_TOOL_DESCRIPTION, SKILLS_PROMPT_PREAMBLE, origin, tool.name, catalog, reason, r.output, tk.skillsPrompt()].join("|")
}
// @ts-expect-error - resultMode is "text" | "json" | "status+text"
httpTool({ name: "n", description: "d", method: "GET", url: "u", resultMode: "xml" })
// @ts-expect-error - a SkillDef needs content
const badDef: SkillDef = { name: "x" }
void badDef
`,
  )
  const args = ["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom"]
  const types = path.join(REPO, "node_modules", "@types")
  if (fs.existsSync(path.join(types, "node"))) args.push("--typeRoots", types, "--types", "node")
  args.push("consumer.ts")
  const r = await new Promise((resolve) => {
    const child = spawn(tsc, args, { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (out += d))
    child.on("close", (code) => resolve({ code, out }))
  })
  assert.equal(r.code, 0, r.out)
})
