// Tools whose inputSchema is a Standard Schema (zod 4, valibot, arktype): the JSON Schema a model,
// an MCP client and the adapters see; arguments validated before `run`; the refusal of a schema
// that has no JSON Schema; and the typed `run` under `tsc --strict`.
import test from "node:test"
import assert from "node:assert/strict"
import http from "node:http"
import path from "node:path"
import fs from "node:fs"
import os from "node:os"
import { pathToFileURL } from "node:url"
import { spawn } from "node:child_process"
import { z } from "zod"
import * as v from "valibot"
import { type } from "arktype"
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { agents, createClient, createToolkit, defineTool, tool, collectTools, httpTool, toOpenAI, toAnthropic, toGemini, buildMcpServer, startA2AServer } from "../index.js"
import { startLLM, oaText, oaCalls, REPO, cleanEnv } from "./support/llm.mjs"
import { VirtualClock, reply } from "./support/agents-mock.mjs"

const openai = (llm) => createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })

// The same tool, `add(a, b = 2)`, in each library, with the JSON Schema its converter makes.
const LIBRARIES = [
  {
    lib: "zod",
    schema: () => z.object({ a: z.number(), b: z.number().default(2) }),
    json: { type: "object", properties: { a: { type: "number" }, b: { default: 2, type: "number" } }, required: ["a"] },
  },
  {
    lib: "valibot",
    schema: () => v.object({ a: v.number(), b: v.optional(v.number(), 2) }),
    json: { type: "object", properties: { a: { type: "number" }, b: { type: "number", default: 2 } }, required: ["a"] },
  },
  {
    lib: "arktype",
    schema: () => type({ a: "number", "b?": "number" }),
    json: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a"] },
  },
]

/** The tool messages of a recorded request, by tool_call_id. */
const toolMessages = (req) => Object.fromEntries(req.json.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]))

/** A Standard Schema of a library toolnexus knows nothing about, with no JSON Schema of its own. */
const foreign = () => ({ "~standard": { version: 1, vendor: "mylib", validate: (value) => ({ value }) } })
const FOREIGN_REFUSAL =
  'tool "strange": its inputSchema is a mylib Standard Schema that cannot be sent as JSON Schema: it offers no Standard JSON Schema (~standard.jsonSchema) and "mylib" has no converter toolnexus knows; pass a JSON Schema object as inputSchema, or a schema from a library that implements Standard JSON Schema'

for (const { lib, schema, json } of LIBRARIES) {
  test(`${lib}: the model receives the library's JSON Schema, and tool.inputSchema is it`, async (t) => {
    const llm = await startLLM([oaText("ok")])
    t.after(() => llm.close())
    const add = defineTool({ name: "add", description: "Add", inputSchema: schema(), run: ({ a, b }) => String(a + b) })
    assert.deepStrictEqual(add.inputSchema, json)
    const tk = await createToolkit({ builtins: false, extraTools: [add] })
    await openai(llm).run("add", { toolkit: tk })
    const sent = llm.requests[0].json.tools
    assert.deepStrictEqual(sent, [{ type: "function", function: { name: "add", description: "Add", parameters: json } }])
    await tk.close()
  })

  test(`${lib}: arguments are validated before run; run gets the parsed value, the model reads the failure`, async (t) => {
    const llm = await startLLM([oaCalls([{ id: "bad", name: "add", args: { a: "one" } }, { id: "good", name: "add", args: { a: 40 } }]), oaText("done")])
    t.after(() => llm.close())
    const seen = []
    const add = defineTool({
      name: "add",
      description: "Add",
      inputSchema: schema(),
      run: (args) => {
        seen.push(args)
        return String(args.a + (args.b ?? 2))
      },
    })
    const tk = await createToolkit({ builtins: false, extraTools: [add] })
    const res = await openai(llm).run("add", { toolkit: tk })
    const msgs = toolMessages(llm.requests[1])
    assert.equal(msgs.good, "42")
    assert.match(msgs.bad, /^Invalid arguments for tool "add": a/)
    assert.equal(res.toolCalls[0].isError, true)
    assert.equal(res.toolCalls[1].isError, false)
    // Only the valid call reached run, with what the schema produced (zod and valibot add b's default).
    assert.deepStrictEqual(seen, [lib === "arktype" ? { a: 40 } : { a: 40, b: 2 }])
    await tk.close()
  })
}

