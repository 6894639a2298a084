// The agent runtime: `agents.agent("coordinator", { team: [worker], ... }).run(PROMPT, opts)` per
// tree. Each run builds its own AgentRuntime (as `Agent.run` does), the coordinator's `task`
// tool spawns, wakes, waits on and closes one worker handle per call, and every turn goes
// through the runtime's budgets and gates. The same module drives the reference package's
// runtime when `mod` is that package (same API).
//
// Variants (the harness passes one):
//   t16       coordinator budget { maxConcurrent: FANOUT, maxChildren: FANOUT }, maxConcurrentTurns 16
//   t8        the same with the default maxConcurrentTurns (8)
//   defaults  every cap at its default: 8 running children at a time (the rest queue FIFO), 8 turns

import {
  API_KEY,
  COORDINATOR_DOES,
  COORDINATOR_MODEL,
  COORDINATOR_SOUL,
  FANOUT,
  LOOKUP_DESCRIPTION,
  LOOKUP_SCHEMA,
  PROMPT,
  WORKER_DOES,
  WORKER_MODEL,
  WORKER_SOUL,
  lookup,
} from "../scenario.mjs"

const VARIANTS = {
  t16: { budget: { maxConcurrent: FANOUT, maxChildren: FANOUT }, maxConcurrentTurns: 16 },
  t8: { budget: { maxConcurrent: FANOUT, maxChildren: FANOUT } },
  defaults: {},
}

export async function setup({ baseURL, mod, variant = "t16" }) {
  const v = VARIANTS[variant]
  if (!v) throw new Error(`unknown runtime variant ${JSON.stringify(variant)}`)
  const { agents, defineTool } = mod
  if (typeof agents?.agent !== "function") throw new Error("this build has no agents.agent (the agent runtime is not in it)")
  if (typeof agents?.AgentRuntime !== "function") throw new Error("this build has no agents.AgentRuntime")
  const worker = agents.agent("worker", {
    does: WORKER_DOES,
    soul: WORKER_SOUL,
    model: WORKER_MODEL,
    uses: { tools: [defineTool({ name: "lookup", description: LOOKUP_DESCRIPTION, inputSchema: LOOKUP_SCHEMA, run: lookup })] },
  })
  const coordinator = agents.agent("coordinator", {
    does: COORDINATOR_DOES,
    soul: COORDINATOR_SOUL,
    model: COORDINATOR_MODEL,
    team: [worker],
    ...(v.budget ? { budget: v.budget } : {}),
  })
  const opts = {
    llm: { baseUrl: baseURL, style: "openai", model: COORDINATOR_MODEL, apiKey: API_KEY },
    ...(v.maxConcurrentTurns ? { maxConcurrentTurns: v.maxConcurrentTurns } : {}),
  }
  let maxObservedConcurrentTurns = 0
  return {
    runTree: async () => {
      const r = await coordinator.run(PROMPT, opts)
      const seen = r.runtime?.maxObservedConcurrentTurns
      if (typeof seen === "number" && seen > maxObservedConcurrentTurns) maxObservedConcurrentTurns = seen
      const handles = typeof r.runtime?.list === "function" ? r.runtime.list().length : null
      return { text: r.text, status: r.status, handles }
    },
    info: () => ({ maxObservedConcurrentTurns }),
  }
}
