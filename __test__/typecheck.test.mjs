// The published declarations type-check a strict TypeScript consumer.
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { REPO, cleanEnv } from "./support/llm.mjs"

const TSC = path.join(REPO, "node_modules", ".bin", "tsc")
const TYPES = path.join(REPO, "node_modules", "@types")

const CONSUMER = `
import {
  createClient, createToolkit, defineTool, pending, pendingOf, authRequired, sanitize, toOpenAI,
  type Tool, type ToolResult, type Request, type Answer, type ToolContext, type RunResult,
  type Hooks, type ClientOptions, type Toolkit, type BuiltinsConfig,
  createBuiltinTools, selectBuiltins, builtinsEnabled,
} from "toolnexus"

const inventory: Tool = {
  name: sanitize("stock level"),
  description: "Units in stock for a SKU",
  inputSchema: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
  source: "custom",
  async execute(args: Record<string, unknown>, ctx?: ToolContext): Promise<ToolResult> {
    if (ctx?.signal?.aborted) return { output: "cancelled", isError: true }
    const budget: number | undefined = ctx?.timeout
    return { output: String(args.sku) + ":" + String(budget ?? 0), isError: false, metadata: { cached: false } }
  },
}

const approve = defineTool({
  name: "approve_refund",
  description: "Refund after a human approves",
  run: (args, ctx) => {
    const answer: Answer | undefined = ctx?.answer
    if (!answer) return pending({ kind: "approval", prompt: "Refund " + String(args.amount) + "?", data: { amount: args.amount } })
    return answer.ok ? "refunded" : "declined: " + (answer.reason ?? "no reason")
  },
})

const waitFor = async (request: Request): Promise<Answer> => {
  const kind: string = request.kind
  const url: string | undefined = request.url
  return { id: request.id, ok: kind === "approval" && url === undefined, data: { who: "ops" } }
}

const hooks: Hooks = {
  beforeLLM: ({ messages, tools, turn }) => (turn === 0 ? { messages, tools } : undefined),
  afterLLM: async ({ response, model }) => { void response; void model },
  beforeTool: ({ name, args }) => (name === "danger" ? { result: { output: "blocked", isError: true } } : { args }),
  afterTool: ({ result }) => ({ result: { ...result, output: result.output.trim() } }),
  duringTool: (ev) => {
    const where: string = ev.name + String(ev.turn)
    if (ev.type === "progress") void (ev.progress + (ev.total ?? 0) + where + (ev.message ?? ""))
    else void (ev.level === "warning" ? ev.data : ev.logger)
  },
}

const options: ClientOptions = {
  baseUrl: "http://127.0.0.1:1/v1",
  style: "openai",
  model: "some-model",
  apiKey: "k",
  headers: { "X-Team": "a" },
  maxTurns: 4,
  retries: 1,
  retryBaseMs: 10,
  timeoutMs: 1000,
  hooks,
  waitFor,
  logger: console,
  onMetric: (ev) => {
    if (ev.event === "tool_progress") void (ev.tool + ev.progress)
    if (ev.event === "tool_log") void (ev.source + ev.level)
    if (ev.event === "llm") void ((ev.attempts ?? 1) + (ev.fallback ?? 0))
  },
}

export async function main(): Promise<string> {
  const toolkit: Toolkit = await createToolkit({ extraTools: [inventory, approve], builtins: false, disableTools: ["x"], logger: { warn: (message: string) => void message } })
  const client = createClient(options)
  const result: RunResult = await client.run("refund 5", { toolkit, signal: new AbortController().signal, history: [] })
  const status: "done" | "pending" | "incomplete" = result.status
  const parked: Request | undefined = result.pending
  const first = result.toolCalls[0]
  const req = first ? pendingOf({ output: first.output, isError: first.isError, metadata: first.metadata }) : undefined
  const login: ToolResult = authRequired("https://sso.example/login")
  const schema = toOpenAI(toolkit.tools())[0]?.function.parameters
  await toolkit.close()
  return [status, parked?.id, req?.prompt, login.output, schema?.type, result.usage.totalTokens.toFixed(0)].join("|")
}

const builtinsCfg: BuiltinsConfig = { enabled: true, tools: { bash: false } }
const fileTools: Tool[] = selectBuiltins(builtinsCfg).concat(createBuiltinTools().filter((t) => t.name === "read"))
const builtinsOn: boolean = builtinsEnabled(undefined) && builtinsEnabled(false) === false
void fileTools; void builtinsOn

// The declarations must actually constrain callers:
// @ts-expect-error - a Tool needs execute
const broken: Tool = { name: "x", description: "", inputSchema: { type: "object" }, source: "custom" }
// @ts-expect-error - style is "openai" | "anthropic"
const badStyle: ClientOptions = { baseUrl: "u", style: "gemini", model: "m" }
// @ts-expect-error - an Answer needs ok
const badAnswer: Answer = { id: "x" }
// @ts-expect-error - pending needs a kind
pending({ prompt: "p" })
// @ts-expect-error - a builtins config is a boolean or an object
selectBuiltins("all")
void broken; void badStyle; void badAnswer
`

test("a strict TypeScript consumer type-checks against index.d.ts", { skip: fs.existsSync(TSC) ? false : `tsc not installed at ${TSC}`, timeout: 55_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-tsc-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, "node_modules"))
  fs.symlinkSync(REPO, path.join(dir, "node_modules", "toolnexus"), "dir")
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
  fs.writeFileSync(path.join(dir, "consumer.ts"), CONSUMER)
  const args = ["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom"]
  if (fs.existsSync(path.join(TYPES, "node"))) args.push("--typeRoots", TYPES, "--types", "node")
  args.push("consumer.ts")
  const r = await new Promise((resolve) => {
    const child = spawn(TSC, args, { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (out += d))
    child.on("close", (code) => resolve({ code, out }))
  })
  assert.equal(r.code, 0, r.out)
  assert.equal(r.out.trim(), "")
})
