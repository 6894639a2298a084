// The durable stores benchmark (issue 26): `npm run bench:stores` from the repository root, or
// `node bench/stores.mjs`.
//
// What a durable conversation store costs under `client.ask`, and what the A2A task stores cost
// per task, next to LangGraph's checkpointers doing the same load + save work.
//   - ask        one `client.ask(prompt, { toolkit, id })` per turn against a scripted
//                OpenAI-style endpoint (its own process, this file run as `stores.mjs llm`).
//                A turn loads the conversation from the store, makes one LLM round trip and
//                saves the grown conversation. Stores: memory (no `store` option), `sqlite:<file>`,
//                PostgreSQL (TOOLNEXUS_TEST_POSTGRES) and Redis (TOOLNEXUS_TEST_REDIS); an engine
//                whose variable is unset is reported skipped. The store's cost is the p50 of its
//                turns minus the p50 of memory's turns in the same round.
//   - langgraph  LangGraph's checkpointers (MemorySaver, SqliteSaver, PostgresSaver) doing a
//                turn's store work alone: one `getTuple` (load) and one `put` of a checkpoint whose
//                `messages` channel holds the conversation, grown by the same two messages per turn.
//                No LLM call here, so these figures are store time, comparable with our "adds".
//   - tasks      `resolveStore(selector)` A2A task stores (memory, file:<dir>, sqlite, PostgreSQL,
//                Redis): one `save(task)` then one `get(id)` per task, tasks/s.
// Each is measured at 1, 16 and 64 concurrent clients (each client its own conversation id /
// thread / task ids, doing its turns one after another). Each store runs in its own fresh process
// (this file run as `stores.mjs worker`) after a warm-up, one at a time; the order rotates per
// round. Every ask turn checks the model saw the whole conversation so far (the endpoint answers
// with the number of messages it got), every LangGraph load checks the checkpoint's length, and
// every task get checks the id, so a store that loses data fails instead of looking fast.
// Cold start: the addon's file size, the time to require index.js in a fresh process, and the
// first `ask` in a fresh process per store (the first use of a store URL opens its engine).
// Writes stores-results.json and stores-results.md into bench/ (or BENCH_OUT). Nothing here
// asserts a figure.

