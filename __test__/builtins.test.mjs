// SPEC §4A: the built-in tools, reached from JavaScript (real files in os.tmpdir(), real child
// processes, a local HTTP server).
import test from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import http from "node:http"
import os from "node:os"
import path from "node:path"
import {
  createBuiltinTools, selectBuiltins, builtinsEnabled, createToolkit, createClient, defineTool, toOpenAI, pendingOf,
} from "../index.js"
import { startLLM, oaCalls, oaText } from "./support/llm.mjs"

const NAMES = ["bash", "read", "write", "edit", "grep", "glob", "webfetch", "question", "apply_patch", "todowrite"]

/** [name, description, inputSchema as JSON text]: as the contract pins them. */
const DECLARATIONS = [
  ["bash", "Run a shell command and return its combined stdout+stderr. Non-zero exit is an error.", "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"description\":\"The shell command to run\"},\"workdir\":{\"type\":\"string\",\"description\":\"Working directory (default: process cwd)\"},\"timeout\":{\"type\":\"number\",\"description\":\"Timeout in milliseconds (default 60000)\"},\"description\":{\"type\":\"string\",\"description\":\"Human-readable description of the command\"}},\"required\":[\"command\"],\"additionalProperties\":false}"],
  ["read", "Read a UTF-8 text file. With offset/limit, return only that line window.", "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"Path to the file to read\"},\"offset\":{\"type\":\"number\",\"description\":\"1-based line to start from\"},\"limit\":{\"type\":\"number\",\"description\":\"Maximum number of lines to read\"}},\"required\":[\"path\"],\"additionalProperties\":false}"],
  ["write", "Write content to a file (create/overwrite), creating parent directories.", "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"Path to write to\"},\"content\":{\"type\":\"string\",\"description\":\"Content to write\"}},\"required\":[\"path\",\"content\"],\"additionalProperties\":false}"],
  ["edit", "Exact-string replace in a file. Default replaces a single unique occurrence; replaceAll replaces all.", "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"Path to the file to edit\"},\"oldString\":{\"type\":\"string\",\"description\":\"Exact string to replace\"},\"newString\":{\"type\":\"string\",\"description\":\"Replacement string\"},\"replaceAll\":{\"type\":\"boolean\",\"description\":\"Replace all occurrences\"}},\"required\":[\"path\",\"oldString\",\"newString\"],\"additionalProperties\":false}"],
  ["grep", "Search file contents by regex under a directory. Output is file:line:text matches.", "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\",\"description\":\"Regular expression to search for\"},\"path\":{\"type\":\"string\",\"description\":\"Directory to search (default: process cwd)\"},\"include\":{\"type\":\"string\",\"description\":\"Glob filter for file names\"},\"limit\":{\"type\":\"number\",\"description\":\"Maximum number of matches (default 100)\"}},\"required\":[\"pattern\"],\"additionalProperties\":false}"],
  ["glob", "List files matching a glob under a directory. Output is newline-joined relative paths.", "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\",\"description\":\"Glob pattern to match\"},\"path\":{\"type\":\"string\",\"description\":\"Directory to search (default: process cwd)\"},\"limit\":{\"type\":\"number\",\"description\":\"Maximum number of results (default 100)\"}},\"required\":[\"pattern\"],\"additionalProperties\":false}"],
  ["webfetch", "HTTP GET a URL and return its body as text, markdown, or html.", "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\",\"description\":\"URL to fetch\"},\"format\":{\"type\":\"string\",\"enum\":[\"text\",\"markdown\",\"html\"],\"description\":\"Response format (default markdown)\"},\"timeout\":{\"type\":\"number\",\"description\":\"Timeout in seconds (default 30)\"}},\"required\":[\"url\"],\"additionalProperties\":false}"],
  ["question", "Ask the host one or more questions. Suspends via a kind:\"question\" Request (§10); the host's waitFor resolves it and the answer is returned to the model.", "{\"type\":\"object\",\"properties\":{\"questions\":{\"type\":\"array\",\"description\":\"Questions to ask\",\"items\":{\"type\":\"object\",\"properties\":{\"question\":{\"type\":\"string\"},\"header\":{\"type\":\"string\"},\"options\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"multiple\":{\"type\":\"boolean\"}},\"required\":[\"question\"]}}},\"required\":[\"questions\"],\"additionalProperties\":false}"],
  ["apply_patch", "Apply a patch (Begin/End Patch grammar: Add/Update/Delete File). Atomic — a non-matching hunk aborts with no writes.", "{\"type\":\"object\",\"properties\":{\"patchText\":{\"type\":\"string\",\"description\":\"The patch text in Begin/End Patch format\"}},\"required\":[\"patchText\"],\"additionalProperties\":false}"],
  ["todowrite", "Replace the session todo list. Returns the rendered list.", "{\"type\":\"object\",\"properties\":{\"todos\":{\"type\":\"array\",\"description\":\"The full todo list to store\",\"items\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"text\":{\"type\":\"string\"},\"completed\":{\"type\":\"boolean\"}},\"required\":[\"id\",\"text\",\"completed\"]}}},\"required\":[\"todos\"],\"additionalProperties\":false}"],
]

