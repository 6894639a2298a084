// Every fenced code block of README.md, checked: programs run, commands name real things.
//
// The convention (the fence line is "```<lang> <attributes>"; GitHub shows only <lang>):
//
//   Every block's language must be one of ts, js, mjs, sh, json, text; anything else fails, so no
//   block escapes this test by its language.
//
//   ts / js / mjs: a complete program, run unchanged and always (there is no opt-out). Each run
//     gets a fresh temporary directory as its cwd, where `toolnexus` resolves to this repository
//     (node_modules/toolnexus is a symlink to it, as a user's install would be). `ts` runs as
//     `node --import tsx block.mts`, `js`/`mjs` as `node block.mjs` (plain Node, as a user would).
//     The test starts a scripted LLM endpoint on 127.0.0.1 for each run and points the quick start's
//     variables at it: LLM_BASE_URL, LLM_STYLE, LLM_MODEL and the style's key variable
//     (OPENAI_API_KEY=test or ANTHROPIC_API_KEY=test; OPENROUTER_API_KEY is removed). The scripted
//     model: when the last message is a tool result it answers `Done: <that result>`; else, when
//     the block names a tool with `call` and the request offers it, it calls that tool with
//     `args`; else it answers `You asked: <the last user text>`. A request with `stream: true` gets
//     the same answer as server-sent events of its style (text in three deltas, a tool call's
//     arguments in two). Each run must exit 0 within its
//     timeout, and a block that reads LLM_BASE_URL (a server block, `until`, excepted: it is only
//     probed) must have sent the endpoint at least one request, each in its style (`/chat/completions` with `Bearer test`, or `/v1/messages` with
//     `x-api-key: test`). Attributes, all optional:
//       styles="openai anthropic"  run once per wire style (default: openai)
//       call="<tool>" args='<json>'  the tool the scripted model calls, and with what
//       answer='<json>'            the scripted model's final answer instead of `Done: …` / `You
//                                  asked: …` (structured output): as text, or as a call of the
//                                  `final_answer` tool when the request offers it
//       expect="<text>"            stdout must contain it (may be given more than once)
//       env="K=V K2=V2"            more environment for the program
//       until="<text>" probe="/p"  a server that runs until stopped: wait until stdout contains
//                                  <text>, GET the first http:// URL printed + <probe> (must be
//                                  200 and JSON), then SIGTERM it; the run passes if all that held
//       timeout=<ms>               default 30000
//
//   sh: not run. Each line is checked: every `npm run <x>` names a script of package.json; every
//     path into the repository (scripts/, bench/, examples/, __test__/, .ci/, lib/, crates/, src/,
//     npm/) exists; a tarball in a pack/ directory is named as `npm run pack:local` names it (package name and
//     version from package.json, a platform of npm/); an `@toolnexus/binding-<platform>` names a
//     platform of npm/.
//
//   ts blocks also type-check together under `tsc --strict` against index.d.ts (module nodenext).
//
//   json: must parse; one with an `mcpServers` or `mcp` key must also pass `parseMcpConfig`.
//
//   text: not checked, unless it carries `paths`: then the first word of each line must exist.
//
// A bare import other than toolnexus must name a dev or peer dependency of this repository (a
// package the README tells its reader to install); it is linked into the run's node_modules.
//
// README_TEST_VERBOSE=1 prints each program's stdout and stderr as a test diagnostic.
//
// Across the whole README: every `TOOLNEXUS_*` environment variable it names is read somewhere in
// the code (loader.js, lib/, src/, crates/, scripts/, .ci/, __test__/support/), and every relative
// Markdown link of README.md and bench/README.md points at a file or directory that exists, and every
// in-page link (#anchor) of README.md names one of its headings; the createClient options table
// lists exactly the fields of ClientOptions in index.d.ts.

import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { REPO, cleanEnv, sse, startLLM } from "./support/llm.mjs"

const README = path.join(REPO, "README.md")
const PKG = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8"))
const PLATFORMS = fs.readdirSync(path.join(REPO, "npm")).filter((d) => fs.statSync(path.join(REPO, "npm", d)).isDirectory())
const TSX_DIR = path.join(REPO, "node_modules", "tsx")
const LANGS = new Set(["ts", "js", "mjs", "sh", "json", "text"])
const RUNNABLE = new Set(["ts", "js", "mjs"])