test("the failure text names every failing field path with the library's message", async () => {
  const t = defineTool({
    name: "add",
    description: "Add",
    inputSchema: z.object({ a: z.number(), b: z.number(), tags: z.array(z.string()) }),
    run: () => assert.fail("run must not be called"),
  })
  const r = await t.execute({ a: 1, b: "2", tags: ["x", 3] })
  assert.deepStrictEqual(r, {
    output: 'Invalid arguments for tool "add": b: Invalid input: expected number, received string; tags[1]: Invalid input: expected string, received number',
    isError: true,
  })
  // valibot's path segments are objects carrying `key`.
  const vt = defineTool({ name: "v", description: "d", inputSchema: v.object({ n: v.object({ m: v.number() }) }), run: () => assert.fail("not called") })
  assert.deepStrictEqual(await vt.execute({ n: { m: "x" } }), { output: 'Invalid arguments for tool "v": n.m: Invalid type: Expected number but received "x"', isError: true })
  // arktype's message already begins with the path: it is not repeated.
  const kt = defineTool({ name: "k", description: "d", inputSchema: type({ a: "number" }), run: () => assert.fail("not called") })
  assert.deepStrictEqual(await kt.execute({ a: "x" }), { output: 'Invalid arguments for tool "k": a must be a number (was a string)', isError: true })
})

test("run gets zod's output: defaults and transforms applied", async () => {
  const seen = []
  const t = defineTool({
    name: "greet",
    description: "Greet",
    inputSchema: z.object({ name: z.string().transform((s) => s.toUpperCase()), times: z.number().default(1) }),
    run: (args) => {
      seen.push(args)
      return `${args.name} x${args.times}`
    },
  })
  // The model is shown the input side of the transform (a string).
  assert.deepStrictEqual(t.inputSchema.properties.name, { type: "string" })
  assert.deepStrictEqual(await t.execute({ name: "ada" }), { output: "ADA x1", isError: false })
  assert.deepStrictEqual(seen, [{ name: "ADA", times: 1 }])
})

test("an async validate is awaited: zod's async refinement fails and passes", async (t) => {
  const llm = await startLLM([oaCalls([{ id: "c1", name: "signup", args: { user: "taken" } }, { id: "c2", name: "signup", args: { user: "free" } }]), oaText("done")])
  t.after(() => llm.close())
  const seen = []
  const signup = defineTool({
    name: "signup",
    description: "Sign up",
    inputSchema: z.object({ user: z.string() }).refine(async (x) => { await new Promise((r) => setTimeout(r, 5)); return x.user !== "taken" }, { message: "that name is taken", path: ["user"] }),
    run: ({ user }) => {
      seen.push(user)
      return `welcome ${user}`
    },
  })
  const tk = await createToolkit({ builtins: false, extraTools: [signup] })
  await openai(llm).run("sign up", { toolkit: tk })
  assert.deepStrictEqual(toolMessages(llm.requests[1]), { c1: 'Invalid arguments for tool "signup": user: that name is taken', c2: "welcome free" })
  assert.deepStrictEqual(seen, ["free"])
  await tk.close()
})

test("a schema's own Standard JSON Schema is used, whatever its vendor, and its async validate awaited", async () => {
  const asked = []
  const custom = {
    "~standard": {
      version: 1,
      vendor: "handmade",
      validate: async (value) => (typeof value?.n === "number" ? { value: { n: value.n * 10 } } : { issues: [{ message: "expected a number", path: [{ key: "n" }] }] }),
      jsonSchema: {
        input: (options) => {
          asked.push(options.target)
          return { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { n: { type: "number" } }, required: ["n"] }
        },
      },
    },
  }
  const t = defineTool({ name: "ten", description: "times ten", inputSchema: custom, run: ({ n }) => String(n) })
  assert.deepStrictEqual(t.inputSchema, { type: "object", properties: { n: { type: "number" } }, required: ["n"] }, "$schema is dropped")
  assert.deepStrictEqual(asked, ["draft-2020-12"])
  assert.deepStrictEqual(await t.execute({ n: 4 }), { output: "40", isError: false })
  assert.deepStrictEqual(await t.execute({ n: "4" }), { output: 'Invalid arguments for tool "ten": n: expected a number', isError: true })
})