const byName = () => Object.fromEntries(createBuiltinTools().map((t) => [t.name, t]))

function tmpdir(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "toolnexus-builtins-js-")))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

function put(dir, rel, content) {
  const f = path.join(dir, rel)
  fs.mkdirSync(path.dirname(f), { recursive: true })
  fs.writeFileSync(f, content)
  return f
}

const alive = (pid) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return !/^\S+ \(.*\) [ZX]/.test(stat)
  } catch {
    return false
  }
}

async function gone(pid) {
  for (let i = 0; i < 50; i++) {
    if (!alive(pid)) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return false
}

// ---- declarations -----------------------------------------------------------------------------

test("createBuiltinTools: the ten tools in their fixed order with the pinned declarations", () => {
  const tools = createBuiltinTools()
  assert.deepEqual(tools.map((t) => t.name), NAMES)
  for (const [i, [name, description, schema]] of DECLARATIONS.entries()) {
    assert.equal(tools[i].name, name)
    assert.equal(tools[i].description, description)
    assert.equal(JSON.stringify(tools[i].inputSchema), schema, name)
    assert.equal(tools[i].source, "builtin")
    assert.equal(typeof tools[i].execute, "function")
  }
  assert.notEqual(createBuiltinTools()[0], tools[0], "every call builds fresh tools")
  const openai = toOpenAI(tools)
  assert.equal(JSON.stringify(openai[0].function.parameters), DECLARATIONS[0][2], "the schema key order survives the adapters")
})

test("selectBuiltins and builtinsEnabled read the config as the reference does", () => {
  const names = (cfg) => selectBuiltins(cfg).map((t) => t.name)
  assert.deepEqual(names(), NAMES)
  assert.deepEqual(names(true), NAMES)
  assert.deepEqual(selectBuiltins(false), [])
  assert.deepEqual(selectBuiltins({ disabled: true, enabled: true, tools: { bash: true } }), [])
  assert.deepEqual(selectBuiltins({ enabled: false }), [])
  assert.deepEqual(names({ tools: { bash: false, write: false, nope: false, read: true } }), NAMES.filter((n) => n !== "bash" && n !== "write"))
  assert.deepEqual(names("yes"), NAMES, "a value with no fields leaves every tool on")
  assert.deepEqual(names(0), NAMES)
  assert.equal(builtinsEnabled(undefined), true)
  assert.equal(builtinsEnabled(false), false)
  assert.equal(builtinsEnabled({ disabled: true }), false)
  assert.equal(builtinsEnabled({ enabled: false }), false)
  assert.equal(builtinsEnabled({ tools: { bash: false } }), true)
  assert.throws(() => selectBuiltins(null), TypeError)
  assert.throws(() => builtinsEnabled(null), TypeError)
})

// ---- files -------------------------------------------------------------------------------------

test("write, read and edit work on real files and report failures as results", async (t) => {
  const dir = tmpdir(t)
  const { write, read, edit } = byName()
  const file = path.join(dir, "deep", "notes.txt")
  assert.deepEqual(await write.execute({ path: file, content: "alpha\nbeta\n" }), {
    output: `Wrote 11 bytes to ${file}`, isError: false, metadata: { bytes: 11 },
  })
  assert.equal((await read.execute({ path: file, offset: 2, limit: 1 })).output, "beta")
  assert.deepEqual(await read.execute({ path: file }), { output: "alpha\nbeta\n", isError: false })
  assert.deepEqual(await edit.execute({ path: file, oldString: "beta", newString: "gamma" }), {
    output: `Edited ${file} (1 replacement)`, isError: false, metadata: { replacements: 1 },
  })
  assert.equal(fs.readFileSync(file, "utf8"), "alpha\ngamma\n")
  const missing = path.join(dir, "nope.txt")
  assert.deepEqual(await read.execute({ path: missing }), { output: `read: ENOENT: no such file or directory, open '${missing}'`, isError: true })
  assert.deepEqual(await edit.execute({ path: file, oldString: "zzz", newString: "" }), { output: `edit: oldString not found in ${file}`, isError: true })
  fs.writeFileSync(file, "a a")
  assert.equal((await edit.execute({ path: file, oldString: "a", newString: "b" })).output, `edit: oldString is not unique in ${file} (2 occurrences); use replaceAll`)
  assert.equal((await edit.execute({ path: file, oldString: "a", newString: "b", replaceAll: true })).output, `Edited ${file} (2 replacements)`)
  assert.deepEqual(await read.execute({}), { output: "read: path is required", isError: true })
  assert.deepEqual(await write.execute(undefined), { output: "write: path is required", isError: true })
})

test("grep and glob walk a real tree: node_modules and .git skipped, no ignore file read", async (t) => {
  const dir = tmpdir(t)
  put(dir, "a.txt", "needle here\nnothing\n")
  put(dir, "src/x.ts", "const needle = 1\n")
  put(dir, "src/deep/y.ts", "needle\n")
  put(dir, "node_modules/m/i.ts", "needle")
  put(dir, ".git/config", "needle")
  put(dir, ".gitignore", "ignored.txt\n")
  put(dir, "ignored.txt", "needle ignored\n")
  const { grep, glob } = byName()
  const r = await grep.execute({ pattern: "needle", path: dir })
  assert.deepEqual(r, {
    output: [`${dir}/a.txt:1:needle here`, `${dir}/ignored.txt:1:needle ignored`, `${dir}/src/x.ts:1:const needle = 1`, `${dir}/src/deep/y.ts:1:needle`].join("\n"),
    isError: false,
    metadata: { count: 4 },
  })
  assert.equal((await grep.execute({ pattern: "needle", path: dir, include: "*.ts", limit: 1 })).output, `${dir}/src/x.ts:1:const needle = 1`)
  assert.deepEqual(await glob.execute({ pattern: "**/*.ts", path: dir }), { output: "src/deep/y.ts\nsrc/x.ts", isError: false, metadata: { count: 2 } })
  assert.equal((await glob.execute({ pattern: "*", path: dir })).output, ".gitignore\na.txt\nignored.txt\nsrc/deep/y.ts\nsrc/x.ts")
  assert.deepEqual(await grep.execute({ pattern: "(" }), { output: "grep: invalid regex: Invalid regular expression: /(/: Unterminated group", isError: true })
  assert.deepEqual(await glob.execute({}), { output: "glob: pattern is required", isError: true })
})

test("grep reads its pattern as RegExp does: lookaround and backreferences match, bad patterns fail with V8's message", async (t) => {
  const dir = tmpdir(t)
  const lines = ["ab", "ac", "aa", "cost $42", "cost 42", "xy", "ay", "say 'hi'", "say 'hi\"", "\x01", "a\x01", "foo.bar", "ba", "abab", "é1", "😀x", "AbC", "a\rb", "", "1-2"]
  put(dir, "f.txt", lines.join("\n"))
  const { grep } = byName()
  const patterns = ["a(?=b)", "a(?!b)", "(?<=\\$)\\d+", "(?<!x)y", "(a)\\1", "(?<q>['\"]).*\\k<q>", "\\1", "a\\1", "(?<=a)*", "(?=a)*b", "(?=a)+", "(a)|\\2", "(.)(?=\\1)", "\\k<x>", "(?<x>a)\\k<y>", "(?<=^|\\s)\\$\\d", "^(?!$)", "(?<=(a))b\\1", "(a)\\10", "[\\1]", "(?<=.)\\u{1F600}", "(?=😀).", "(?<=a){2}", "(?<=a)?", "(?<!a)+b", "\\k<y>", "(?<x>a)\\k", "(?<x>a)\\k<x", "(?<x>a)[\\k]", "(?<x>a)(?<=\\k<x>)b", "(?<=(?<z>a))\\k<z>", "((?<=a))*b", "(?=a){2}a", "(?<x>a)|\\k<x>b", "(?:(?<=a)b)+", "\\d+", "foo|bar", "[a-z]+$", "a{2,}", "(?:a)b", "(?<n>a)b", "x{", ")", "^$", "\\bab\\b", "[^a]", "(?<n>a)\\k<n>", "\\k", "(?<n>a)(?<m>b)?\\k<m>", "a(?=b)|c"]
  for (const p of patterns) {
    let want
    try {
      const re = new RegExp(p)
      want = lines.flatMap((l, i) => (re.test(l) ? [`${dir}/f.txt:${i + 1}:${l}`] : [])).join("\n")
    } catch (e) {
      want = `grep: invalid regex: ${e.message}`
    }
    assert.equal((await grep.execute({ pattern: p, path: dir })).output, want, `pattern ${JSON.stringify(p)}`)
  }
})

test("apply_patch applies atomically", async (t) => {
  const dir = tmpdir(t)
  const a = put(dir, "a.txt", "one\ntwo\n")
  const { apply_patch } = byName()
  const added = path.join(dir, "new.txt")
  const bad = ["*** Begin Patch", `*** Add File: ${added}`, "+hi", `*** Update File: ${a}`, "-three", "+3", "*** End Patch"].join("\n")
  assert.deepEqual(await apply_patch.execute({ patchText: bad }), { output: "apply_patch: hunk does not match file contents", isError: true })
  assert.equal(fs.existsSync(added), false)
  const good = ["*** Begin Patch", `*** Add File: ${added}`, "+hi", `*** Update File: ${a}`, "-two", "+2", "*** End Patch"].join("\n")
  assert.deepEqual(await apply_patch.execute({ patchText: good }), {
    output: "Applied patch: 2 file operations", isError: false, metadata: { added: 1, updated: 1, deleted: 0 },
  })
  assert.equal(fs.readFileSync(added, "utf8"), "hi")
  assert.equal(fs.readFileSync(a, "utf8"), "one\n2\n")
})

// ---- processes -----------------------------------------------------------------------------------

test("bash runs a real shell: combined output, exit codes, workdir", async (t) => {
  const dir = tmpdir(t)
  const { bash } = byName()
  assert.deepEqual(await bash.execute({ command: "printf hello-bash" }), { output: "hello-bash", isError: false, metadata: { exitCode: 0 } })
  assert.deepEqual(await bash.execute({ command: "echo out; sleep 0.05; echo err >&2; exit 4" }), {
    output: "out\nerr\n\nbash: command exited with code 4", isError: true, metadata: { exitCode: 4 },
  })
  assert.equal((await bash.execute({ command: "pwd", workdir: dir })).output, `${dir}\n`)
  assert.deepEqual(await bash.execute({}), { output: "bash: command is required", isError: true })
})

test("bash: a timeout kills the command and everything it started", async (t) => {
  const dir = tmpdir(t)
  const pidfile = path.join(dir, "pid")
  const started = Date.now()
  const r = await byName().bash.execute({ command: `sleep 30 & echo $! > '${pidfile}'; echo started; wait`, timeout: 300 })
  assert.deepEqual(r, { output: "bash: command timed out after 300ms\nstarted\n", isError: true })
  assert.ok(Date.now() - started < 5000)
  assert.ok(await gone(Number(fs.readFileSync(pidfile, "utf8"))), "the background sleep is gone")
})

test("bash: ctx.signal aborts the command and its process group", async (t) => {
  const dir = tmpdir(t)
  const pidfile = path.join(dir, "pid")
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 300)
  const r = await byName().bash.execute({ command: `echo go; sleep 30 & echo $! > '${pidfile}'; wait` }, { signal: ac.signal })
  assert.deepEqual(r, { output: "bash: command aborted\ngo\n", isError: true })
  assert.ok(await gone(Number(fs.readFileSync(pidfile, "utf8"))))
})

