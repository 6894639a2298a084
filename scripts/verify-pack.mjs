#!/usr/bin/env node
// Installs what a release publishes the way a user gets it, and checks it works. In fresh
// temporary projects outside the repository, with no Rust on PATH:
//   1. the root tarball, its optional dependency on this host's platform package resolved to the
//      platform tarball (an `overrides` entry, as the registry would resolve it): ESM `import`
//      and CJS `require` work, a program runs createClient + defineTool against a scripted local
//      endpoint, and `npm ls` shows the platform package;
//   2. the root tarball alone (the platform package absent): loading fails with the loader's
//      error, which names the package and the install command.
// Then publint --strict on both packages and @arethetypeswrong/cli on the root tarball (from the npm registry;
// --no-lint skips them). Needs `npm run build` first. Exit code 1 on any failure.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync } from "node:fs"
import { spawnSync } from "node:child_process"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { packLocal } from "./pack-local.mjs"
import { readRoot } from "./targets.mjs"

const lint = !process.argv.includes("--no-lint")
// `--node=<path>` (repeatable): also run the ESM, CJS and program checks with that Node binary.
const nodes = [process.execPath, ...process.argv.filter((a) => a.startsWith("--node=")).map((a) => a.slice(7))]
// `--seeds=<dir>`: also run the reference pages' examples in <dir> against the installed package, with
// the shared examples runner beside it (<dir>/../tools/docs-examples.mjs).
const seeds = process.argv.find((a) => a.startsWith("--seeds="))?.slice(8)
const keep = process.argv.includes("--keep")
// `--abi=<platform>`: verify another platform's cross-built addon (linux-arm64-gnu, run under qemu):
// npm installs for that CPU, and every check runs with the `--node` binaries given (that
// platform's Node), none with this one.
const abi = process.argv.find((a) => a.startsWith("--abi="))?.slice(6)
const cpuOf = { "linux-arm64-gnu": "arm64", "linux-x64-gnu": "x64" }
if (abi && !cpuOf[abi]) {
  console.error(`verify-pack: --abi=${abi} is not one this script can install (${Object.keys(cpuOf).join(", ")})`)
  process.exit(2)
}
const installFlags = abi ? [`--cpu=${cpuOf[abi]}`] : []
if (abi && nodes.length < 2) {
  console.error("verify-pack: --abi needs --node=<that platform's node>")
  process.exit(2)
}
const runners = abi ? nodes.slice(1) : nodes
const mainNode = runners[0]
const pkg = readRoot()
const work = mkdtempSync(path.join(os.tmpdir(), "toolnexus-verify-"))
let failed = 0

const check = (ok, what, detail = "") => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${!ok && detail ? `\n${detail}` : ""}`)
  if (!ok) failed++
}

// What a user without Rust has: cargo, rustc and rustup answer "not found" from a directory put first
// on PATH. (Dropping the directories that hold them would drop /usr/bin, and node and npm with it,
// on a machine with Debian's Rust.)
const isWin = process.platform === "win32"
const noRust = path.join(work, "no-rust")
mkdirSync(noRust, { recursive: true })
for (const b of ["cargo", "rustc", "rustup"]) {
  if (isWin) writeFileSync(path.join(noRust, `${b}.cmd`), "@exit /b 127\r\n")
  else writeFileSync(path.join(noRust, b), "#!/bin/sh\necho \"$0: not installed\" >&2\nexit 127\n", { mode: 0o755 })
}
const noRustPath = [noRust, process.env.PATH].join(path.delimiter)
const env = { ...process.env, PATH: noRustPath, CARGO_HOME: path.join(work, "no-cargo"), RUSTUP_HOME: path.join(work, "no-rustup") }

const run = (cmd, args, cwd) => spawnSync(cmd, args, { cwd, env, encoding: "utf8", shell: isWin, timeout: 300_000 })

function project(name, extra = {}) {
  const dir = path.join(work, name)
  spawnSync(process.execPath, ["-e", `require("fs").mkdirSync(${JSON.stringify(dir)})`])
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, private: true, version: "1.0.0", ...extra }, null, 2))
  return dir
}

try {
  const packed = packLocal(path.join(work, "tarballs"), abi, { release: true })
  const plat = `${pkg.napi.packageName}-${packed.abi}`
  const kb = (n) => `${(n / 1024).toFixed(1)} KiB`
  console.log(`root     ${path.basename(packed.root.file)}: ${kb(packed.root.size)} packed, ${kb(packed.root.unpackedSize)} unpacked, ${packed.root.entries} files`)
  console.log(`platform ${path.basename(packed.platform.file)}: ${kb(packed.platform.size)} packed, ${kb(packed.platform.unpackedSize)} unpacked`)
  console.log(`together ${kb(packed.root.size + packed.platform.size)} packed, ${kb(packed.root.unpackedSize + packed.platform.unpackedSize)} unpacked`)

  check(spawnSync("cargo", ["--version"], { env, shell: isWin }).status !== 0, "no cargo on the PATH the installs run with")

  // 1. root + platform package.
  const ok = project("with-platform", { overrides: { [plat]: `file:${packed.platform.file}` } })
  let r = run("npm", ["install", "--no-audit", "--no-fund", ...installFlags, packed.root.file], ok)
  check(r.status === 0, "npm install of the root tarball (platform package through its optional dependency)", r.stderr)
  writeFileSync(
    path.join(ok, "esm.mjs"),
    `import tn, { createClient, defineTool } from "toolnexus"
