// SPEC §6: defineTool, tool() and collectTools().
import test from "node:test"
import assert from "node:assert/strict"
import { defineTool, tool, collectTools, pending } from "../index.js"

const make = (run, extra = {}) => defineTool({ name: "t", description: "test tool", run, ...extra })

test("defineTool: shape, default schema and default source", () => {
  const t = defineTool({ name: "word_count", description: "Count words", run: () => "0" })
  assert.equal(t.name, "word_count")
  assert.equal(t.description, "Count words")
  assert.deepStrictEqual(t.inputSchema, { type: "object", properties: {}, additionalProperties: false })
  assert.equal(t.source, "native")
  assert.equal(typeof t.execute, "function")
})

test("defineTool: a given schema and source are kept", () => {
  const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
  const t = make(() => "", { inputSchema: schema, source: "http" })
  assert.equal(t.inputSchema, schema)
  assert.equal(t.source, "http")
})

test("defineTool: a string return is the output", async () => {
  assert.deepStrictEqual(await make(() => "plain text").execute({}), { output: "plain text", isError: false })
  assert.deepStrictEqual(await make(() => "").execute({}), { output: "", isError: false })
})

test("defineTool: other values are JSON-encoded", async () => {
  assert.deepStrictEqual(await make(() => ({ b: 1, a: [true, null] })).execute({}), { output: '{"b":1,"a":[true,null]}', isError: false })
  assert.deepStrictEqual(await make(() => 2).execute({}), { output: "2", isError: false })
  assert.deepStrictEqual(await make(() => false).execute({}), { output: "false", isError: false })
  assert.deepStrictEqual(await make(() => null).execute({}), { output: "null", isError: false })
  assert.deepStrictEqual(await make(() => [1, "x"]).execute({}), { output: '[1,"x"]', isError: false })
})

test("defineTool: undefined return gives an empty output (deliberate: the reference leaves it undefined)", async () => {
  const r = await make(() => {}).execute({})
  assert.deepStrictEqual(r, { output: "", isError: false })
  assert.equal(typeof r.output, "string")
})

test("defineTool: a ToolResult-shaped return passes through untouched", async () => {
  const result = { output: "partial", isError: true, metadata: { retryAfter: 30, source: "cache" } }
  const r = await make(() => result).execute({})
  assert.equal(r, result, "same object, not a copy")
  assert.deepStrictEqual(r.metadata, { retryAfter: 30, source: "cache" })
  const suspension = pending({ kind: "approval", prompt: "go?" })
  assert.equal(await make(() => suspension).execute({}), suspension)
})

test("defineTool: an object with only one of output/isError is encoded, not passed through", async () => {
  assert.deepStrictEqual(await make(() => ({ output: "x" })).execute({}), { output: '{"output":"x"}', isError: false })
})

test("defineTool: a thrown Error becomes an error result with its message", async () => {
  class QuotaError extends Error {}
  assert.deepStrictEqual(await make(() => { throw new QuotaError("quota exceeded") }).execute({}), { output: "quota exceeded", isError: true })
})

test("defineTool: a thrown non-Error becomes String(value)", async () => {
  assert.deepStrictEqual(await make(() => { throw "disk full" }).execute({}), { output: "disk full", isError: true })
  assert.deepStrictEqual(await make(() => { throw 404 }).execute({}), { output: "404", isError: true })
  assert.deepStrictEqual(await make(() => { throw { code: 1 } }).execute({}), { output: "[object Object]", isError: true })
  assert.deepStrictEqual(await make(() => { throw null }).execute({}), { output: "null", isError: true })
})

test("defineTool: an async rejection is an error result too", async () => {
  assert.deepStrictEqual(await make(async () => { throw new Error("upstream 502") }).execute({}), { output: "upstream 502", isError: true })
  assert.deepStrictEqual(await make(() => Promise.reject("nope")).execute({}), { output: "nope", isError: true })
})

test("defineTool: sync and async run both resolve through execute()", async () => {
  const sync = make(({ a, b }) => a + b)
  const asyncTool = make(async ({ a, b }) => { await new Promise((r) => setImmediate(r)); return a * b })
  const p = sync.execute({ a: 2, b: 3 })
  assert.ok(p instanceof Promise, "execute always returns a Promise")
  assert.equal((await p).output, "5")
  assert.equal((await asyncTool.execute({ a: 2, b: 3 })).output, "6")
})

test("defineTool: args default to {} when execute() gets undefined or null", async () => {
  const seen = []
  const t = make((args) => { seen.push(args); return "ok" })
  await t.execute(undefined)
  await t.execute(null)
  await t.execute()
  assert.deepStrictEqual(seen, [{}, {}, {}])
  const given = { x: 1 }
  await t.execute(given)
  assert.equal(seen[3], given, "given args are passed as the same object")
})