// ---- web -------------------------------------------------------------------------------------------

test("webfetch GETs from a local server: stripped text, raw html, HTTP errors, timeouts", async (t) => {
  const server = http.createServer((req, res) => {
    if (req.url === "/page") {
      res.setHeader("content-type", "text/html")
      res.end("<html><style>p{}</style><body><h1>Title</h1>  \n\n\n\n<p>Body</p></body></html>")
    } else if (req.url === "/slow") setTimeout(() => res.end("late"), 2000)
    else {
      res.statusCode = 503
      res.end("down")
    }
  })
  await new Promise((r) => server.listen(0, "127.0.0.1", r))
  t.after(() => {
    server.closeAllConnections()
    server.close()
  })
  const base = `http://127.0.0.1:${server.address().port}`
  const { webfetch } = byName()
  assert.deepEqual(await webfetch.execute({ url: `${base}/page` }), { output: "Title\n\nBody", isError: false, metadata: { status: 200, format: "markdown" } })
  const html = await webfetch.execute({ url: `${base}/page`, format: "html" })
  assert.ok(html.output.startsWith("<html><style>"))
  assert.deepEqual(await webfetch.execute({ url: `${base}/gone` }), { output: "HTTP 503", isError: true, metadata: { status: 503 } })
  assert.deepEqual(await webfetch.execute({ url: `${base}/slow`, timeout: 0.2 }), { output: "webfetch: This operation was aborted", isError: true })
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 100)
  assert.deepEqual(await webfetch.execute({ url: `${base}/slow` }, { signal: ac.signal }), { output: "webfetch: This operation was aborted", isError: true })
  assert.deepEqual(await webfetch.execute({ url: "nope" }), { output: "webfetch: Failed to parse URL from nope", isError: true })
})

