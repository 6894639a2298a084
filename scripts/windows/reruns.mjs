#!/usr/bin/env node
// The Windows suite's test files that wine could not start, read from the runner's TAP output
// (scripts/windows.sh runs them once more). Under wine, starting a child process now and then
// fails with `spawn UNKNOWN` before the file's code runs: the runner then reports the whole file
// as one failed test whose error is that. Prints those files (as __test__/<name>), one per line,
// and exits 0 when they are the only failures; exits 1 when any test itself failed (nothing is
// run again then), or when nothing failed at all.
//   node scripts/windows/reruns.mjs <suite output>
import { readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

export function reruns(tap) {
  const lines = tap.split(/\r?\n/)
  const files = []
  let other = 0
  for (let i = 0; i < lines.length; i++) {
    const m = /^not ok \d+ - (.*)$/.exec(lines[i])
    if (!m) continue
    // The entry's YAML block runs to its closing "  ...".
    let spawnFailed = false
    for (let j = i + 1; j < lines.length && lines[j] !== "  ..."; j++) {
      if (/^ {2}error: 'spawn UNKNOWN'$/.test(lines[j])) spawnFailed = true
    }
    const file = /[\\/]__test__[\\/]+([\w.-]+\.test\.m?[jc]s)$/.exec(m[1])
    if (spawnFailed && file) files.push(`__test__/${file[1]}`)
    else other++
  }
  return { files, other }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { files, other } = reruns(readFileSync(process.argv[2], "utf8"))
  if (other > 0 || files.length === 0) process.exit(1)
  console.log(files.join("\n"))
}