test("adapters show each library's JSON Schema, also for a hand-made Tool object holding the schema", () => {
  const made = LIBRARIES.map(({ lib, schema }) => defineTool({ name: lib, description: lib, inputSchema: schema(), run: () => "" }))
  const own = { name: "own", description: "own", inputSchema: LIBRARIES[0].schema(), source: "custom", execute: async () => ({ output: "", isError: false }) }
  const tools = [...made, own]
  const expected = [...LIBRARIES.map((l) => l.json), LIBRARIES[0].json]
  assert.deepStrictEqual(toOpenAI(tools).map((d) => d.function.parameters), expected)
  assert.deepStrictEqual(toAnthropic(tools).map((d) => d.input_schema), expected)
  assert.deepStrictEqual(toGemini(tools)[0].functionDeclarations.map((d) => d.parameters), expected)
  assert.equal(toOpenAI(made)[0].function.parameters, made[0].inputSchema, "a defineTool schema is handed out as the tool's own object")
})

test("toolkit adapters and an MCP client listing a served toolkit see the JSON Schema", async (t) => {
  const tools = LIBRARIES.map(({ lib, schema }) => defineTool({ name: lib, description: lib, inputSchema: schema(), run: ({ a }) => `a=${a}` }))
  const tk = await createToolkit({ builtins: false, extraTools: tools })
  t.after(() => tk.close())
  assert.deepStrictEqual(tk.toOpenAI().map((d) => d.function.parameters), LIBRARIES.map((l) => l.json))
  const srv = await tk.serve("127.0.0.1:0", { mcp: { name: "schemas", version: "1.0.0" } })
  t.after(() => srv.stop())
  const client = new McpClient({ name: "schema-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  try {
    const { tools: listed } = await client.listTools()
    assert.deepStrictEqual(listed.map((x) => [x.name, x.inputSchema]), LIBRARIES.map((l) => [l.lib, l.json]))
    const bad = await client.callTool({ name: "zod", arguments: { a: "x" } })
    assert.equal(bad.isError, true)
    assert.equal(bad.content[0].text, 'Invalid arguments for tool "zod": a: Invalid input: expected number, received string')
    const good = await client.callTool({ name: "valibot", arguments: { a: 7 } })
    assert.deepStrictEqual(good.content, [{ type: "text", text: "a=7" }])
  } finally {
    await client.close()
  }
})

/** console.warn's lines while `fn` runs. */
async function warnings(t, fn) {
  const said = []
  const mock = t.mock.method(console, "warn", (...args) => void said.push(args.join(" ")))
  try {
    await fn()
  } finally {
    mock.mock.restore()
  }
  return said
}

const EMPTY = { type: "object", properties: {}, additionalProperties: false }
const DECLARED_EMPTY = `[toolnexus] ${FOREIGN_REFUSAL} (declared as an empty object schema)`

test("a Standard Schema with no JSON Schema: defineTool accepts it; the run, the stream and translate refuse it before any request", async (t) => {
  const llm = await startLLM([oaText("never")])
  t.after(() => llm.close())
  const strange = defineTool({ name: "strange", description: "d", inputSchema: foreign(), run: () => "ran" })
  assert.equal(strange.inputSchema["~standard"].vendor, "mylib", "kept as given, as the reference keeps it")
  const tk = await createToolkit({ builtins: false, extraTools: [strange] })
  t.after(() => tk.close())
  const c = openai(llm)
  await assert.rejects(c.run("go", { toolkit: tk }), { name: "TypeError", message: FOREIGN_REFUSAL })
  await assert.rejects(c.ask("go", { toolkit: tk, id: "conv" }), { name: "TypeError", message: FOREIGN_REFUSAL })
  await assert.rejects(async () => {
    for await (const ev of c.stream("go", { toolkit: tk })) void ev
  }, { name: "TypeError", message: FOREIGN_REFUSAL })
  await assert.rejects(c.translate({ messages: [{ role: "user", content: "go" }], toolkit: tk }), { name: "TypeError", message: FOREIGN_REFUSAL })
  assert.equal(llm.requests.length, 0, "nothing was sent")
  // Called directly, the tool still runs (its validate passes everything).
  assert.deepStrictEqual(await strange.execute({}), { output: "ran", isError: false })
})

test("a Standard Schema with no JSON Schema: adapters and MCP serving go on with the empty object schema and warn once", async (t) => {
  const strange = defineTool({ name: "strange", description: "d", inputSchema: foreign(), run: () => "ran" })
  const tk = await createToolkit({ builtins: false, extraTools: [strange] })
  t.after(() => tk.close())
  const said = await warnings(t, async () => {
    for (let i = 0; i < 2; i++) {
      assert.deepStrictEqual(toOpenAI([strange])[0].function.parameters, EMPTY)
      assert.deepStrictEqual(toAnthropic([strange])[0].input_schema, EMPTY)
      assert.deepStrictEqual(toGemini([strange])[0].functionDeclarations[0].parameters, EMPTY)
      assert.deepStrictEqual(tk.toOpenAI()[0].function.parameters, EMPTY)
    }
  })
  assert.deepStrictEqual(said, [DECLARED_EMPTY], "said once for the schema, however often it is adapted")

  // Served over MCP: listed with the empty object schema (never the schema's internals), still callable.
  const other = defineTool({ name: "strange", description: "d", inputSchema: foreign(), run: () => "ran" })
  const tk2 = await createToolkit({ builtins: false, extraTools: [other] })
  t.after(() => tk2.close())
  let srv
  const served = await warnings(t, async () => {
    srv = await tk2.serve("127.0.0.1:0", { mcp: { name: "s", version: "1.0.0" } })
  })
  t.after(() => srv.stop())
  assert.deepStrictEqual(served, [DECLARED_EMPTY])
  const client = new McpClient({ name: "schema-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + "/mcp")))
  try {
    const { tools: listed } = await client.listTools()
    assert.deepStrictEqual(listed.map((x) => [x.name, x.inputSchema]), [["strange", EMPTY]])
    const out = await client.callTool({ name: "strange", arguments: {} })
    assert.deepStrictEqual(out.content, [{ type: "text", text: "ran" }])
  } finally {
    await client.close()
  }

  // buildMcpServer and startA2AServer's mcpTools: built, with the same warning (for a schema not yet told).
  const third = defineTool({ name: "strange", description: "d", inputSchema: foreign(), run: () => "ran" })
  const built = await warnings(t, () => void buildMcpServer([third]))
  assert.deepStrictEqual(built, [DECLARED_EMPTY])
  const fourth = defineTool({ name: "strange", description: "d", inputSchema: foreign(), run: () => "ran" })
  let a2a
  const started = await warnings(t, async () => {
    a2a = await startA2AServer({ addr: "127.0.0.1:0", runTask: () => ({ status: "done", text: "" }), mcp: true, mcpTools: [fourth] })
  })
  t.after(() => a2a.stop())
  assert.deepStrictEqual(started, [DECLARED_EMPTY])
  // Not exposed by the profile: nothing to say.
  const fifth = defineTool({ name: "strange", description: "d", inputSchema: foreign(), run: () => "ran" })
  const tk3 = await createToolkit({ builtins: false, extraTools: [fifth] })
  t.after(() => tk3.close())
  const quiet = await warnings(t, async () => {
    const s = await tk3.serve("127.0.0.1:0", { mcp: { tools: ["other"] } })
    await s.stop()
  })
  assert.deepStrictEqual(quiet, [])
})

test("a zod schema its converter cannot express is refused with the converter's words", async (t) => {
  const when = defineTool({ name: "when", description: "d", inputSchema: z.object({ at: z.date() }), run: () => "" })
  assert.ok(typeof when.inputSchema["~standard"] === "object", "defineTool did not throw and kept the schema")
  const said = await warnings(t, () => assert.deepStrictEqual(toOpenAI([when])[0].function.parameters, EMPTY))
  assert.equal(said.length, 1)
  assert.ok(said[0].startsWith('[toolnexus] tool "when": its inputSchema is a zod Standard Schema that cannot be sent as JSON Schema: ') && /Date/.test(said[0]), said[0])
})

test("valibot without @valibot/to-json-schema installed: the refusal says what to install", async (t) => {
  // lib/schema.js copied where neither it nor the working directory can resolve the converter.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-novalibot-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.copyFileSync(path.join(REPO, "lib", "schema.js"), path.join(dir, "schema.js"))
  const valibot = pathToFileURL(path.join(REPO, "node_modules", "valibot", "dist", "index.mjs")).href
  const source = `
    const v = await import(${JSON.stringify(valibot)})
    const { schemaRefusal, declaredSchema } = require("./schema.js")
    const s = v.object({ a: v.number() })
    console.log(JSON.stringify([declaredSchema(s) === undefined, schemaRefusal("add", s)?.message]))
  `
  const out = await new Promise((resolve) => {
    const child = spawn(process.execPath, ["--input-type=commonjs", "-e", `(async () => { ${source} })()`], { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let text = ""
    child.stdout.on("data", (d) => (text += d))
    child.stderr.on("data", (d) => (text += d))
    child.on("close", () => resolve(text))
  })
  assert.deepStrictEqual(JSON.parse(out), [
    true,
    'tool "add": its inputSchema is a valibot Standard Schema that cannot be sent as JSON Schema: valibot converts to JSON Schema through @valibot/to-json-schema, which is not installed; install it (npm install @valibot/to-json-schema), or pass a JSON Schema object as inputSchema',
  ])
})

test("the tool decorator and httpTool take a Standard Schema too", async (t) => {
  const calc = { mul: tool("Multiply", { inputSchema: z.object({ x: z.number(), y: z.number().default(3) }) })(function mul({ x, y }) { return String(x * y) }) }
  const [mul] = collectTools(calc)
  assert.deepStrictEqual(mul.inputSchema, { type: "object", properties: { x: { type: "number" }, y: { default: 3, type: "number" } }, required: ["x"] })
  assert.deepStrictEqual(await mul.execute({ x: 2 }), { output: "6", isError: false })
  assert.match((await mul.execute({ x: "2" })).output, /^Invalid arguments for tool "mul": x: /)

  const seen = []
  const server = http.createServer((req, res) => {
    seen.push(req.url)
    res.end("found")
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  t.after(() => new Promise((r) => server.close(r)))
  const base = `http://127.0.0.1:${server.address().port}`
  const lookup = httpTool({ name: "lookup", description: "Look up", method: "GET", url: `${base}/items/{id}`, inputSchema: z.object({ id: z.string().trim(), page: z.number().default(1) }) })
  assert.deepStrictEqual(lookup.inputSchema, { type: "object", properties: { id: { type: "string" }, page: { default: 1, type: "number" } }, required: ["id"] })
  assert.deepStrictEqual(await lookup.execute({ id: 5 }), { output: 'Invalid arguments for tool "lookup": id: Invalid input: expected string, received number', isError: true })
  assert.deepStrictEqual(seen, [], "no request for invalid arguments")
  const ok = await lookup.execute({ id: "  abc " })
  assert.deepStrictEqual(ok, { output: "found", isError: false, metadata: { status: 200 } })
  assert.deepStrictEqual(seen, ["/items/abc?page=1"], "the request is made of the validated value")
  // Through a toolkit, the model is shown the same schema.
  assert.deepStrictEqual(toOpenAI([lookup])[0].function.parameters, lookup.inputSchema)
})

test("JSON Schema tools are unchanged: the schema object itself, no validation", async () => {
  const schema = { type: "object", properties: { a: { type: "number" } }, required: ["a"] }
  const seen = []
  const t = defineTool({ name: "j", description: "d", inputSchema: schema, run: (args) => { seen.push(args); return "ok" } })
  assert.equal(t.inputSchema, schema)
  assert.equal(toOpenAI([t])[0].function.parameters, schema)
  assert.deepStrictEqual(await t.execute({ a: "not a number" }), { output: "ok", isError: false })
  assert.deepStrictEqual(seen, [{ a: "not a number" }])
  const lookup = httpTool({ name: "h", description: "d", method: "GET", url: "http://127.0.0.1:1/", inputSchema: schema })
  assert.equal(lookup.inputSchema, schema)
})

test("tsc --strict: run's argument is each library's output type; wrong uses fail to compile", { timeout: 240_000 }, async () => {
  const dir = path.join(REPO, "__test__", "types")
  const good = ["zod-tool.mts", "valibot-tool.mts", "arktype-tool.mts", "json-schema-tool.mts"]
  for (const f of [...good, "wrong-uses.mts"]) assert.ok(fs.existsSync(path.join(dir, f)), f)
  const tsc = path.join(REPO, "node_modules", ".bin", "tsc")
  const args = ["--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom", "--types", "node", ...good, "wrong-uses.mts"]
  const out = await new Promise((resolve) => {
    const child = spawn(tsc, args, { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let text = ""
    child.stdout.on("data", (d) => (text += d))
    child.stderr.on("data", (d) => (text += d))
    child.on("close", () => resolve(text))
  })
  const errors = out.split("\n").filter((l) => /error TS\d+/.test(l))
  // The typed files compile (their @ts-expect-error lines would fail if a wrong use compiled);
  // every line of wrong-uses.mts fails, for the reason it was written for.
  assert.deepStrictEqual(
    errors.map((l) => l.replace(/\(\d+,\d+\)/, (m) => m.split(",")[0] + ")")),
    [
      "wrong-uses.mts(7): error TS2339: Property 'toUpperCase' does not exist on type 'number'.",
      "wrong-uses.mts(8): error TS2339: Property 'toUpperCase' does not exist on type 'number'.",
      "wrong-uses.mts(9): error TS2339: Property 'toUpperCase' does not exist on type 'number'.",
      "wrong-uses.mts(10): error TS2339: Property 'c' does not exist on type '{ a: number; }'.",
    ],
    out,
  )
})

test("an agent runtime definition's tools: a zod schema is sent converted; one with no JSON Schema is warned about and sent as the empty object schema", async (t) => {
  const { AgentRuntime } = agents
  const bodies = []
  const fetch = async (_url, init) => {
    bodies.push(JSON.parse(init.body))
    return reply({ content: "done" }, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })
  }
  const warned = []
  const warn = console.warn
  console.warn = (...a) => warned.push(a.join(" "))
  t.after(() => (console.warn = warn))
  const add = defineTool({ name: "add", description: "Add", inputSchema: LIBRARIES[0].schema(), run: ({ a, b }) => String(a + b) })
  const strange = defineTool({ name: "strange", description: "d", inputSchema: foreign(), run: () => "ran" })
  const rt = new AgentRuntime({ fetch, clock: new VirtualClock(), registry: { worker: { name: "worker", does: "adds", model: "m", tools: [add, strange] } } })
  console.warn = warn
  assert.deepStrictEqual(warned, [`[toolnexus] ${FOREIGN_REFUSAL} (declared as an empty object schema)`])
  const h = rt.spawn(rt.root, "worker")
  rt.wake(h, "add")
  const r = await rt.wait(h)
  assert.equal(r.status, "done", JSON.stringify(r))
  const params = Object.fromEntries(bodies[0].tools.map((d) => [d.function.name, d.function.parameters]))
  assert.deepStrictEqual(params.add, LIBRARIES[0].json)
  assert.deepStrictEqual(params.strange, { type: "object", properties: {}, additionalProperties: false })
  await rt.close(rt.root)
})
