"use strict"
// The Level-1 agent at work (SPEC §7D-§7E): the completion gate, the guardrails and the Loop.

const { native } = require("../native.js")
const { encode, fromCore, bridge, callable } = require("../crossing.js")
const { runResult } = require("../types.js")
const { createClient } = require("../client.js")

// The completion gate, the guardrails and the Loop (SPEC §7D-§7E): the rules are the core's
// (agents::gate); here they meet the host's functions and the client.

/** A guardrail as the core calls it; one that is not a function fails when it is consulted. */
const guardrailFn = (g, i) =>
  typeof g === "function"
    ? g
    : () => {
        throw new TypeError(`guardedHooks: \`guardrails[${i}]\` is not a function (got ${typeof g})`)
      }

function guardedHooks(guardrails, hooks) {
  if (!guardrails || guardrails.length === 0) return hooks
  const rails = [...guardrails].map((g, i) => bridge(guardrailFn(g, i)))
  const prior = callable("guardedHooks", "hooks.beforeTool", hooks?.beforeTool)
  const handle = new native.NativeGuard(rails, prior && bridge(prior))
  const beforeTool = async (ev) => {
    const out = fromCore(await handle.run(encode(ev)))
    return out === null ? undefined : out
  }
  return { ...(hooks ?? {}), beforeTool }
}

const allTodosDone = (result) => JSON.parse(native.allTodosDone(encode(result)))

async function runGated(ask, prompt, completion) {
  if (!completion) return ask(prompt)
  const { maxAttempts, verify } = completion
  const askFn = callable("runGated", "ask", ask) ?? (() => {
    throw new TypeError(`runGated: \`ask\` is not a function (got ${typeof ask})`)
  })
  const out = await native.runGated(
    bridge(askFn),
    String(prompt),
    typeof maxAttempts === "number" ? maxAttempts : undefined,
    typeof verify === "function" ? bridge(verify, completion) : undefined,
  )
  return runResult(fromCore(out))
}

/** One agent at work: `run` it, read `status` and `turns`. */
class Loop {
  #status = "idle"
  #turns = 0

  constructor(agent, options, toolkit) {
    this.agent = agent
    this.options = options
    this.toolkit = toolkit
  }

  get status() {
    return this.#status
  }

  get turns() {
    return this.#turns
  }

  async run(prompt, opts = {}) {
    const completion = this.agent.spec.completion
    const client = createClient(this.#clientOptions(opts))
    this.#status = "running"
    let attempts = 0
    let history = []
    const ask = async (p) => {
      attempts++
      const r = await client.run(p, { toolkit: this.toolkit, history })
      this.#turns += r.turns
      history = r.messages
      return r
    }
    try {
      const r = await runGated(ask, prompt, completion)
      if (r.status && r.status !== "done") {
        this.#status = r.status
        const stoppedBy = r.limit === "completion" ? r.text : `run reported ${r.status}`
        return { text: r.text, status: r.status, stoppedBy, attempts, turns: this.#turns, result: r }
      }
      this.#status = "idle"
      return { text: r.text, status: "done", attempts, turns: this.#turns, result: r }
    } catch (e) {
      this.#status = "error"
      throw e
    }
  }

  /** The client options of one call: the agent's soul and guarded hooks, and `model` if given. */
  #clientOptions(opts) {
    const spec = this.agent.spec
    const base = {
      ...this.options,
      systemPrompt: spec.soul ?? this.options.systemPrompt,
      hooks: guardedHooks(spec.guardrails, spec.hooks ?? this.options.hooks),
    }
    if (!opts.model) return base
    return { ...base, requestParams: { ...(base.requestParams ?? {}), model: opts.model } }
  }
}

module.exports = { guardedHooks, allTodosDone, runGated, Loop }
