// The durable engines a test run has: a fresh SQLite file always; PostgreSQL and Redis when
// .ci/run (scripts/engines.sh) started them and named them in TOOLNEXUS_TEST_POSTGRES /
// TOOLNEXUS_TEST_REDIS.
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

/** `[name, url]` for each engine of this run; a missing one is said on the test output. */
export function engines(prefix = "tn-engines-") {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  const urls = [["sqlite", `sqlite:${path.join(dir, "state.db")}`]]
  for (const [name, v] of [["postgres", "TOOLNEXUS_TEST_POSTGRES"], ["redis", "TOOLNEXUS_TEST_REDIS"]]) {
    if (process.env[v]) urls.push([name, process.env[v]])
    else console.log(`# ${v} is not set: ${name} is not tested in this run (.ci/run starts it)`)
  }
  return urls
}

/** A name no other test (of this run or an earlier one on the same server) has used. */
export const unique = (name) => `${name}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`

/** A JSON-RPC call to a served A2A endpoint: the parsed response. */
export async function rpc(url, method, params) {
  const res = await fetch(url + "/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  })
  return res.json()
}