test("defineTool: ctx is passed through as given (signal, timeout, answer)", async () => {
  let got
  const t = make((_args, ctx) => { got = ctx; return "ok" })
  const ac = new AbortController()
  const ctx = { signal: ac.signal, timeout: 2500, answer: { id: "pnd-1", ok: true, data: { env: "prod" } } }
  await t.execute({}, ctx)
  assert.equal(got, ctx)
  assert.equal(got.signal, ac.signal)
  assert.equal(got.timeout, 2500)
  assert.deepStrictEqual(got.answer, { id: "pnd-1", ok: true, data: { env: "prod" } })
  await t.execute({})
  assert.equal(got, undefined, "no ctx stays undefined")
})

test("defineTool: run is called as a method of the options object (this = options)", async () => {
  // The reference calls opts.run(args, ctx), so a method-style run can read its options.
  const t = defineTool({
    name: "greet",
    description: "",
    greeting: "bonjour",
    run(args) { return `${this.greeting}, ${args.who}` },
  })
  assert.deepStrictEqual(await t.execute({ who: "Ana" }), { output: "bonjour, Ana", isError: false })
})

test("tool(): marks the function and returns it unchanged", async () => {
  function double({ n }) { return n * 2 }
  const out = tool("Double a number", { name: "double_it" })(double, undefined)
  assert.equal(out, double)
  const marked = double.__tool
  assert.ok(marked, "the marker is set on the function")
  assert.equal(marked.name, "double_it")
  assert.equal(marked.description, "Double a number")
  assert.equal(marked.source, "native")
  assert.deepStrictEqual(marked.inputSchema, { type: "object", properties: {}, additionalProperties: false })
  assert.deepStrictEqual(await marked.execute({ n: 21 }), { output: "42", isError: false })
})

test("tool(): the name falls back to the decorator context name, then the function name", () => {
  function fromFn() {}
  tool("d")(fromFn, undefined)
  assert.equal(fromFn.__tool.name, "fromFn")
  function other() {}
  tool("d")(other, { kind: "method", name: "fromContext" })
  assert.equal(other.__tool.name, "fromContext")
  function third() {}
  tool("d", { name: "explicit" })(third, { kind: "method", name: "fromContext" })
  assert.equal(third.__tool.name, "explicit")
})

test("tool(): a given inputSchema is used", () => {
  const schema = { type: "object", properties: { q: { type: "string" } } }
  function search() {}
  tool("Search", { inputSchema: schema })(search, undefined)
  assert.equal(search.__tool.inputSchema, schema)
})

test("tool(): non-function values are returned untouched", () => {
  const v = { not: "a function" }
  assert.equal(tool("d")(v, { kind: "field", name: "v" }), v)
  assert.equal(tool("d")(undefined, { kind: "field", name: "v" }), undefined)
})

test("collectTools: own function properties carrying the marker", async () => {
  const api = {
    greet: tool("Greet someone")(function greet({ who }) { return `hello ${who}` }, undefined),
    version: "2.1",
    plain: () => "not marked",
  }
  const tools = collectTools(api)
  assert.deepStrictEqual(tools.map((t) => t.name), ["greet"])
  assert.equal((await tools[0].execute({ who: "ada" })).output, "hello ada")
})

test("collectTools: per-instance registry through addInitializer, independent across instances", async () => {
  const initializers = []
  const context = { kind: "method", name: "balance", addInitializer: (fn) => initializers.push(fn) }
  class Account {
    constructor(amount) {
      this.amount = amount
      for (const init of initializers) init.call(this)
    }
  }
  Account.prototype.balance = tool("Current balance")(function balance() { return "unused" }, context)

  const a = new Account(1)
  const b = new Account(2)
  const c = Object.create(Account.prototype) // never initialised
  assert.deepStrictEqual(collectTools(a).map((t) => t.name), ["balance"])
  assert.deepStrictEqual(collectTools(b).map((t) => t.name), ["balance"])
  assert.deepStrictEqual(collectTools(c), [], "only initialised instances are registered")
  assert.equal(collectTools(a).length, 1, "collecting twice does not duplicate")
})

test("collectTools: registry entries come before own-property ones", () => {
  const initializers = []
  const holder = { kind: "method", name: "fromRegistry", addInitializer: (fn) => initializers.push(fn) }
  tool("registry one")(function fromRegistry() {}, holder)
  const obj = { own: tool("own one")(function own() {}, undefined) }
  for (const init of initializers) init.call(obj)
  assert.deepStrictEqual(collectTools(obj).map((t) => t.name), ["fromRegistry", "own"])
})

test("collectTools: nothing marked gives an empty list", () => {
  assert.deepStrictEqual(collectTools({}), [])
  assert.deepStrictEqual(collectTools({ f() {}, n: 1 }), [])
  assert.deepStrictEqual(collectTools(new (class Empty {})()), [])
})
