// The fan-out scenario every runner of the agents bench performs, shared by the runners, the
// worker and the endpoint so all of them agree on the strings. Keep it free of dependencies.
//
// One "tree" = the coordinator is asked PROMPT; the scripted coordinator model answers with ONE
// assistant message carrying FANOUT `task` tool calls ({agent: "worker", prompt: "job <i>"});
// each of those runs a worker agent, whose scripted model calls the JS tool `lookup` once
// ({key: "<i>"}) and then answers `done <i>`; with all FANOUT tool results back, the coordinator
// model answers FINAL_TEXT.
// Per tree: 2 + 2 × FANOUT LLM requests, FANOUT `task` calls + FANOUT `lookup` executions.

export const FANOUT = 100
export const PROMPT = "Split the work into jobs and report when every job is done."
export const COORDINATOR_MODEL = "bench-coordinator"
export const WORKER_MODEL = "bench-worker"
export const API_KEY = "bench-not-a-key"

export const COORDINATOR_SOUL = "You are the coordinator. Delegate each job to a worker with the task tool."
export const WORKER_SOUL = "You are a worker. Look the job's key up, then report it done."
export const WORKER_DOES = "Runs one job: looks its key up and reports it done"
export const COORDINATOR_DOES = "Fans jobs out to workers"

export const FINAL_TEXT = `all ${FANOUT} jobs done`
export const LLM_REQUESTS_PER_TREE = 2 + 2 * FANOUT
export const TOOL_CALLS_PER_TREE = 2 * FANOUT

export const jobPrompt = (i) => `job ${i}`
export const workerAnswer = (i) => `done ${i}`
export const lookupValue = (key) => `value-${key}`

/** Token usage the endpoint reports per reply (so a whole tree's total is known). */
export const COORDINATOR_USAGE = { prompt_tokens: 40, completion_tokens: 10, total_tokens: 50 }
export const WORKER_USAGE = { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 }
export const TREE_TOKENS = 2 * COORDINATOR_USAGE.total_tokens + 2 * FANOUT * WORKER_USAGE.total_tokens

export const LOOKUP_DESCRIPTION = "Look a job's key up"
export const LOOKUP_SCHEMA = {
  type: "object",
  properties: { key: { type: "string", description: "The job's key" } },
  required: ["key"],
}

/** Executions of `lookup` in this process (the worker checks it per tree). */
export const lookups = { count: 0 }

/** The `lookup` tool's function: trivial, synchronous JS. */
export function lookup(args) {
  lookups.count++
  return lookupValue(String(args.key))
}
