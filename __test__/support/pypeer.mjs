// The official Python MCP SDK as a peer (py-mcp, installed by scripts/peers.sh): where it is,
// why a test skips without it, and how a program of __test__/peers/mcp runs with it.
import fs from "node:fs"
import path from "node:path"
import { spawn } from "node:child_process"
import { REPO, cleanEnv } from "./llm.mjs"

const PEERS = process.env.TOOLNEXUS_PEERS_DIR ?? path.join(REPO, ".peers")
export const PY_MCP = path.join(PEERS, "py-mcp")
const PROGRAMS = path.join(REPO, "__test__", "peers", "mcp")

/** Why a test of the Python peer skips, or false when the peer is installed. */
export const pySkip =
  !fs.existsSync(path.join(PY_MCP, ".installed")) &&
  `the Python MCP SDK peer (py-mcp) is not installed in ${PEERS} (eval "$(scripts/peers.sh)" installs it and sets TOOLNEXUS_PEERS_DIR)`

/**
 * Run one of the Python SDK programs in __test__/peers/mcp: the JSON lines it printed, and what
 * to say when it printed none (its exit code and the end of its stderr).
 * @param {string} program
 * @param {string[]} args
 * @param {number} timeoutMs
 * @returns {Promise<{ lines: any[], failure: string }>}
 */
export function python(program, args, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn("python3", [path.join(PROGRAMS, program), ...args], {
      cwd: REPO,
      env: { ...cleanEnv(), PYTHONPATH: PY_MCP },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let out = ""
    let err = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (err += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.on("close", (code) => {
      clearTimeout(timer)
      const lines = out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
      resolve({ lines, failure: `no answer (exit ${code}): ${err.slice(-1500)}` })
    })
  })
}