import { spawn, spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { summarize } from "./lib/stats.mjs"
import { machine, stopChild } from "./lib/proc.mjs"
import { firstJsonLine, workerResult } from "./lib/orchestrator.mjs"

const BENCH = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.dirname(BENCH)
const ENTRY = path.join(ROOT, "index.js")
const require = createRequire(path.join(BENCH, "package.json"))

function num(name, fallback) {
  const raw = process.env[`BENCH_${name}`] ?? process.env[name]
  if (raw === undefined || raw === "") return fallback
  const v = Number(raw)
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name}=${raw} is not a number >= 0`)
  return Math.floor(v)
}

const list = (name, fallback) =>
  (process.env[`BENCH_${name}`] ?? fallback)
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)

const config = {
  rounds: Math.max(1, num("ROUNDS", 2)),
  concurrency: list("CONCURRENCY", "1,16,64").map(Number).filter((n) => n > 0),
  // Ask / LangGraph turns per client: TURNS, but at most TURNS_TOTAL / clients, so a cell of 64
  // clients does not take 64 times as long. Each cell's turns per client are in the report.
  turns: Math.max(1, num("TURNS", 50)),
  turnsTotal: Math.max(1, num("TURNS_TOTAL", 640)),
  // Tasks per writer, capped the same way.
  tasks: Math.max(1, num("TASKS", 300)),
  tasksTotal: Math.max(1, num("TASKS_TOTAL", 1920)),
  warmup: num("WARMUP", 10), // turns / tasks per worker before timing
  msgChars: Math.max(1, num("MSG_CHARS", 200)), // the filler in each prompt and each reply
  coldRuns: num("COLD_RUNS", 10),
  workerTimeoutS: num("WORKER_TIMEOUT_S", 300),
  pauseMs: num("PAUSE_MS", 200),
  suites: list("SUITES", "ask,langgraph,tasks,cold"),
  stores: list("STORES", "memory,file,sqlite,postgres,redis"),
}
const outDir = path.resolve(process.env.BENCH_OUT ?? BENCH)
const log = (...a) => console.error("[bench:stores]", ...a)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// ---------------------------------------------------------------------------------------------
// The conversation every turn adds to, and the scripted endpoint's answers

const FILLER = "lorem ipsum dolor sit amet, ".repeat(Math.ceil(config.msgChars / 28)).slice(0, config.msgChars)
const prompt = (turn) => `turn ${turn}: ${FILLER}`
// The endpoint answers with the number of messages it was sent: a turn whose store lost the
// earlier turns gets a different text.
const reply = (messages) => `seen ${messages}: ${FILLER}`

/** `stores.mjs llm`: the scripted endpoint. Prints {"listening":PORT}; ends when stdin closes. */
function serveEndpoint() {
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      let count
      try {
        count = JSON.parse(Buffer.concat(chunks).toString("utf8")).messages.length
      } catch {
        res.writeHead(400, { "content-type": "application/json" })
        return res.end(JSON.stringify({ error: { message: "not a chat completions request" } }))
      }
      const body = JSON.stringify({
        id: "chatcmpl-stores",
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: reply(count) }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      })
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      res.end(body)
    })
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ listening: server.address().port })))
  process.stdin.resume()
  process.stdin.on("end", () => process.exit(0))
}

// ---------------------------------------------------------------------------------------------
// Workers: one store, every concurrency, in a fresh process

const now = () => performance.now()

/** Nearest-rank percentile of an ascending list. */
function pct(sorted, p) {
  if (!sorted.length) return null
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
}

/**
 * Run `lanes` clients at once, each doing `perLane` operations in order; `op(lane, i)` is one
 * timed operation. Returns the cell's latency percentiles, throughput and CPU per operation.
 */
async function cell(lanes, perLane, op) {
  const times = []
  const cpu0 = process.cpuUsage()
  const t0 = now()
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let i = 0; i < perLane; i++) {
        const s = now()
        await op(lane, i)
        times.push(now() - s)
      }
    }),
  )
  const wallMs = now() - t0
  const cpu = process.cpuUsage(cpu0)
  times.sort((a, b) => a - b)
  return {
    clients: lanes,
    perClient: perLane,
    ops: times.length,
    p50: pct(times, 50),
    p95: pct(times, 95),
    p99: pct(times, 99),
    mean: times.reduce((a, b) => a + b, 0) / times.length,
    perSec: (times.length / wallMs) * 1000,
    cpuMsPerOp: (cpu.user + cpu.system) / 1000 / times.length,
    wallMs,
  }
}

/** ask: `client.ask` turns on one store (`job.url`, undefined = memory). */
async function askWorker(job) {
  const tn = require(ENTRY)
  const toolkit = await tn.createToolkit({})
  const newClient = () => tn.createClient({ baseUrl: job.baseUrl, style: "openai", model: "m", apiKey: "k", store: job.url })
  const turn = async (client, id, i) => {
    const r = await client.ask(prompt(i), { toolkit, id })
    // Turn i sends i earlier exchanges (2 messages each) and the new prompt.
    if (r.text !== reply(2 * i + 1)) throw new Error(`conversation ${id} turn ${i}: the model saw ${String(r.text).split(":")[0]}, expected ${2 * i + 1} messages`)
  }
  const warm = newClient()
  for (let i = 0; i < job.warmup; i++) await turn(warm, `${job.prefix}-warm`, i)
  const cells = []
  for (const { clients, perClient } of job.plan) {
    const lanes = Array.from({ length: clients }, (_, l) => ({ client: newClient(), id: `${job.prefix}-c${clients}-${l}` }))
    cells.push(await cell(clients, perClient, (l, i) => turn(lanes[l].client, lanes[l].id, i)))
  }
  return { cells }
}

/** The LangGraph checkpointer of `job.store`, or { unavailable } when its package will not load. */
async function openSaver(job) {
  const pkg = { memory: "@langchain/langgraph-checkpoint", sqlite: "@langchain/langgraph-checkpoint-sqlite", postgres: "@langchain/langgraph-checkpoint-postgres" }[job.store]
  let mod
  try {
    mod = await import(pkg)
  } catch (e) {
    return { unavailable: `not installable: ${pkg} does not load (${firstLine(e)}); run npm install in bench/` }
  }
  if (job.store === "memory") return { saver: new mod.MemorySaver(), close: async () => {} }
  if (job.store === "sqlite") {
    let saver
    try {
      // better-sqlite3's native binding is loaded here, on the first database.
      saver = mod.SqliteSaver.fromConnString(job.file)
    } catch (e) {
      return { unavailable: `not installable: better-sqlite3 (under ${pkg}) does not load (${firstLine(e)})` }
    }
    return { saver, close: async () => saver.db.close() }
  }
  // Its own schema, so its tables stay apart from anything else in that database.
  const saver = mod.PostgresSaver.fromConnString(job.url, { schema: "toolnexus_bench_langgraph" })
  await saver.setup()
  return { saver, close: () => saver.end() }
}

/** langgraph: per turn one getTuple + one put of a checkpoint holding the whole conversation. */
async function langgraphWorker(job) {
  const opened = await openSaver(job)
  if (opened.unavailable) return opened
  const { saver } = opened
  const { uuid6 } = await import("@langchain/langgraph-checkpoint")
  const user = (i) => ({ role: "user", content: prompt(i) })
  const assistant = (i) => ({ role: "assistant", content: reply(2 * i + 1) })
  const turn = async (thread, i) => {
    const base = { configurable: { thread_id: thread, checkpoint_ns: "" } }
    const tuple = await saver.getTuple(base)
    const before = tuple?.checkpoint.channel_values.messages ?? []
    if (before.length !== 2 * i) throw new Error(`thread ${thread} turn ${i}: loaded ${before.length} messages, expected ${2 * i}`)
    const version = saver.getNextVersion(tuple?.checkpoint.channel_versions.messages)
    const checkpoint = {
      v: 4,
      id: uuid6(i),
      ts: new Date().toISOString(),
      channel_values: { messages: [...before, user(i), assistant(i)] },
      channel_versions: { messages: version },
      versions_seen: {},
    }
    await saver.put(tuple?.config ?? base, checkpoint, { source: "loop", step: i, parents: {} }, { messages: version })
  }
  try {
    for (let i = 0; i < job.warmup; i++) await turn(`${job.prefix}-warm`, i)
    const cells = []
    for (const { clients, perClient } of job.plan) cells.push(await cell(clients, perClient, (l, i) => turn(`${job.prefix}-c${clients}-${l}`, i)))
    return { cells }
  } finally {
    await opened.close()
  }
}

/** tasks: one save + one get per task on `resolveStore(job.selector)`. */
async function tasksWorker(job) {
  const store = require(ENTRY).resolveStore(job.selector)
  // A finished A2A Task with one message in its history and one text artifact.
  const task = (id) => ({
    kind: "task",
    id,
    contextId: `${id}-ctx`,
    status: { state: "completed", timestamp: new Date().toISOString() },
    history: [{ kind: "message", role: "user", messageId: `${id}-m`, parts: [{ kind: "text", text: prompt(0) }] }],
    artifacts: [{ artifactId: `${id}-a`, parts: [{ kind: "text", text: reply(1) }] }],
  })
  const op = async (id) => {
    await store.save(task(id))
    const got = await store.get(id)
    if (got?.id !== id || got.artifacts?.[0]?.parts?.[0]?.text !== reply(1)) throw new Error(`task ${id}: get answered ${JSON.stringify(got)?.slice(0, 200)}`)
  }
  for (let i = 0; i < job.warmup; i++) await op(`${job.prefix}-warm-${i}`)
  const cells = []
  for (const { clients, perClient } of job.plan) cells.push(await cell(clients, perClient, (l, i) => op(`${job.prefix}-c${clients}-${l}-${i}`)))
  return { cells }
}

const firstLine = (e) => String(e?.message ?? e).split("\n")[0]

/** `stores.mjs worker`: runs the job in BENCH_JOB, prints one BENCH_RESULT line, exits. */
async function worker() {
  const job = JSON.parse(process.env.BENCH_JOB)
  let result
  try {
    const run = { ask: askWorker, langgraph: langgraphWorker, tasks: tasksWorker }[job.suite]
    result = { ok: true, ...(await run(job)) }
    if (result.unavailable) result.ok = false
  } catch (e) {
    result = { ok: false, error: firstLine(e) }
  }
  console.log("BENCH_RESULT " + JSON.stringify(result))
  process.exit(0) // pools and engine connections need not wind down
}

// ---------------------------------------------------------------------------------------------
// The orchestrator: processes

/** Start this file as the scripted endpoint; resolves { child, port }. */
async function startEndpoint() {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "llm"], {
    cwd: BENCH,
    env: { ...process.env, BENCH_MSG_CHARS: String(config.msgChars) },
    stdio: ["pipe", "pipe", "inherit"],
  })
  const info = await firstJsonLine(child, (code) => new Error(`the endpoint exited with ${code} before it was ready`))
  return { child, port: info.listening }
}

/**
 * Warm the endpoint's JIT before the first job, so the first store of round one does not pay for
 * it: conversations of every length the jobs will send.
 */
async function warmEndpoint(baseUrl) {
  const longest = 2 * Math.max(config.turns, config.warmup) + 1
  for (let n = 1; n <= longest; n += 2) {
    for (let k = 0; k < 10; k++) {
      const messages = Array.from({ length: n }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: FILLER }))
      const res = await fetch(`${baseUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", messages }) })
      const text = (await res.json()).choices?.[0]?.message?.content
      if (text !== reply(n)) throw new Error(`the endpoint answered ${JSON.stringify(text)?.slice(0, 80)} to ${n} messages`)
    }
  }
}

