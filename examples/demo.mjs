// The toolnexus demo: an agent with a tool that needs a human's approval, run against a
// scripted OpenAI-style endpoint started right here (no API key, no network).
//
//   npm run demo
//
// Run 1 resolves the approval in-process through `waitFor`; run 2 has no `waitFor`, so the
// run parks durably with status "pending" and hands back the Request to deliver elsewhere.
// Run 3 parks an agent's approval in an embedded SQLite file, and a second process (this file
// again, with --resume) opens the same file and finishes it.

import { spawn } from "node:child_process"
import fs from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { agents, createClient, createToolkit, defineTool, pending, pendingOf } from "toolnexus"

// ---- a scripted model: asks for a refund, then summarises what the tool said ----
function scriptedModel() {
  const server = http.createServer((req, res) => {
    let raw = ""
    req.on("data", (chunk) => (raw += chunk))
    req.on("end", () => {
      const body = JSON.parse(raw)
      const toolMessage = body.messages.findLast((m) => m.role === "tool")
      const message = toolMessage
        ? { role: "assistant", content: `Done: ${toolMessage.content}` }
        : {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "refund", arguments: '{"order":"A-1042","amount":120}' } },
            ],
          }
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ choices: [{ message }], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } }))
    })
  })
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)))
}

// ---- a tool that parks the run until someone approves ----
const refund = defineTool({
  name: "refund",
  description: "Refund an order. Needs a human's approval first.",
  inputSchema: {
    type: "object",
    properties: { order: { type: "string" }, amount: { type: "number" } },
    required: ["order", "amount"],
  },
  run: ({ order, amount }, ctx) => {
    if (!ctx?.answer) return pending({ kind: "approval", prompt: `Refund $${amount} on ${order}?`, data: { order, amount } })
    return `refunded $${amount} on ${order} (approved by ${ctx.answer.data?.by ?? "someone"})`
  },
})

// The refund agent of run 3, defined the same way in both processes.
const refundAgent = agents.agent("refunds", { does: "Refunds orders after a human approves", uses: { tools: [refund] } })
const runtimeOptions = (baseUrl, db) => ({
  llm: { baseUrl, style: "openai", model: "scripted", apiKey: "not-needed" },
  store: `sqlite:${db}`,
})

// The first process of run 3: park the run in the SQLite file and exit.
if (process.argv[2] === "--park") {
  const [, , , baseUrl, db] = process.argv
  const third = await refundAgent.run("Please refund order A-1042.", runtimeOptions(baseUrl, db))
  console.log(`run 3: status=${third.status}, parked in ${path.basename(db)} by process ${process.pid}: "${third.pending.prompt}"`)
  fs.writeFileSync(`${db}.request`, third.pending.id)
  process.exit(0)
}

// The second process of run 3: open the SQLite file, approve, finish the run.
if (process.argv[2] === "--resume") {
  const [, , , baseUrl, db, requestId] = process.argv
  const runtime = refundAgent.createRuntime(runtimeOptions(baseUrl, db))
  const [parked] = runtime.list()
  console.log(`  process ${process.pid}: found ${parked.id} ${parked.state} in ${path.basename(db)}`)
  await runtime.resume({ id: requestId, ok: true, data: { by: `process ${process.pid}` } })
  const done = await runtime.wait(runtime.root.children[0])
  console.log(`  process ${process.pid}: status=${done.status} answer: ${done.text}`)
  await runtime.close(runtime.root)
  process.exit(0)
}

const server = await scriptedModel()
const baseUrl = `http://127.0.0.1:${server.address().port}`
const toolkit = await createToolkit({ builtins: false, extraTools: [refund] })

console.log("toolnexus demo — tools:", toolkit.tools().map((t) => t.name).join(", "))

// Run 1: the host resolves the suspension in-process.
const approving = createClient({
  baseUrl,
  style: "openai",
  model: "scripted",
  apiKey: "not-needed",
  waitFor: async (request) => {
    console.log(`  waitFor <- ${request.kind}: ${request.prompt}  (auto-approving)`)
    return { id: request.id, ok: true, data: { by: "demo-operator" } }
  },
  hooks: {
    beforeTool: ({ name, args }) => console.log(`  tool call -> ${name} ${JSON.stringify(args)}`),
  },
})
const first = await approving.run("Please refund order A-1042.", { toolkit })
console.log(`run 1: status=${first.status} turns=${first.turns} tokens=${first.usage.totalTokens}`)
console.log(`  answer: ${first.text}`)

// Run 2: no waitFor — a durable halt.
const durable = createClient({ baseUrl, style: "openai", model: "scripted", apiKey: "not-needed" })
const second = await durable.run("Please refund order A-1042.", { toolkit })
console.log(`run 2: status=${second.status}`)
console.log(`  parked on: ${second.pending.kind} "${second.pending.prompt}" (id ${second.pending.id})`)
console.log(`  toolCalls[0] carries metadata.pending? ${pendingOf(second.toolCalls[0]) !== undefined}`)

// Run 3: the approval outlives the process that asked for it. One process parks the run in a
// SQLite file and exits; another opens the file, approves and finishes it.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-demo-"))
const db = path.join(dir, "agents.db")
const child = (...args) => {
  const p = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], { stdio: "inherit" })
  return new Promise((resolve) => p.once("exit", resolve))
}
let code = await child("--park", baseUrl, db)
if (code === 0) code = await child("--resume", baseUrl, db, fs.readFileSync(`${db}.request`, "utf8"))
fs.rmSync(dir, { recursive: true, force: true })

await toolkit.close()
server.close()
if (code !== 0) process.exit(code ?? 1)