// ---- question and todowrite -------------------------------------------------------------------------

test("question suspends, then returns the answer's data", async () => {
  const { question, todowrite } = byName()
  const questions = [{ question: "Which env?", header: "Env", options: ["dev", "prod"] }, { question: "Why?" }]
  const asked = await question.execute({ questions })
  assert.equal(asked.isError, true)
  assert.equal(asked.output, "Which env? (options: dev, prod)\nWhy?")
  const req = pendingOf(asked)
  assert.deepEqual(Object.keys(req), ["kind", "prompt", "data", "id"])
  assert.deepEqual(req.data, { questions })
  const answered = await question.execute({ questions }, { answer: { id: req.id, ok: true, data: { answers: ["prod"] } } })
  assert.deepEqual(answered, { output: '{"answers":["prod"]}', isError: false })
  assert.deepEqual(await todowrite.execute({ todos: [{ id: "1", text: "ship", completed: true }] }), {
    output: "[x] ship", isError: false, metadata: { todos: [{ id: "1", text: "ship", completed: true }] },
  })
})

// ---- inside a toolkit ---------------------------------------------------------------------------------

test("a default toolkit holds the built-ins as stable Tool objects", async () => {
  const tk = await createToolkit({})
  assert.deepEqual(tk.tools().map((t) => t.name), NAMES)
  assert.equal(tk.get("bash"), tk.get("bash"))
  assert.equal(tk.tools()[0], tk.get("bash"))
  assert.equal(tk.get("grep").source, "builtin")
  assert.deepEqual(await tk.execute("todowrite", { todos: [] }), { output: "(no todos)", isError: false, metadata: { todos: [] } })
  assert.deepEqual(tk.toOpenAI().map((d) => d.function.name), NAMES)
  assert.equal(JSON.stringify(tk.toOpenAI()[1].function.parameters), DECLARATIONS[1][2])
  const ac = new AbortController()
  setTimeout(() => ac.abort(), 100)
  const r = await tk.execute("bash", { command: "sleep 10" }, { signal: ac.signal })
  assert.deepEqual(r, { output: "bash: command aborted\n", isError: true })
  await tk.close()
})

