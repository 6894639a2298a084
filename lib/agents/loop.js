"use strict"
// The Level-1 agent at work (SPEC §7D-§7E): the completion gate, the guardrails and the Loop.

const { native } = require("../native.js")
const { encode } = require("../stringify.js")
const { fromCore } = require("../decode.js")
const { plainFn, crossing } = require("../options-doc.js")
const { runResult } = require("../types.js")
const { createClient } = require("../client.js")

/** @typedef {import("../../index").agents.Guardrail} Guardrail */
/** @typedef {import("../../index").agents.Completion} Completion */
/** @typedef {import("../../index").agents.LoopRunOptions} LoopRunOptions */
/** @typedef {import("../../index").agents.Outcome} Outcome */
/** @typedef {import("../../index").Hooks} Hooks */
/** @typedef {import("../../index").RunResult} RunResult */
/** @typedef {import("../../index").ClientOptions} ClientOptions */
/** A Toolkit from createToolkit(). @typedef {import("../toolkit.js").Toolkit} Toolkit */
/** @typedef {NonNullable<Hooks["beforeTool"]>} BeforeTool */
/** @typedef {Parameters<BeforeTool>[0]} BeforeToolEvent */
/** What a `beforeTool` hook may answer besides nothing. @typedef {Exclude<Awaited<ReturnType<BeforeTool>>, void>} BeforeToolAnswer */
/**
 * The host's side of one run: a prompt in, a RunResult out.
 * @typedef {(prompt: string) => RunResult | Promise<RunResult>} Ask
 */

// The completion gate, the guardrails and the Loop (SPEC §7D-§7E): the rules are the core's
// (agents::gate); here they meet the host's functions and the client.

/**
 * `guardrails` compiled into one `beforeTool` ahead of the one of `hooks`; with none, `hooks`
 * itself. The list's items are checked when they are consulted, not here.
 * @template {Hooks | null | undefined} H
 * @param {readonly unknown[] | null | undefined} guardrails
 * @param {H} hooks
 * @returns {H | Hooks}
 */
function guardedHooks(guardrails, hooks) {
  if (!guardrails || guardrails.length === 0) return hooks
  // The list and the prior hook cross as one document; the core reads them (a guardrail that
  // is not a function fails when it is consulted). Each is called as a plain function, as the
  // reference calls them.
  const rails = [...guardrails].map(plainFn)
  const handle = new native.NativeGuard(...crossing({ guardrails: rails, beforeTool: plainFn(hooks?.beforeTool) }))
  /**
   * @param {BeforeToolEvent} ev
   * @returns {Promise<BeforeToolAnswer | undefined>}
   */
  const beforeTool = async (ev) => {
    // The JSON of the first refusal's (or the prior hook's) answer, `null` for none.
    const out = /** @type {BeforeToolAnswer | null} */ (fromCore(await handle.run(encode(ev))))
    return out === null ? undefined : out
  }
  return { ...(hooks ?? {}), beforeTool }
}

/**
 * The built-in verifier over a run's result.
 * @param {unknown} result a RunResult (any value; it crosses as JSON)
 * @returns {import("../../index").agents.Verdict}
 */
const allTodosDone = (result) => JSON.parse(native.allTodosDone(encode(result)))

/**
 * `prompt` through `ask` behind the completion gate; without a gate, one plain `ask`.
 * @param {Ask} ask
 * @param {string} prompt
 * @param {Completion | null | undefined} completion its fields are checked before they cross
 * @returns {Promise<RunResult>}
 */
async function runGated(ask, prompt, completion) {
  if (!completion) return ask(prompt)
  // `ask` and the completion cross as one document; the core checks them as the reference
  // does. `verify` is called as a method of the completion, `ask` as a plain function.
  const out = await native.runGated(...crossing({ ask: plainFn(ask), completion }), String(prompt))
  return /** @type {RunResult} */ (runResult(fromCore(out)))
}

/** One agent at work: `run` it, read `status` and `turns`. */
class Loop {
  /** @type {string} */
  #status = "idle"
  /** @type {number} */
  #turns = 0

  /**
   * @param {import("./agent.js").Agent} agent whose spec (soul, guardrails, hooks, completion) each run reads
   * @param {ClientOptions} options the client options of every run
   * @param {Toolkit} toolkit the tools of every run
   */
  constructor(agent, options, toolkit) {
    /** @type {import("./agent.js").Agent} */
    this.agent = agent
    /** @type {ClientOptions} */
    this.options = options
    /** @type {Toolkit} */
    this.toolkit = toolkit
  }

  /** @returns {string} `idle`, `running`, `error`, or the status of a run that did not finish */
  get status() {
    return this.#status
  }

  /** @returns {number} */
  get turns() {
    return this.#turns
  }

  /**
   * @param {string} prompt
   * @param {LoopRunOptions} [opts]
   * @returns {Promise<Outcome>}
   */
  async run(prompt, opts = {}) {
    const completion = this.agent.spec.completion
    const client = createClient(this.#clientOptions(opts))
    this.#status = "running"
    let attempts = 0
    /** @type {unknown[]} */
    let history = []
    /**
     * @param {string} p
     * @returns {Promise<RunResult>}
     */
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

  /**
   * The client options of one call: the agent's soul and guarded hooks, and `model` if given.
   * @param {LoopRunOptions} opts
   * @returns {ClientOptions}
   */
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
