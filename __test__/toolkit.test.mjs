// SPEC §4: the toolkit aggregator.
import test from "node:test"
import assert from "node:assert/strict"
import { createToolkit, defineTool, Toolkit } from "../index.js"
import { runChild } from "./support/llm.mjs"

const named = (name, out = name) => defineTool({ name, description: `${name} tool`, run: () => out })

test("a toolkit of plain tools settles within microtasks, before the loop turns (as the reference's)", async () => {
  const order = []
  const turned = new Promise((resolve) => setImmediate(() => resolve(order.push("loop turned"))))
  const tk = await createToolkit({ extraTools: [named("plain")] })
  order.push("toolkit")
  await turned
  assert.deepStrictEqual(order, ["toolkit", "loop turned"])
  assert.deepStrictEqual(tk.tools().map((t) => t.name).includes("plain"), true)
})

test("createToolkit({ builtins: false }) builds an empty toolkit", async () => {
  const tk = await createToolkit({ builtins: false })
  assert.ok(tk instanceof Toolkit)
  assert.deepStrictEqual(tk.tools(), [])
  assert.deepStrictEqual(tk.toOpenAI(), [])
  assert.deepStrictEqual(tk.toAnthropic(), [])
  assert.deepStrictEqual(tk.toGemini(), [{ functionDeclarations: [] }])
  assert.deepStrictEqual(tk.mcpStatus(), {})
  await tk.close()
})

test("createToolkit() with no argument behaves like {}", async () => {
  const tk = await createToolkit()
  const names = (await createToolkit({})).tools().map((t) => t.name)
  assert.deepStrictEqual(tk.tools().map((t) => t.name), names)
  assert.equal(names.length, 10)
})

test("the Toolkit constructor is not public", () => {
  assert.throws(() => new Toolkit(), TypeError)
})

test("extraTools keep their order and identity", async () => {
  const a = named("alpha"), b = named("beta"), c = named("gamma")
  const tk = await createToolkit({ builtins: false, extraTools: [c, a, b] })
  const tools = tk.tools()
  assert.deepStrictEqual(tools.map((t) => t.name), ["gamma", "alpha", "beta"])
  assert.equal(tools[0], c)
  assert.equal(tools[1], a)
  assert.equal(tools[2], b)
  assert.notEqual(tk.tools(), tools, "tools() returns a fresh array each time")
})

test("hand-written Tool objects come back as the very same objects", async () => {
  const hand = { name: "hand", description: "by hand", inputSchema: { type: "object" }, source: "custom", extra: Symbol("mine"), async execute() { return { output: "h", isError: false } } }
  const tk = await createToolkit({ builtins: false, extraTools: [hand] })
  assert.equal(tk.get("hand"), hand)
  assert.equal(tk.tools()[0], hand)
})

test("duplicate names: the first is kept", async () => {
  const first = named("dup", "first"), second = named("dup", "second")
  const tk = await createToolkit({ builtins: false, extraTools: [first, named("other"), second] })
  assert.deepStrictEqual(tk.tools().map((t) => t.name), ["dup", "other"])
  assert.equal(tk.get("dup"), first)
  assert.equal((await tk.execute("dup", {})).output, "first")
})

test("duplicate names print a warning on stderr (from createToolkit and register)", async () => {
  const r = await runChild(`
    const { createToolkit, defineTool } = await import(ENTRY)
    const t = (name) => defineTool({ name, description: "", run: () => name })
    const tk = await createToolkit({ builtins: false, extraTools: [t("clash"), t("clash")] })
    process.stdout.write("count=" + tk.tools().length + "\\n")
    tk.register(t("again"), t("again"))
    process.stdout.write("count=" + tk.tools().length + "\\n")
  `)
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout, "count=1\ncount=2\n")
  const lines = r.stderr.split("\n").filter(Boolean)
  assert.equal(lines.filter((l) => l.includes('duplicate tool name "clash"') && l.includes("keeping first")).length, 1, r.stderr)
  assert.equal(lines.filter((l) => l.includes('duplicate tool name "again"') && l.includes("keeping first")).length, 1, r.stderr)
  assert.ok(lines.every((l) => l.startsWith("[toolnexus]")), r.stderr)
})

test("disableTools drops names wherever they come from", async () => {
  const tk = await createToolkit({ builtins: false, extraTools: [named("keep"), named("drop_me"), named("also_keep")], disableTools: ["drop_me", "not_there"] })
  assert.deepStrictEqual(tk.tools().map((t) => t.name), ["keep", "also_keep"])
  assert.equal(tk.get("drop_me"), undefined)
  assert.deepStrictEqual(await tk.execute("drop_me", {}), { output: "Unknown tool: drop_me", isError: true })
})