test("a host tool shadows a built-in of its name; disableTools and the builtins map drop them", async () => {
  const mine = defineTool({ name: "read", description: "my read", run: () => "mine" })
  const tk = await createToolkit({ extraTools: [mine], disableTools: ["bash"], builtins: { tools: { webfetch: false } } })
  assert.deepEqual(tk.tools().map((t) => t.name), ["write", "edit", "grep", "glob", "question", "apply_patch", "todowrite", "read"])
  assert.equal(tk.get("read"), mine)
  assert.equal((await tk.execute("read", {})).output, "mine")
})

test("the model calls a built-in through the client loop", async (t) => {
  const dir = tmpdir(t)
  const file = put(dir, "data.txt", "forty-two\n")
  const llm = await startLLM([oaCalls([{ id: "c1", name: "read", args: { path: file } }]), oaText("it says forty-two")])
  t.after(() => llm.close())
  const client = createClient({ baseUrl: llm.url, style: "openai", model: "m", apiKey: "k" })
  const res = await client.run("what does it say?", { toolkit: await createToolkit({}) })
  assert.equal(res.text, "it says forty-two")
  assert.deepEqual(llm.requests[0].json.tools.map((d) => d.function.name), NAMES)
  assert.deepEqual(llm.requests[1].json.messages.at(-1), { role: "tool", tool_call_id: "c1", content: "forty-two\n" })
})
