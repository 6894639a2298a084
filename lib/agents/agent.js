"use strict"
// The Level-1 agent (SPEC §7D-§7E): a spec, its team as a registry, run on a runtime or as a
// Loop, a persona from a directory on its own heartbeat.

const fs = require("node:fs")
const path = require("node:path")
const { bridge } = require("../call-convention.js")
const { defineTool } = require("../define-tool.js")
const { composeSoul, memoryTool, agentConstants } = require("./home.js")
const { guardedHooks, Loop } = require("./loop.js")
const { AgentRuntime, isVerbError, RUNTIME } = require("./runtime.js")

/** @typedef {import("./runtime.js").AgentDef} AgentDef */
/** @typedef {import("./runtime.js").RuntimeOptions} RuntimeOptions */
/** @typedef {import("./runtime.js").LookupRuntime} LookupRuntime */
/** @typedef {import("../../index").agents.TaskResult} TaskResult */
/** @typedef {import("../../index").ClientOptions} ClientOptions */
/** A Toolkit from createToolkit(). @typedef {import("../toolkit.js").Toolkit} Toolkit */

/** @typedef {import("./runtime.js").Tool} Tool */

/**
 * An agent's spec (`agents.AgentSpec` of index.d.ts): its tools the JS side's Tool objects,
 * its team made of this module's Agents, its lifecycle callbacks handed the runtime's Handles.
 * @typedef {Omit<import("../../index").agents.AgentSpec, "uses" | "team" | "onSpawn" | "onClose"> & {
 *   uses?: { tools?: Tool[] },
 *   team?: Agent[],
 *   onSpawn?: AgentDef["onSpawn"],
 *   onClose?: AgentDef["onClose"],
 * }} AgentSpec
 */

/** The runtime options of a run: all but the registry, which the agent makes. @typedef {Omit<RuntimeOptions, "registry">} AgentRunOptions */
/** What `Agent.run` resolves with: the task's result and the runtime it ran on. @typedef {TaskResult & { runtime: AgentRuntime }} AgentRunResult */
/** `agents.FromDirOptions`, its tools the JS side's Tool objects. @typedef {Omit<import("../../index").agents.FromDirOptions, "tools"> & { tools?: Tool[] }} FromDirOptions */
/** @typedef {import("../../index").agents.HeartbeatOptions} HeartbeatOptions */

/**
 * A persona started on its heartbeat: its runtime, the beats so far, and how to stop it.
 * @typedef {object} StartedAgent
 * @property {AgentRuntime} runtime
 * @property {string[]} beats
 * @property {() => Promise<void>} stop
 */

/** A Level-1 agent: a name and a spec. */
class Agent {
  /**
   * @param {string} name
   * @param {AgentSpec} spec
   */
  constructor(name, spec) {
    /** @type {string} */
    this.name = name
    /** @type {AgentSpec} */
    this.spec = spec
  }

  /**
   * This agent and its transitive team, as a runtime registry.
   * @param {Record<string, AgentDef>} [acc] the registry so far (an agent already in it is skipped)
   * @returns {Record<string, AgentDef>}
   */
  registry(acc = {}) {
    if (acc[this.name]) return acc
    const spec = this.spec
    let soul = spec.soul ?? ""
    if (spec.soulFile) soul = fs.readFileSync(spec.soulFile, "utf8")
    acc[this.name] = {
      name: this.name,
      does: spec.does,
      soul,
      model: spec.model ?? "inherit",
      tools: spec.uses?.tools,
      team: (spec.team ?? []).map((a) => a.name),
      budget: spec.budget,
      waitFor: spec.waitFor,
      onSpawn: spec.onSpawn,
      onClose: spec.onClose,
      hooks: guardedHooks(spec.guardrails, spec.hooks),
      onMetric: spec.onMetric,
      completion: spec.completion,
    }
    for (const t of spec.team ?? []) t.registry(acc)
    return acc
  }

  /**
   * This agent at work with a client's options and a toolkit.
   * @param {ClientOptions} options
   * @param {Toolkit} toolkit
   * @returns {Loop}
   */
  loop(options, toolkit) {
    return new Loop(this, options, toolkit)
  }

  /**
   * A runtime whose registry is this agent and its team.
   * @param {AgentRunOptions} [opts]
   * @returns {AgentRuntime}
   */
  createRuntime(opts = {}) {
    return new AgentRuntime({ ...opts, registry: this.registry() })
  }

  /**
   * One task for this agent on a runtime of its own.
   * @param {unknown} prompt taken by its string form
   * @param {AgentRunOptions} [opts]
   * @returns {Promise<AgentRunResult>}
   */
  async run(prompt, opts = {}) {
    const runtime = this.createRuntime(opts)
    const r = await runtime.runAgent(this.name, String(prompt))
    return { ...r, runtime }
  }

  /**
   * This agent as a tool taking `{ prompt }`, each call a run of its own.
   * @param {AgentRunOptions} [opts]
   * @returns {ReturnType<typeof defineTool>}
   */
  asTool(opts = {}) {
    return defineTool({
      name: this.name,
      description: this.spec.does,
      inputSchema: { type: "object", properties: { prompt: { type: "string", description: "The task for this agent" } }, required: ["prompt"] },
      run: async (/** @type {Record<string, unknown>} */ args) => {
        const r = await this.run(String(args.prompt), opts)
        return { output: r.text, isError: r.isError, metadata: { agent: this.name, turns: r.turns, totalTokens: r.totalTokens } }
      },
    })
  }
}


/**
 * @param {string} name
 * @param {AgentSpec} spec
 * @returns {Agent}
 */
const makeAgent = (name, spec) => new Agent(name, spec)
/**
 * The spec itself (a typed way to write one).
 * @param {AgentSpec} spec
 * @returns {AgentSpec}
 */
const harness = (spec) => spec

/**
 * A persona agent from a directory: its soul composed from the bootstrap files, its `memory`
 * tool over the directory unless `memory` is `false`.
 * @param {string} dir
 * @param {FromDirOptions} [opts]
 * @returns {Agent}
 */
function fromDir(dir, opts = {}) {
  const { soul } = composeSoul(dir)
  const tools = [...(opts.tools ?? [])]
  if (opts.memory !== false) tools.push(memoryTool(dir))
  return makeAgent(opts.name ?? path.basename(dir), {
    does: opts.does ?? `persona agent from ${dir}`,
    soul,
    model: opts.model ?? "inherit",
    uses: { tools },
  })
}

/**
 * A persona on its own clock (§7E): the heartbeat runs in the core, on the runtime's clock.
 * @param {Agent} a
 * @param {AgentRunOptions} run the runtime's options
 * @param {HeartbeatOptions} hb
 * @returns {StartedAgent}
 */
function startAgent(a, run, hb) {
  const runtime = a.createRuntime(run)
  const handle = runtime.spawn(runtime.root, a.name)
  if (isVerbError(handle)) throw new Error(handle.error)
  /** @type {string[]} */
  const beats = []
  /** @param {string} text */
  const onBeat = (text) => {
    beats.push(text)
    hb.onBeat?.(text)
  }
  // The runtime's internals, under the key its constructor defines.
  const beat = /** @type {LookupRuntime} */ (runtime)[RUNTIME].heartbeat(handle, Number(hb.everyMs), agentConstants.HEARTBEAT_PROMPT, agentConstants.HEARTBEAT_OK, bridge(onBeat))
  return {
    runtime,
    beats,
    stop: async () => {
      beat.stop()
      await runtime.close(runtime.root)
    },
  }
}

module.exports = { Agent, agent: makeAgent, harness, fromDir, startAgent }