// ---- reading the README ----

/** `key="v"`, `key='v'` or `key=v` pairs of a fence line; a key given twice keeps every value. */
function parseAttrs(rest) {
  const attrs = {}
  const flags = new Set()
  const re = /([a-zA-Z]+)(?:=(?:"([^"]*)"|'([^']*)'|(\S+)))?/g
  let m
  while ((m = re.exec(rest))) {
    const value = m[2] ?? m[3] ?? m[4]
    if (value === undefined) flags.add(m[1])
    else (attrs[m[1]] ??= []).push(value)
  }
  return { attrs, flags }
}

/** Every fenced block: its language, attributes, text, line and the heading it sits under. */
function blocksOf(markdown) {
  const lines = markdown.split("\n")
  const blocks = []
  let heading = "(top)"
  for (let i = 0; i < lines.length; i++) {
    const h = /^#{1,6}\s+(.*)$/.exec(lines[i])
    if (h) heading = h[1].trim()
    const open = /^(\s*)(`{3,}|~{3,})(.*)$/.exec(lines[i])
    if (!open) continue
    const fence = open[2]
    const info = open[3].trim()
    const lang = info.split(/\s+/)[0] ?? ""
    const { attrs, flags } = parseAttrs(info.slice(lang.length))
    const body = []
    let j = i + 1
    while (j < lines.length && !lines[j].trimStart().startsWith(fence)) body.push(lines[j++])
    assert.ok(j < lines.length, `README.md:${i + 1}: a code block that is never closed`)
    blocks.push({ lang, attrs, flags, code: body.join("\n") + "\n", line: i + 1, heading })
    i = j
  }
  return blocks
}

const markdown = fs.readFileSync(README, "utf8")
const blocks = blocksOf(markdown)
const one = (b, key) => (b.attrs[key] ? b.attrs[key][b.attrs[key].length - 1] : undefined)
const label = (b) => `README.md:${b.line} (${b.heading}) ${b.lang}`

// ---- the scripted model ----

const lastUserText = (messages) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    if (m.role !== "user") continue
    if (typeof m.content === "string") return m.content
    if (Array.isArray(m.content)) {
      const t = m.content.filter((c) => c.type === "text").map((c) => c.text).join("")
      if (t) return t
    }
  }
  return ""
}

function script(block) {
  const answer = one(block, "answer")
  const final = answer === undefined ? undefined : JSON.parse(answer)
  const script = scriptWith(one(block, "call"), JSON.parse(one(block, "args") ?? "{}"), answer)
  return (entry) => {
    const reply = script(entry)
    const offered = (entry.json?.tools ?? []).map((t) => t.name ?? t.function?.name)
    // The final answer: once a tool result is in, or when there is no tool to call first.
    const finished = reply.sse ? !JSON.stringify(reply.sse).includes("tool_call") && !JSON.stringify(reply.sse).includes("tool_use") : !reply.body?.choices?.[0]?.message?.tool_calls && !(reply.body?.content ?? []).some((c) => c.type === "tool_use")
    if (final === undefined || !finished || !offered.includes("final_answer")) return reply
    return scriptWith("final_answer", final, undefined)({ ...entry, json: { ...entry.json, messages: [{ role: "user", content: "" }] } })
  }
}

function scriptWith(call, args, answer) {
  return (entry) => {
    const body = entry.json ?? {}
    const messages = body.messages ?? []
    const anthropic = /\/messages$/.test(entry.path)
    const last = messages[messages.length - 1]
    let toolResult
    if (anthropic && Array.isArray(last?.content)) {
      const r = last.content.find((c) => c.type === "tool_result")
      if (r) toolResult = typeof r.content === "string" ? r.content : (r.content ?? []).map((c) => c.text ?? "").join("")
    } else if (!anthropic && last?.role === "tool") toolResult = String(last.content)
    const offered = (body.tools ?? []).map((t) => t.name ?? t.function?.name)
    const text = answer ?? (toolResult !== undefined ? `Done: ${toolResult}` : `You asked: ${lastUserText(messages)}`)
    const calling = toolResult === undefined && call && offered.includes(call)
    if (body.stream) return { sse: anthropic ? anthropicStream(calling ? { call, args } : { text }) : openaiStream(calling ? { call, args } : { text }) }
    if (anthropic) {
      const content = calling ? [{ type: "tool_use", id: "toolu_1", name: call, input: args }] : [{ type: "text", text }]
      return { body: { id: "msg_1", type: "message", role: "assistant", content, stop_reason: calling ? "tool_use" : "end_turn", usage: { input_tokens: 12, output_tokens: 7 } } }
    }
    const message = calling
      ? { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: call, arguments: JSON.stringify(args) } }] }
      : { role: "assistant", content: text }
    return { body: { id: "cmpl-1", choices: [{ index: 0, message, finish_reason: calling ? "tool_calls" : "stop" }], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } } }
  }
}

// A streamed answer, in pieces: the text in three deltas, or one tool call with its arguments in two.
const thirds = (t) => [t.slice(0, Math.ceil(t.length / 3)), t.slice(Math.ceil(t.length / 3), Math.ceil((2 * t.length) / 3)), t.slice(Math.ceil((2 * t.length) / 3))]
const halves = (t) => [t.slice(0, Math.ceil(t.length / 2)), t.slice(Math.ceil(t.length / 2))]

function openaiStream({ text, call, args }) {
  const chunk = (delta, extra = {}) => sse({ id: "chunk", object: "chat.completion.chunk", choices: [{ index: 0, delta, ...extra }] })
  const frames = []
  if (call) {
    const [a, b] = halves(JSON.stringify(args))
    frames.push(chunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: call, arguments: a } }] }))
    frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: b } }] }))
    frames.push(chunk({}, { finish_reason: "tool_calls" }))
  } else {
    for (const piece of thirds(text)) frames.push(chunk({ content: piece }))
    frames.push(chunk({}, { finish_reason: "stop" }))
  }
  frames.push(sse({ id: "chunk", choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } }))
  frames.push("data: [DONE]\n\n")
  return frames
}

function anthropicStream({ text, call, args }) {
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const frames = [ev("message_start", { message: { id: "msg_1", type: "message", role: "assistant", content: [], usage: { input_tokens: 12, output_tokens: 0 } } })]
  if (call) {
    frames.push(ev("content_block_start", { index: 0, content_block: { type: "tool_use", id: "toolu_1", name: call, input: {} } }))
    for (const piece of halves(JSON.stringify(args))) frames.push(ev("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: piece } }))
  } else {
    frames.push(ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }))
    for (const piece of thirds(text)) frames.push(ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } }))
  }
  frames.push(ev("content_block_stop", { index: 0 }))
  frames.push(ev("message_delta", { delta: { stop_reason: call ? "tool_use" : "end_turn" }, usage: { output_tokens: 7 } }))
  frames.push(ev("message_stop", {}))
  return frames
}

// ---- running a program block ----

/**
 * The packages a block imports that the README tells its reader to install beside toolnexus
 * (zod, valibot, OpenTelemetry's SDK...): linked into the block's node_modules from this
 * repository's, where they are development dependencies, as the reader's install would have them.
 */
function linkImports(dir, code) {
  const wanted = new Set()
  for (const m of code.matchAll(/\bfrom\s+["']([^"'.][^"']*)["']/g)) {
    const spec = m[1]
    if (spec.startsWith("node:") || spec === "toolnexus") continue
    const parts = spec.split("/")
    wanted.add(spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0])
  }
  for (const name of wanted) {
    const known = PKG.devDependencies?.[name] ?? PKG.peerDependencies?.[name]
    assert.ok(known, `a README block imports ${name}, which is no (dev or peer) dependency of this repository`)
    const target = path.join(dir, "node_modules", name)
    fs.mkdirSync(path.dirname(target), { recursive: true })
    fs.symlinkSync(fs.realpathSync(path.join(REPO, "node_modules", name)), target, "dir")
    // Its declarations too, where they come apart (`@types/express`), as a user installs both.
    const types = `@types/${name.replace(/^@([^/]+)\//, "$1__")}`
    if (PKG.devDependencies?.[types] && !fs.existsSync(path.join(dir, "node_modules", types))) {
      fs.mkdirSync(path.join(dir, "node_modules", "@types"), { recursive: true })
      fs.symlinkSync(fs.realpathSync(path.join(REPO, "node_modules", types)), path.join(dir, "node_modules", types), "dir")
    }
  }
}

function programDir(block) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-readme-"))
  fs.mkdirSync(path.join(dir, "node_modules"))
  fs.symlinkSync(REPO, path.join(dir, "node_modules", "toolnexus"), "dir")
  linkImports(dir, block.code)
  fs.symlinkSync(fs.realpathSync(TSX_DIR), path.join(dir, "node_modules", "tsx"), "dir")
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ private: true, type: "module" }))
  const file = block.lang === "ts" ? "block.mts" : "block.mjs"
  fs.writeFileSync(path.join(dir, file), block.code)
  return { dir, file }
}

