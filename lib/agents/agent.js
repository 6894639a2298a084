"use strict"
// The Level-1 agent (SPEC §7D-§7E): a spec, its team as a registry, run on a runtime or as a
// Loop, a persona from a directory on its own heartbeat.

const fs = require("node:fs")
const path = require("node:path")
const { bridge } = require("../crossing.js")
const { defineTool } = require("../native-tools.js")
const { composeSoul, memoryTool, agentConstants } = require("./home.js")
const { guardedHooks, Loop } = require("./loop.js")
const { AgentRuntime, isVerbError, RUNTIME } = require("./runtime.js")

class Agent {
  constructor(name, spec) {
    this.name = name
    this.spec = spec
  }

  /** This agent and its transitive team, as a runtime registry. */
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

  loop(options, toolkit) {
    return new Loop(this, options, toolkit)
  }

  createRuntime(opts = {}) {
    return new AgentRuntime({ ...opts, registry: this.registry() })
  }

  async run(prompt, opts = {}) {
    const runtime = this.createRuntime(opts)
    const r = await runtime.runAgent(this.name, String(prompt))
    return { ...r, runtime }
  }

  asTool(opts = {}) {
    return defineTool({
      name: this.name,
      description: this.spec.does,
      inputSchema: { type: "object", properties: { prompt: { type: "string", description: "The task for this agent" } }, required: ["prompt"] },
      run: async (args) => {
        const r = await this.run(String(args.prompt), opts)
        return { output: r.text, isError: r.isError, metadata: { agent: this.name, turns: r.turns, totalTokens: r.totalTokens } }
      },
    })
  }
}


const makeAgent = (name, spec) => new Agent(name, spec)
const harness = (spec) => spec

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

/** A persona on its own clock (§7E): the heartbeat runs in the core, on the runtime's clock. */
function startAgent(a, run, hb) {
  const runtime = a.createRuntime(run)
  const handle = runtime.spawn(runtime.root, a.name)
  if (isVerbError(handle)) throw new Error(handle.error)
  const beats = []
  const onBeat = (text) => {
    beats.push(text)
    hb.onBeat?.(text)
  }
  const beat = runtime[RUNTIME].heartbeat(handle, Number(hb.everyMs), agentConstants.HEARTBEAT_PROMPT, agentConstants.HEARTBEAT_OK, bridge(onBeat))
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