/** One job in a fresh worker process; resolves with its result (or why it failed). */
async function runJob(job) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "worker"], {
    cwd: BENCH,
    env: { ...process.env, BENCH_JOB: JSON.stringify(job), BENCH_MSG_CHARS: String(config.msgChars) },
    stdio: ["ignore", "pipe", "pipe"],
  })
  const { result, code } = await workerResult(child, `[${job.suite} ${job.store}]`, config.workerTimeoutS)
  return result ?? { ok: false, error: `worker exited with ${code} without a result (killed after ${config.workerTimeoutS} s if it ran that long)` }
}

/** Run `node -e code` to the end; resolves { ms (spawn to exit), code, stdout, stderr }. */
function nodeEval(code, env = {}) {
  const t0 = now()
  const r = spawnSync(process.execPath, ["-e", code], { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8", timeout: 60_000 })
  return { ms: now() - t0, code: r.status, stdout: r.stdout, stderr: r.stderr }
}

// ---------------------------------------------------------------------------------------------
// The orchestrator: what runs

/** A URL with any password hidden. */
const redact = (url) => (url ? url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@") : url)

/** The stores this run can reach: each { name, url } or { name, skipped }. */
function engines() {
  const out = [{ name: "memory" }, { name: "file" }, { name: "sqlite" }]
  for (const [name, v] of [["postgres", "TOOLNEXUS_TEST_POSTGRES"], ["redis", "TOOLNEXUS_TEST_REDIS"]]) {
    if (process.env[v]) out.push({ name, url: process.env[v] })
    else out.push({ name, skipped: `${v} is not set` })
  }
  return out.filter((e) => config.stores.includes(e.name))
}

// Which stores each suite measures (ConversationStore has no file form; LangGraph has no
// checkpointer on a plain Redis: its Redis saver needs the RedisJSON and RediSearch modules).
const SUITE_STORES = {
  ask: ["memory", "sqlite", "postgres", "redis"],
  langgraph: ["memory", "sqlite", "postgres"],
  tasks: ["memory", "file", "sqlite", "postgres", "redis"],
}
const SUITE_TITLE = { ask: "client.ask", langgraph: "LangGraph checkpointer", tasks: "A2A task store" }
const LANGGRAPH_NAME = { memory: "MemorySaver", sqlite: "SqliteSaver", postgres: "PostgresSaver" }

/** How many operations each client does at each concurrency. */
function plan(suite) {
  const [per, total] = suite === "tasks" ? [config.tasks, config.tasksTotal] : [config.turns, config.turnsTotal]
  return config.concurrency.map((clients) => ({ clients, perClient: Math.max(1, Math.min(per, Math.floor(total / clients))) }))
}

/** The job for `suite` on `engine` in `round`: fresh files and fresh ids every time. */
function jobFor(suite, engine, round, ctx) {
  const dir = mkdtempSync(path.join(ctx.tmp, `${suite}-${engine.name}-r${round}-`))
  const job = {
    suite,
    store: engine.name,
    baseUrl: ctx.baseUrl,
    warmup: config.warmup,
    plan: plan(suite),
    prefix: `bench-stores-${process.pid}-${Date.now().toString(36)}-r${round}-${suite}`,
  }
  const sqliteFile = path.join(dir, "state.db")
  if (suite === "ask") job.url = engine.name === "memory" ? undefined : engine.name === "sqlite" ? `sqlite:${sqliteFile}` : engine.url
  if (suite === "tasks") job.selector = { memory: undefined, file: `file:${dir}`, sqlite: `sqlite:${sqliteFile}` }[engine.name] ?? engine.url
  if (suite === "langgraph") Object.assign(job, { file: sqliteFile, url: engine.url })
  return job
}

/** The addon files next to index.js, with their sizes. */
function addonFiles() {
  return readdirSync(ROOT)
    .filter((f) => /^toolnexus\..+\.node$/.test(f))
    .map((f) => {
      const st = statSync(path.join(ROOT, f))
      return { file: f, bytes: st.size, modified: st.mtime.toISOString() }
    })
}

/**
 * Cold start: the time to require index.js in fresh processes (and their spawn-to-exit time next
 * to a bare `node -e ""`), and the first two asks of a fresh process on each store.
 */
function coldStart(ctx, stores) {
  const runs = Math.max(1, config.coldRuns)
  const bare = []
  const wall = []
  const requireMs = []
  const errors = []
  const requireCode = `const t = process.hrtime.bigint(); require(${JSON.stringify(ENTRY)}); console.log(Number(process.hrtime.bigint() - t) / 1e6)`
  for (let i = 0; i < runs; i++) {
    bare.push(nodeEval("").ms)
    const r = nodeEval(requireCode)
    if (r.code !== 0) errors.push(firstLine(r.stderr))
    else {
      wall.push(r.ms)
      requireMs.push(Number(r.stdout.trim()))
    }
  }
  const firstAsk = {}
  for (const engine of stores) {
    if (engine.skipped) {
      firstAsk[engine.name] = { skipped: engine.skipped }
      continue
    }
    const rows = []
    let error = null
    for (let i = 0; i < runs; i++) {
      const url = engine.name === "memory" ? undefined : engine.name === "sqlite" ? `sqlite:${path.join(mkdtempSync(path.join(ctx.tmp, "cold-")), "state.db")}` : engine.url
      // Everything is timed inside the fresh process: require, the toolkit, then two asks.
      const code = `
        const ms = (t) => Number(process.hrtime.bigint() - t) / 1e6
        let t = process.hrtime.bigint()
        const { createClient, createToolkit } = require(${JSON.stringify(ENTRY)})
        const requireMs = ms(t)
        ;(async () => {
          t = process.hrtime.bigint()
          const toolkit = await createToolkit({})
          const client = createClient({ baseUrl: ${JSON.stringify(ctx.baseUrl)}, style: "openai", model: "m", apiKey: "k", store: ${url === undefined ? "undefined" : JSON.stringify(url)} })
          const setupMs = ms(t)
          const id = ${JSON.stringify(`bench-stores-${process.pid}-cold-${engine.name}-${i}-${Date.now().toString(36)}`)}
          t = process.hrtime.bigint()
          await client.ask("hello", { toolkit, id })
          const firstAskMs = ms(t)
          t = process.hrtime.bigint()
          await client.ask("again", { toolkit, id })
          const secondAskMs = ms(t)
          console.log(JSON.stringify({ requireMs, setupMs, firstAskMs, secondAskMs }))
          process.exit(0)
        })().catch((e) => { console.error(e?.message ?? e); process.exit(1) })`
      const r = nodeEval(code)
      if (r.code !== 0) error = firstLine(r.stderr.trim() || `exited with ${r.code}`)
      else rows.push(JSON.parse(r.stdout.trim().split("\n").at(-1)))
    }
    const pick = (k) => summarize(rows.map((r) => r[k]))
    firstAsk[engine.name] = { runs: rows.length, error, requireMs: pick("requireMs"), setupMs: pick("setupMs"), firstAskMs: pick("firstAskMs"), secondAskMs: pick("secondAskMs") }
    log(`cold ${engine.name}: first ask ${fmt(firstAsk[engine.name].firstAskMs.median)} ms, second ${fmt(firstAsk[engine.name].secondAskMs.median)} ms${error ? ` (failed: ${error})` : ""}`)
  }
  return {
    runs,
    addon: addonFiles(),
    requireMs: summarize(requireMs),
    processWallMs: summarize(wall),
    bareNodeWallMs: summarize(bare),
    requireErrors: errors.slice(0, 3),
    firstAsk,
  }
}

// ---------------------------------------------------------------------------------------------
// Summaries

const BASELINE = { ask: "memory", langgraph: "memory" } // each suite's floor, when it has one

/** Per suite, store and concurrency: the medians over rounds and the delta to the baseline. */
function summarizeAll(rounds, jobs) {
  const out = {}
  for (const { suite, engine } of jobs) {
    const key = `${suite}:${engine.name}`
    const results = rounds.map((r) => r[key]).filter(Boolean)
    const entry = { suite, store: engine.name, roundsOk: results.filter((r) => r.ok).length, rounds: results.length }
    const bad = results.find((r) => !r.ok)
    if (engine.skipped) entry.skipped = engine.skipped
    else if (bad?.unavailable) entry.unavailable = bad.unavailable
    else if (bad) entry.failed = bad.error
    entry.cells = config.concurrency.map((clients, ci) => {
      const mine = rounds.map((r) => (r[key]?.ok ? r[key].cells[ci] : null))
      const base = BASELINE[suite] && BASELINE[suite] !== engine.name ? rounds.map((r) => (r[`${suite}:${BASELINE[suite]}`]?.ok ? r[`${suite}:${BASELINE[suite]}`].cells[ci] : null)) : null
      const pick = (k) => summarize(mine.map((c) => c?.[k]))
      return {
        clients,
        perClient: mine.find(Boolean)?.perClient ?? plan(suite)[ci].perClient,
        p50: pick("p50"),
        p95: pick("p95"),
        p99: pick("p99"),
        perSec: pick("perSec"),
        cpuMsPerOp: pick("cpuMsPerOp"),
        // This round's p50 minus the baseline's p50 in the same round and cell.
        p50Delta: base ? summarize(mine.map((c, i) => (c && base[i] ? c.p50 - base[i].p50 : null))) : null,
      }
    })
    out[key] = entry
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Report

/** Milliseconds and rates with about three significant figures. */
const fmt = (x) => (x == null ? "–" : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toFixed(3))
const rng = (s, f = fmt) => (s?.median == null ? "–" : s.n > 1 ? `${f(s.median)} (${f(s.min)}–${f(s.max)})` : f(s.median))
const signed = (x) => (x == null ? "–" : `${x >= 0 ? "+" : ""}${fmt(x)}`)
const rngSigned = (s) => (s?.median == null ? "–" : s.n > 1 ? `${signed(s.median)} (${signed(s.min)} to ${signed(s.max)})` : signed(s.median))
const mib = (b) => (b / 1048576).toFixed(1)
const cellText = (s) => String(s).replaceAll("|", "\\|")

/** The table rows of one suite; the last column (the delta to the baseline) only where it has one. */
function suiteRows(summary, suite, label) {
  const rows = []
  const withDelta = Boolean(BASELINE[suite])
  const blanks = withDelta ? "| | | | | | |" : "| | | | | |"
  for (const entry of Object.values(summary).filter((e) => e.suite === suite)) {
    const name = label(entry.store)
    const why = entry.skipped ? `skipped: ${entry.skipped}` : entry.unavailable ? entry.unavailable : !entry.roundsOk && entry.failed ? `failed: ${entry.failed}` : null
    if (why) {
      rows.push(`| ${name} | ${cellText(why)} ${blanks}`)
      continue
    }
    for (const c of entry.cells) {
      const delta = !withDelta ? "" : c.p50Delta ? ` ${rngSigned(c.p50Delta)} |` : " baseline |"
      rows.push(`| ${name} | ${c.clients} | ${c.perClient} | ${rng(c.p50)} | ${rng(c.p95)} | ${rng(c.perSec)} | ${rng(c.cpuMsPerOp)} |${delta}`)
    }
    if (entry.failed) rows.push(`| ${name} | failed in ${entry.rounds - entry.roundsOk} of ${entry.rounds} rounds: ${cellText(entry.failed)} ${blanks}`)
  }
  return rows
}

function markdown(res) {
  const { summary, config: c, machine: m, cold } = res
  const lines = [
    "# Durable stores benchmark",
    "",
    `Node ${m.node}, ${m.cpus} × ${m.cpuModel}; ${c.rounds} round(s), a fresh process per store per round, ${c.warmup} warm-up operations each; messages carry ${c.msgChars} characters of filler.`,
    "Cells: median over rounds (min–max over rounds). p50 / p95 are per operation across all clients of the cell; /s is operations per second of wall time; CPU is this process's (user + system, all threads) per operation, not the database server's. Generated by `npm run bench:stores` (bench/stores.mjs); see bench/README.md.",
  ]
  if (res.trial) lines.push("", `**Trial settings** (${res.trialReasons.join("; ")}): indicative only.`)
  if (res.suites.includes("ask")) {
    lines.push(
      "",
      "## Conversation stores under `client.ask`",
      "",
      "One turn = load the conversation, one LLM round trip to the scripted endpoint, save it. **adds / turn** = the store's p50 minus memory's p50 at the same concurrency in the same round: what keeping the conversation in that store costs per turn.",
      "",
      "| store | clients | turns / client | p50 ms | p95 ms | turns/s | CPU ms / turn | adds / turn ms (p50 vs memory) |",
      "|---|---:|---:|---:|---:|---:|---:|---:|",
      ...suiteRows(summary, "ask", (s) => s),
    )
  }
  if (res.suites.includes("langgraph")) {
    lines.push(
      "",
      "## LangGraph checkpointers: the same load + save, alone",
      "",
      "One turn = `getTuple` (load the thread's latest checkpoint) + `put` (a checkpoint whose `messages` holds the conversation, two messages longer, as ours grows). No LLM call: p50 is the store work itself, to set beside the **adds / turn** above. The last column is the p50 minus MemorySaver's.",
      "",
      "| checkpointer | threads | turns / thread | p50 ms | p95 ms | turns/s | CPU ms / turn | vs MemorySaver ms |",
      "|---|---:|---:|---:|---:|---:|---:|---:|",
      ...suiteRows(summary, "langgraph", (s) => LANGGRAPH_NAME[s]),
    )
  }
  if (res.suites.includes("tasks")) {
    lines.push(
      "",
      "## A2A task stores (`resolveStore`): save + get",
      "",
      "One operation = `save(task)` of a finished Task (one message, one text artifact) and `get(id)` of it; each writer writes new ids.",
      "",
      "| store | writers | tasks / writer | p50 ms | p95 ms | tasks/s | CPU ms / task |",
      "|---|---:|---:|---:|---:|---:|---:|",
      ...suiteRows(summary, "tasks", (s) => (s === "file" ? "file:<dir>" : s)),
    )
  }
  if (cold) {
    lines.push("", "## Cold start", "")
    for (const a of cold.addon) lines.push(`- Addon \`${a.file}\`: ${mib(a.bytes)} MiB (${a.bytes} bytes, built ${a.modified}).`)
    lines.push(
      `- \`require("index.js")\` in a fresh process (${cold.runs} processes): ${rng(cold.requireMs)} ms; spawn to exit ${rng(cold.processWallMs)} ms against ${rng(cold.bareNodeWallMs)} ms for a bare \`node -e ""\`.`,
    )
    if (cold.requireErrors.length) lines.push(`- require failed: ${cold.requireErrors.join("; ")}`)
    lines.push(
      "",
      "First use of a store in a fresh process: the first `ask` opens the store's engine (creating its file or tables when new), the second is warm. Setup = `createToolkit({})` + `createClient`.",
      "",
      "| store | require ms | setup ms | first ask ms | second ask ms |",
      "|---|---:|---:|---:|---:|",
    )
    for (const [name, f] of Object.entries(cold.firstAsk)) {
      if (f.skipped) lines.push(`| ${name} | skipped: ${f.skipped} | | | |`)
      else if (!f.runs) lines.push(`| ${name} | failed: ${cellText(f.error)} | | | |`)
      else lines.push(`| ${name} | ${rng(f.requireMs)} | ${rng(f.setupMs)} | ${rng(f.firstAskMs)} | ${rng(f.secondAskMs)} |`)
    }
  }
  const v = res.versions
  lines.push(
    "",
    "## Notes",
    "",
    `- Versions: toolnexus ${v.toolnexus ?? "?"}; @langchain/langgraph-checkpoint ${v["@langchain/langgraph-checkpoint"] ?? "not installed"}, -sqlite ${v["@langchain/langgraph-checkpoint-sqlite"] ?? "not installed"} (better-sqlite3 ${v["better-sqlite3"] ?? "–"}), -postgres ${v["@langchain/langgraph-checkpoint-postgres"] ?? "not installed"} (pg ${v.pg ?? "–"}).`,
    "- Each store as it comes: toolnexus's SQLite runs WAL with `synchronous = NORMAL` and a PostgreSQL pool of 8; SqliteSaver runs WAL with SQLite's default `synchronous` (FULL), PostgresSaver a `pg` pool of 10. LangGraph keeps every checkpoint of a thread (a row per turn); toolnexus keeps one record per conversation.",
    "- Ask turns and LangGraph turns are not the same work: an ask turn includes the LLM round trip and the client's own loop, so compare LangGraph's p50 with the ask **adds / turn** column, not with the ask p50.",
    `- Load average at start ${m.loadavgStart.map((x) => x.toFixed(2)).join(" ")}, at end ${m.loadavgEnd.map((x) => x.toFixed(2)).join(" ")}; ${fmt(res.durationS)} s in all.`,
    "",
  )
  return lines.join("\n")
}

/** The installed version of a package (ours from the root, the rest from bench/), or null. */
function versionOf(name) {
  try {
    const file = name === "toolnexus" ? path.join(ROOT, "package.json") : path.join(BENCH, "node_modules", name, "package.json")
    return JSON.parse(readFileSync(file, "utf8")).version ?? null
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const started = Date.now()
  const loadavgStart = os.loadavg()
  if (!addonFiles().length) throw new Error("no toolnexus.*.node next to index.js: build the addon first (npm run build)")
  for (const s of config.suites) if (!["ask", "langgraph", "tasks", "cold"].includes(s)) throw new Error(`unknown suite ${s} (known: ask, langgraph, tasks, cold)`)
  const stores = engines()
  for (const e of stores) if (e.skipped) log(`${e.name} skipped: ${e.skipped}`)
  const jobs = []
  for (const suite of ["ask", "langgraph", "tasks"]) {
    if (!config.suites.includes(suite)) continue
    for (const engine of stores) if (SUITE_STORES[suite].includes(engine.name)) jobs.push({ suite, engine })
  }
  const runnable = jobs.filter((j) => !j.engine.skipped)
  const tmp = mkdtempSync(path.join(os.tmpdir(), "toolnexus-bench-stores-"))
  const endpoint = await startEndpoint()
  const ctx = { tmp, baseUrl: `http://127.0.0.1:${endpoint.port}` }
  const rounds = []
  let cold = null
  try {
    if (config.suites.includes("ask") || config.suites.includes("cold")) await warmEndpoint(ctx.baseUrl)
    for (let round = 0; round < config.rounds && runnable.length; round++) {
      const results = {}
      // Rotate by one each round, so no store is always first or always after the same one.
      for (let k = 0; k < runnable.length; k++) {
        const { suite, engine } = runnable[(k + round) % runnable.length]
        const r = await runJob(jobFor(suite, engine, round, ctx))
        results[`${suite}:${engine.name}`] = r
        const head = `round ${round + 1}/${config.rounds} ${suite} ${engine.name}:`
        if (r.ok) log(head, r.cells.map((c) => `${c.clients}× p50 ${fmt(c.p50)} ms ${fmt(c.perSec)}/s`).join(", "))
        else log(head, r.unavailable ?? `failed: ${r.error}`)
        await sleep(config.pauseMs)
      }
      rounds.push(results)
    }
    if (config.suites.includes("cold")) cold = coldStart(ctx, stores.filter((e) => SUITE_STORES.ask.includes(e.name)))
  } finally {
    await stopChild(endpoint.child)
    rmSync(tmp, { recursive: true, force: true })
  }
  const trialReasons = []
  if (config.rounds < 2) trialReasons.push(`rounds ${config.rounds} < 2`)
  if (config.turns < 20) trialReasons.push(`turns ${config.turns} < 20`)
  if (config.tasks < 100) trialReasons.push(`tasks ${config.tasks} < 100`)
  const res = {
    generatedAt: new Date().toISOString(),
    durationS: (Date.now() - started) / 1000,
    trial: trialReasons.length > 0,
    trialReasons,
    config,
    suites: config.suites,
    engines: stores.map((e) => ({ name: e.name, url: redact(e.url), skipped: e.skipped })),
    machine: machine(loadavgStart),
    versions: Object.fromEntries(
      ["toolnexus", "@langchain/langgraph-checkpoint", "@langchain/langgraph-checkpoint-sqlite", "@langchain/langgraph-checkpoint-postgres", "better-sqlite3", "pg"].map((n) => [n, versionOf(n)]),
    ),
    summary: summarizeAll(rounds, jobs),
    cold,
    rounds,
  }
  mkdirSync(outDir, { recursive: true })
  writeFileSync(path.join(outDir, "stores-results.json"), JSON.stringify(res, null, 2) + "\n")
  const md = markdown(res)
  writeFileSync(path.join(outDir, "stores-results.md"), md)
  console.log(md)
  log(`wrote ${path.join(outDir, "stores-results.json")} and stores-results.md in ${fmt(res.durationS)} s`)
}

const role = process.argv[2]
const entry = role === "llm" ? async () => serveEndpoint() : role === "worker" ? worker : main
entry().catch((e) => {
  console.error(e)
  process.exit(1)
})