test("accepted builtins values", async () => {
  const ten = ["bash", "read", "write", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite"]
  const cases = [
    [false, []], [true, ten], [{ disabled: true }, []], [{ enabled: false }, []], [{ tools: {} }, ten],
    [{ tools: { bash: false } }, ten.slice(1)], [undefined, ten],
  ]
  for (const [builtins, expected] of cases) {
    const tk = await createToolkit({ builtins, extraTools: [named("x")] })
    assert.deepStrictEqual(tk.tools().map((t) => t.name), [...expected, "x"], JSON.stringify(builtins))
    await tk.close()
  }
})

test("a malformed builtins value rejects, naming builtins", async () => {
  for (const builtins of ["yes", 1, ["bash"]]) {
    await assert.rejects(createToolkit({ builtins }), (e) => e instanceof Error && e.message.includes("`builtins`"), JSON.stringify(builtins))
  }
})

test("a malformed extraTools entry rejects with a TypeError naming its index", async () => {
  await assert.rejects(createToolkit({ extraTools: [named("ok"), { name: "no_execute" }] }), (e) => e instanceof TypeError && e.message.includes("extraTools[1]"))
  await assert.rejects(createToolkit({ extraTools: [null] }), (e) => e instanceof TypeError && e.message.includes("extraTools[0]"))
  await assert.rejects(createToolkit({ extraTools: [named("a"), named("b"), { name: 5, execute() {} }] }), (e) => e instanceof TypeError && e.message.includes("extraTools[2]"))
  await assert.rejects(createToolkit({ extraTools: "nope" }), TypeError)
})

test("get() finds by name, undefined otherwise", async () => {
  const t = named("finder")
  const tk = await createToolkit({ extraTools: [t] })
  assert.equal(tk.get("finder"), t)
  assert.equal(tk.get("FINDER"), undefined)
  assert.equal(tk.get(""), undefined)
})

test("register(): first name wins, returns the toolkit, new tools are usable", async () => {
  const orig = named("report", "original")
  const tk = await createToolkit({ builtins: false, extraTools: [orig] })
  const late = named("late", "late result")
  const ret = tk.register(named("report", "replacement"), late)
  assert.equal(ret, tk)
  assert.deepStrictEqual(tk.tools().map((t) => t.name), ["report", "late"])
  assert.equal(tk.get("report"), orig)
  assert.equal(tk.get("late"), late)
  assert.equal((await tk.execute("late", {})).output, "late result")
  assert.equal((await tk.execute("report", {})).output, "original")
  assert.deepStrictEqual(tk.toOpenAI().map((t) => t.function.name), ["report", "late"])
  assert.equal(tk.register(), tk)
})

test("execute: an unknown name is an error result, not a throw", async () => {
  const tk = await createToolkit({ extraTools: [named("real")] })
  assert.deepStrictEqual(await tk.execute("ghost", { a: 1 }), { output: "Unknown tool: ghost", isError: true })
})

test("execute: args and ctx reach the tool as given (AbortSignal identity kept)", async () => {
  let seen
  const probe = { name: "probe", description: "", inputSchema: { type: "object" }, source: "custom", async execute(args, ctx) { seen = { args, ctx }; return { output: "ok", isError: false, metadata: { n: 1 } } } }
  const tk = await createToolkit({ extraTools: [probe] })
  const ac = new AbortController()
  const args = { path: "/tmp/x" }
  const ctx = { signal: ac.signal, timeout: 1234, answer: { id: "r1", ok: true, data: { v: 2 } } }
  const r = await tk.execute("probe", args, ctx)
  assert.deepStrictEqual(r, { output: "ok", isError: false, metadata: { n: 1 } })
  assert.equal(seen.args, args)
  assert.equal(seen.ctx, ctx)
  assert.equal(seen.ctx.signal, ac.signal)
  await tk.execute("probe", undefined)
  assert.deepStrictEqual(seen.args, {})
  assert.equal(seen.ctx, undefined)
})

test("execute: a class-based Tool runs as a method (this = the tool)", async () => {
  class Counter {
    name = "counter"
    description = "counts calls"
    inputSchema = { type: "object", properties: {} }
    source = "custom"
    calls = 0
    async execute() { this.calls++; return { output: `call ${this.calls}`, isError: false } }
  }
  const counter = new Counter()
  const tk = await createToolkit({ extraTools: [counter] })
  assert.equal((await tk.execute("counter", {})).output, "call 1")
  assert.equal((await tk.execute("counter", {})).output, "call 2")
  assert.equal(tk.get("counter"), counter)
})

test("execute: the tool's own result object is returned", async () => {
  const result = { output: "same", isError: false }
  const tk = await createToolkit({ extraTools: [{ name: "same", description: "", inputSchema: { type: "object" }, source: "custom", execute: async () => result }] })
  assert.equal(await tk.execute("same", {}), result)
})

test("toOpenAI/toAnthropic/toGemini reflect the assembled list", async () => {
  const schema = { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
  const tk = await createToolkit({ builtins: false, extraTools: [defineTool({ name: "search", description: "Search docs", inputSchema: schema, run: () => "" }), named("ping")] })
  const empty = { type: "object", properties: {}, additionalProperties: false }
  assert.equal(JSON.stringify(tk.toOpenAI()), JSON.stringify([
    { type: "function", function: { name: "search", description: "Search docs", parameters: schema } },
    { type: "function", function: { name: "ping", description: "ping tool", parameters: empty } },
  ]))
  assert.equal(JSON.stringify(tk.toAnthropic()), JSON.stringify([
    { name: "search", description: "Search docs", input_schema: schema },
    { name: "ping", description: "ping tool", input_schema: empty },
  ]))
  assert.equal(JSON.stringify(tk.toGemini()), JSON.stringify([{ functionDeclarations: [
    { name: "search", description: "Search docs", parameters: schema },
    { name: "ping", description: "ping tool", parameters: empty },
  ] }]))
})

test("skillsPrompt() is empty and close() resolves (twice)", async () => {
  const tk = await createToolkit({ extraTools: [named("x")] })
  assert.equal(tk.skillsPrompt(), "")
  assert.equal(await tk.close(), undefined)
  await tk.close()
})
