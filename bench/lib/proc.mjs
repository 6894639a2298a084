// Linux /proc readers for memory and CPU figures that Node's own counters can't give:
// a process's peak RSS (VmHWM) and the CPU and peak RSS of its child processes (the MCP
// server a toolkit spawns). Everything returns null where /proc is not there.

import os from "node:os"

import { readFileSync, readdirSync } from "node:fs"

/** A `/proc/<pid>/status` field in bytes (VmHWM, VmRSS, ...), or null. */
export function statusBytes(pid, field) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))
    return m ? Number(m[1]) * 1024 : null
  } catch {
    return null
  }
}

/** Fields of /proc/<pid>/stat after the command name (index 0 = state), or null. */
function statFields(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8")
    return text.slice(text.lastIndexOf(")") + 2).split(" ")
  } catch {
    return null
  }
}

/** All live descendants of `pid` (children, grandchildren, ...). */
export function descendants(pid = process.pid) {
  let entries
  try {
    entries = readdirSync("/proc")
  } catch {
    return []
  }
  const children = new Map()
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue
    const f = statFields(name)
    if (!f) continue
    const ppid = Number(f[1])
    if (!children.has(ppid)) children.set(ppid, [])
    children.get(ppid).push(Number(name))
  }
  const out = []
  const queue = [pid]
  while (queue.length) {
    for (const c of children.get(queue.shift()) ?? []) {
      out.push(c)
      queue.push(c)
    }
  }
  return out
}

const CLK_TCK = Number(process.env.BENCH_CLK_TCK) || 100

/** User + system CPU of a process in microseconds (clock-tick resolution), or null. */
export function cpuMicros(pid) {
  const f = statFields(pid)
  if (!f) return null
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK // utime, stime (fields 14 and 15)
}

/** Sum of cpuMicros over `pids` (missing ones count 0). */
export function cpuMicrosOf(pids) {
  let total = 0
  for (const p of pids) total += cpuMicros(p) ?? 0
  return total
}

/** The machine a run happened on, with the load average at its start and end. */
export function machine(loadavgStart) {
  const cpus = os.cpus()
  return {
    cpuModel: cpus[0]?.model ?? "unknown",
    cpus: cpus.length,
    totalMemBytes: os.totalmem(),
    platform: os.platform(),
    release: os.release(),
    node: process.version,
    loadavgStart,
    loadavgEnd: os.loadavg(),
  }
}

/** End a child process that stops when its stdin closes; killed if it has not within 5 s. */
export function stopChild(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve()
    const t = setTimeout(() => child.kill("SIGKILL"), 5000)
    child.on("exit", () => {
      clearTimeout(t)
      resolve()
    })
    child.stdin.end()
  })
}