function envFor(block, style, llm) {
  const env = cleanEnv()
  for (const k of ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LLM_BASE_URL", "LLM_STYLE", "LLM_MODEL"]) delete env[k]
  env.LLM_STYLE = style
  env.LLM_MODEL = "scripted"
  if (style === "anthropic") {
    env.LLM_BASE_URL = llm.url
    env.ANTHROPIC_API_KEY = "test"
  } else {
    env.LLM_BASE_URL = `${llm.url}/v1`
    env.OPENAI_API_KEY = "test"
  }
  for (const pair of (one(block, "env") ?? "").split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf("=")
    env[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return env
}

async function runProgram(block, style) {
  const llm = await startLLM(script(block))
  const { dir, file } = programDir(block)
  const timeoutMs = Number(one(block, "timeout") ?? 30_000)
  const until = one(block, "until")
  const args = block.lang === "ts" ? ["--import", "tsx", file] : [file]
  const child = spawn(process.execPath, args, { cwd: dir, env: envFor(block, style, llm), stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  let timedOut = false
  let probed
  const exited = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })))
  const timer = setTimeout(() => {
    timedOut = true
    child.kill("SIGKILL")
  }, timeoutMs)
  let reachedUntil
  const untilSeen = new Promise((resolve) => (reachedUntil = resolve))
  child.stdout.on("data", (d) => {
    stdout += d
    if (until && stdout.includes(until)) reachedUntil()
  })
  child.stderr.on("data", (d) => (stderr += d))
  try {
    if (until) {
      const first = await Promise.race([untilSeen.then(() => "until"), exited.then(() => "exit")])
      if (first === "until") {
        const probe = one(block, "probe")
        if (probe) {
          const url = /http:\/\/[^\s"'`]+/.exec(stdout)?.[0]
          probed = url ? await fetch(new URL(probe, url)).then(async (r) => ({ status: r.status, json: await r.json().catch(() => undefined) })) : { status: 0 }
        }
        child.kill("SIGTERM")
      }
    }
    const { code, signal } = await exited
    return { code, signal, stdout, stderr, timedOut, probed, requests: llm.requests, untilReached: until ? stdout.includes(until) : undefined }
  } finally {
    clearTimeout(timer)
    await llm.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

for (const block of blocks.filter((b) => RUNNABLE.has(b.lang))) {
  const styles = (one(block, "styles") ?? "openai").split(/\s+/).filter(Boolean)
  for (const style of styles) {
    test(`${label(block)} runs (${style})`, { timeout: Number(one(block, "timeout") ?? 30_000) + 15_000 }, async (t) => {
      assert.ok(["openai", "anthropic"].includes(style), `unknown style ${style}`)
      const r = await runProgram(block, style)
      const report = `\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`
      if (process.env.README_TEST_VERBOSE) t.diagnostic(report)
      assert.ok(!r.timedOut, `timed out${report}`)
      if (one(block, "until")) {
        assert.ok(r.untilReached, `never printed ${JSON.stringify(one(block, "until"))}${report}`)
        if (one(block, "probe")) {
          assert.equal(r.probed?.status, 200, `GET ${one(block, "probe")}${report}`)
          assert.equal(typeof r.probed.json, "object", `GET ${one(block, "probe")} is not JSON${report}`)
        }
      } else {
        assert.equal(r.code, 0, `exit code ${r.code} (signal ${r.signal})${report}`)
      }
      for (const want of block.attrs.expect ?? []) assert.ok(r.stdout.includes(want), `stdout lacks ${JSON.stringify(want)}${report}`)
      if (block.code.includes("LLM_BASE_URL") && !one(block, "until")) {
        assert.ok(r.requests.length > 0, `the program never called the scripted endpoint${report}`)
        for (const q of r.requests) {
          if (style === "anthropic") {
            assert.equal(q.path, "/v1/messages", report)
            assert.equal(q.headers["x-api-key"], "test", report)
          } else {
            assert.equal(q.path, "/v1/chat/completions", report)
            assert.equal(q.headers.authorization, "Bearer test", report)
          }
        }
      }
    })
  }
}

// ---- ts blocks also type-check, as a strict TypeScript user would compile them ----

const TSC = path.join(REPO, "node_modules", ".bin", "tsc")
const TYPES = path.join(REPO, "node_modules", "@types")

test("README.md: every ts block type-checks against index.d.ts (tsc --strict)", { skip: fs.existsSync(TSC) ? false : `tsc not installed at ${TSC}`, timeout: 90_000 }, async (t) => {
  const ts = blocks.filter((b) => b.lang === "ts")
  assert.ok(ts.length > 0)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-readme-tsc-"))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, "node_modules"))
  fs.symlinkSync(REPO, path.join(dir, "node_modules", "toolnexus"), "dir")
  linkImports(dir, ts.map((b) => b.code).join("\n"))
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
  const files = ts.map((b) => {
    const name = `readme-${b.line}.mts`
    fs.writeFileSync(path.join(dir, name), b.code)
    return name
  })
  const args = ["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom"]
  if (fs.existsSync(path.join(TYPES, "node"))) args.push("--typeRoots", TYPES, "--types", "node")
  const r = await new Promise((resolve) => {
    const child = spawn(TSC, [...args, ...files], { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (out += d))
    child.on("close", (code) => resolve({ code, out }))
  })
  // Errors name readme-<line>.mts: <line> is the README line of the block's fence.
  assert.equal(r.code, 0, r.out)
})

// ---- sh, json, text ----

const REPO_PATH = /^(?:\.\/)?(?:scripts|bench|examples|__test__|\.ci|lib|crates|src|npm)\/[^\s"'`)]*$/

test("README.md: every code block has a language this test checks", () => {
  assert.ok(blocks.length > 0)
  for (const b of blocks) assert.ok(LANGS.has(b.lang), `${label(b)}: the language must be one of ${[...LANGS].join(", ")}`)
})

for (const block of blocks.filter((b) => b.lang === "sh")) {
  test(`${label(block)}: its commands name real scripts, files and packages`, () => {
    for (const raw of block.code.split("\n")) {
      const line = raw.replace(/(^|\s)#.*$/, "").trim()
      if (!line) continue
      for (const m of line.matchAll(/\bnpm run ([\w:.-]+)/g)) assert.ok(PKG.scripts[m[1]], `${label(block)}: npm run ${m[1]} is not a script of package.json`)
      for (const word of line.split(/\s+/)) {
        const token = word.replace(/^["']|["';]$/g, "")
        if (/(?:^|\/)pack\/[^/]+\.tgz$/.test(token)) {
          const name = path.basename(token)
          const ok =
            name === `${PKG.name}-${PKG.version}.tgz` ||
            PLATFORMS.some((p) => name === `${PKG.napi.packageName.replace(/^@/, "").replace("/", "-")}-${p}-${PKG.version}.tgz`)
          assert.ok(ok, `${label(block)}: ${token} is not a tarball npm run pack:local writes`)
        } else if (REPO_PATH.test(token)) {
          assert.ok(fs.existsSync(path.join(REPO, token)), `${label(block)}: ${token} does not exist in the repository`)
        }
        const binding = /^@toolnexus\/binding-([\w-]+?)(?:@.*)?$/.exec(token)
        if (binding && !binding[1].includes("<")) assert.ok(PLATFORMS.includes(binding[1]), `${label(block)}: ${token} is not a platform package`)
      }
    }
  })
}

for (const block of blocks.filter((b) => b.lang === "json")) {
  test(`${label(block)}: parses`, () => {
    const value = JSON.parse(block.code)
    if (value && typeof value === "object" && ("mcpServers" in value || "mcp" in value)) {
      const { parseMcpConfig } = createRequire(import.meta.url)(REPO)
      assert.ok(Object.keys(parseMcpConfig(value)).length > 0, `${label(block)}: parseMcpConfig found no server`)
    }
  })
}

for (const block of blocks.filter((b) => b.lang === "text" && b.flags.has("paths"))) {
  test(`${label(block)}: every path it lists exists`, () => {
    for (const line of block.code.split("\n")) {
      const first = line.trim().split(/\s+/)[0]
      if (first) assert.ok(fs.existsSync(path.join(REPO, first)), `${label(block)}: ${first} does not exist`)
    }
  })
}

// ---- the whole README ----

function sourceFiles(dir, acc = []) {
  if (!fs.existsSync(dir)) return acc
  const stat = fs.statSync(dir)
  if (stat.isFile()) return [...acc, dir]
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "target" || e.name === "node_modules") continue
    const p = path.join(dir, e.name)
    if (e.isDirectory()) sourceFiles(p, acc)
    else if (/\.(rs|js|mjs|cjs|sh|toml)$/.test(e.name) || e.name === "run") acc.push(p)
  }
  return acc
}

test("README.md: every TOOLNEXUS_* variable it names is read by the code", () => {
  const named = [...new Set(markdown.match(/\bTOOLNEXUS_[A-Z0-9_]+/g) ?? [])]
  const roots = ["loader.js", "lib", "src", "crates", "scripts", ".ci", "__test__/support"].map((p) => path.join(REPO, p))
  const code = roots.flatMap((r) => sourceFiles(r)).map((f) => fs.readFileSync(f, "utf8")).join("\n")
  for (const v of named) assert.ok(code.includes(v), `README.md names ${v}, which no code reads`)
})

for (const doc of ["README.md", "bench/README.md"]) {
  test(`${doc}: every relative link points at something that exists`, () => {
    const text = fs.readFileSync(path.join(REPO, doc), "utf8").replace(/```[\s\S]*?```/g, "")
    const base = path.dirname(path.join(REPO, doc))
    let checked = 0
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1].split("#")[0]
      if (!target || /^[a-z]+:/i.test(target)) continue
      checked++
      assert.ok(fs.existsSync(path.resolve(base, target)), `${doc}: the link ${m[1]} points at nothing`)
    }
    if (doc === "README.md") assert.ok(checked > 0, "README.md has no relative link at all")
  })
}

test("README.md: the createClient options table lists exactly ClientOptions of index.d.ts", () => {
  const dts = fs.readFileSync(path.join(REPO, "index.d.ts"), "utf8")
  const iface = /export interface ClientOptions \{([\s\S]*?)\n\}/.exec(dts)
  assert.ok(iface, "index.d.ts has no ClientOptions")
  const declared = [...iface[1].matchAll(/^ {2}(\w+)\??:/gm)].map((m) => m[1]).sort()
  const section = /^## createClient options\n([\s\S]*?)^## /m.exec(markdown)
  assert.ok(section, "README.md has no createClient options section")
  const listed = [...section[1].matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]).sort()
  assert.deepEqual(listed, declared)
})

test("README.md: every in-page link (#anchor) names a heading", () => {
  // GitHub's anchors: the heading lower-cased, punctuation other than - and _ dropped, spaces as -.
  const slug = (h) => h.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-")
  const text = markdown.replace(/```[\s\S]*?```/g, "")
  const anchors = new Set([...text.matchAll(/^#{1,6}\s+(.*)$/gm)].map((m) => slug(m[1].trim())))
  const links = [...text.matchAll(/\]\(#([^)\s]+)\)/g)].map((m) => m[1])
  assert.ok(links.length > 0)
  for (const a of links) assert.ok(anchors.has(a), `README.md: the link #${a} names no heading`)
})