if (typeof createClient !== "function" || typeof defineTool !== "function" || tn.createClient !== createClient) throw new Error("bad ESM exports")
console.log("esm ok")
`,
  )
  writeFileSync(
    path.join(ok, "cjs.cjs"),
    `const { createClient, defineTool, sanitize } = require("toolnexus")
if (typeof createClient !== "function" || typeof defineTool !== "function" || sanitize("a b") !== "a_b") throw new Error("bad CJS exports")
console.log("cjs ok")
`,
  )
  writeFileSync(
    path.join(ok, "program.mjs"),
    `import http from "node:http"
import { createClient, createToolkit, defineTool } from "toolnexus"
// A scripted OpenAI-style endpoint: first a call of "add", then an answer quoting its result.
const server = http.createServer((req, res) => {
  let raw = ""
  req.on("data", (c) => (raw += c))
  req.on("end", () => {
    const body = JSON.parse(raw)
    const tool = body.messages.findLast((m) => m.role === "tool")
    const message = tool
      ? { role: "assistant", content: "sum=" + tool.content }
      : { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: '{"a":2,"b":40}' } }] }
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ choices: [{ message }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }))
  })
})
await new Promise((r) => server.listen(0, "127.0.0.1", r))
const add = defineTool({
  name: "add",
  description: "add two numbers",
  inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  run: ({ a, b }) => String(a + b),
})
const toolkit = await createToolkit({ extraTools: [add], builtins: false })
const client = createClient({ baseUrl: "http://127.0.0.1:" + server.address().port, style: "openai", model: "m", apiKey: "k" })
const result = await client.run("add 2 and 40", { toolkit })
server.close()
await toolkit.close?.()
console.log(result.status, result.text)
`,
  )
  for (const node of runners) {
    const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim()
    for (const [file, want] of [["esm.mjs", /esm ok/], ["cjs.cjs", /cjs ok/], ["program.mjs", /sum=42/]]) {
      r = run(node, [file], ok)
      check(r.status === 0 && want.test(r.stdout), `node ${version} ${file} -> ${want.source}`, r.stdout + r.stderr)
    }
  }
  if (seeds) {
    const tool = path.resolve(seeds, "..", "tools", "docs-examples.mjs")
    const root = path.resolve(seeds, "..", "fixtures")
    const out = path.join(work, "seeds-out")
    // Under another platform's Node, the programs the runner starts use it too (its PATH).
    const seedEnv = abi ? { ...env, PATH: [path.dirname(mainNode), env.PATH].join(path.delimiter) } : env
    const tsx = path.join(fileURLToPath(new URL("..", import.meta.url)), "node_modules", ".bin", "tsx")
    r = spawnSync(mainNode, [tool, "--docs", path.resolve(seeds), "--pkg", path.join(ok, "node_modules", "toolnexus"), "--out", out, "--root", root, "--tsx", tsx], { cwd: ok, env: seedEnv, encoding: "utf8", timeout: 600_000 })
    check(r.status === 0 && /\b0 failed/.test(r.stdout), "the seed examples run against the installed package", r.stdout + r.stderr)
    console.log(r.stdout.trim().split("\n").at(-1).replace(/^/, "     "))
  }
  r = run("npm", ["ls", "--all"], ok)
  check(r.stdout.includes(`${plat}@${pkg.version}`), `npm ls shows ${plat}@${pkg.version}`, r.stdout + r.stderr)
  console.log(r.stdout.trim().replace(/^/gm, "     "))
  const installed = readdirSync(path.join(ok, "node_modules", "@toolnexus"))
  check(installed.length === 1, `only this host's platform package is installed (${installed.join(", ")})`)

  // 2. root alone.
  const bare = project("without-platform")
  r = run("npm", ["install", "--no-audit", "--no-fund", ...installFlags, packed.root.file], bare)
  check(r.status === 0, "npm install of the root tarball alone succeeds (the platform package is optional)", r.stderr)
  r = run(mainNode, ["-e", "require('toolnexus')"], bare)
  const fix = `npm install ${plat}@${pkg.version}`
  check(r.status !== 0 && r.stderr.includes(fix) && r.stderr.includes("Supported:"), `loading fails with the fix: ${fix}`, r.stderr)
  console.log(r.stderr.split("\n").filter((l) => l.startsWith("toolnexus:") || /^(Looked|Fix|Supported)/.test(l)).map((l) => "     " + l).join("\n"))

  if (lint) {
    // The root tarball as published: publint on its unpacked contents, attw on the tarball.
    const unpacked = path.join(bare, "node_modules", "toolnexus")
    r = run("npx", ["-y", "publint@latest", "--strict", unpacked], work)
    check(r.status === 0 && !/Suggestions|Warnings|Errors/.test(r.stdout + r.stderr), "publint --strict toolnexus", r.stdout + r.stderr)
    console.log((r.stdout + r.stderr).trim().replace(/^/gm, "     "))
    const platUnpacked = path.join(ok, "node_modules", ...plat.split("/"))
    r = run("npx", ["-y", "publint@latest", "--strict", platUnpacked], work)
    check(r.status === 0 && !/Suggestions|Warnings|Errors/.test(r.stdout + r.stderr), `publint --strict ${plat}`, r.stdout + r.stderr)
    r = run("npx", ["-y", "@arethetypeswrong/cli@latest", packed.root.file, "--format", "table-flipped"], work)
    check(r.status === 0, "@arethetypeswrong/cli", r.stdout + r.stderr)
    console.log((r.stdout + r.stderr).trim().replace(/^/gm, "     "))
  }
} catch (e) {
  check(false, "verify-pack", e.stack)
} finally {
  if (keep) console.log(`kept ${work}`)
  else rmSync(work, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
