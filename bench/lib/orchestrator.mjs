// Helpers the bench orchestrators share (run.mjs, stream.mjs, agents.mjs, serve.mjs): settings
// from the environment, children that announce themselves with one JSON line on stdout (the
// scripted endpoints, the serve peers), the endpoint's control requests, and the workers' own
// environment and result line; the versions a report records.

import { execFileSync, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import path from "node:path"

/** A count setting, BENCH_<name> or <name>: a whole number >= 0, or `fallback` when unset. */
export function num(name, fallback) {
  const raw = process.env[`BENCH_${name}`] ?? process.env[name]
  if (raw === undefined || raw === "") return fallback
  const v = Number(raw)
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name}=${raw} is not a non-negative number`)
  return Math.floor(v)
}

/** The kernel's clock ticks per second (for /proc CPU figures), 100 when getconf can't say. */
export function clockTicks() {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
}

/** The parsed first line `child` prints on stdout; rejects with `early(code)` if it exits before. */
export function firstJsonLine(child, early) {
  return new Promise((resolve, reject) => {
    let buf = ""
    const onExit = (code) => reject(early(code))
    const onData = (d) => {
      buf += d
      const nl = buf.indexOf("\n")
      if (nl === -1) return
      child.stdout.off("data", onData)
      child.stdout.resume() // keep draining whatever else it prints
      child.off("exit", onExit)
      resolve(JSON.parse(buf.slice(0, nl)))
    }
    child.on("exit", onExit)
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", onData)
  })
}

/** Spawn a scripted endpoint (`node <args>`, `what` names it in errors) and wait for its {"listening": port} line. */
export function spawnEndpoint(args, what) {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] })
  const failed = new Promise((_, reject) => child.once("error", reject))
  const ready = firstJsonLine(child, (code) => new Error(`${what} exited early (code ${code})`))
  return Promise.race([ready, failed]).then(({ listening }) => ({ child, origin: `http://127.0.0.1:${listening}` }))
}

/** A control request to the endpoint (POST /reset, GET /stats); its JSON answer. */
export async function control(origin, method, p) {
  const res = await fetch(origin + p, { method })
  if (!res.ok) throw new Error(`endpoint ${method} ${p}: HTTP ${res.status}`)
  return res.json()
}

/** Environment for a worker: ours, minus anything that would make a library phone home, plus `extra`. */
export function workerEnv(extra) {
  const env = { ...process.env }
  for (const k of Object.keys(env)) if (/^(LANGSMITH_|LANGCHAIN_)/.test(k)) delete env[k]
  return { ...env, ...extra }
}

/** Wait for a worker to close (killed after `timeoutS`), logging its other output under `tag`; its BENCH_RESULT (or null) and exit. */
export async function workerResult(child, tag, timeoutS) {
  let result = null
  let pending = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (d) => {
    pending += d
    let nl
    while ((nl = pending.indexOf("\n")) !== -1) {
      const text = pending.slice(0, nl)
      pending = pending.slice(nl + 1)
      if (text.startsWith("BENCH_RESULT ")) result = JSON.parse(text.slice(13))
      else if (text.trim()) console.error(tag, text)
    }
  })
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (d) => {
    for (const l of d.split("\n")) if (l.trim()) console.error(tag, l)
  })
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutS * 1000)
  const code = await new Promise((resolve) => child.once("close", (c, sig) => resolve(sig ?? c)))
  clearTimeout(timer)
  return { result, code }
}

/** The `version` field of the package.json at `file`, or "missing". */
export function versionOf(file) {
  try {
    return JSON.parse(readFileSync(file, "utf8")).version
  } catch {
    return "missing"
  }
}

/** The package's version at `root`, with its git commit and whether the tree had uncommitted changes. */
export function toolnexusVersion(root) {
  let v = versionOf(path.join(root, "package.json"))
  try {
    // git's own complaint about a folder outside any repository stays out of the report's output.
    const quiet = { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }
    const head = execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"], quiet).trim()
    const dirty = execFileSync("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"], quiet).trim()
    v += ` (${head}${dirty ? ", uncommitted changes" : ""})`
  } catch {}
  return v
}
