"use strict"
// The toolkit (SPEC §4): every source's tools as one list, the caller's own Tool objects kept.

const { native } = require("./native.js")
const { encode, bridge, callable, abortWiring, withSignal } = require("./crossing.js")
const { withSchemas } = require("./adapters.js")
const { toolResult, wrapNative, toolSpec, contextJson } = require("./core-tools.js")
const { agentList } = require("./a2a.js")
const { storeObject, startServer } = require("./serve.js")

const handles = new WeakMap() // Toolkit -> NativeToolkit
const CREATE = Symbol("toolnexus.createToolkit")

class Toolkit {
  #native
  #slots = []
  #byName = new Map() // name -> the caller's own Tool object
  #entries = [] // { name, slot } in assembly order; slot -1 is a tool of the core's own
  #coreNames = new Set()
  #wrapped = new Map() // name -> wrapNative(...) of a core tool, built on first use
  #configStore // a store object in an object mcpConfig's `a2a` block (it cannot cross as JSON)

  constructor(key, nativeToolkit, tools) {
    if (key !== CREATE) throw new TypeError("use createToolkit(options) to build a Toolkit")
    this.#native = nativeToolkit
    this.#slots = tools
    handles.set(this, nativeToolkit)
    this.#adopt(nativeToolkit.entries())
  }

  static async create(opts = {}) {
    if (opts === null || typeof opts !== "object") throw new TypeError("createToolkit: options must be an object")
    const extra = opts.extraTools ?? []
    if (!Array.isArray(extra)) throw new TypeError("createToolkit: `extraTools` must be an array of Tool objects")
    const waitFor = callable("createToolkit", "waitFor", opts.waitFor)
    const plain = { disableTools: opts.disableTools, builtins: opts.builtins, mcpConfig: opts.mcpConfig, agents: agentList(opts.agents) }
    if (opts.skillsDir !== undefined || opts.skills !== undefined || opts.skillProvider !== undefined) {
      // The provider is resolved once, here; a failing one is reported and contributes nothing.
      let providerDefs = []
      if (opts.skillProvider) {
        try {
          providerDefs = await opts.skillProvider()
        } catch (e) {
          console.warn(`[toolnexus] skill provider failed: ${e instanceof Error ? e.message : String(e)}`)
          providerDefs = []
        }
      }
      plain.skillsDir = opts.skillsDir === undefined ? undefined : (opts.skillsDir ?? null)
      plain.skills = opts.skills === undefined ? undefined : [...(opts.skills ?? [])]
      plain.skillProvider = opts.skillProvider === undefined ? undefined : [...providerDefs]
      plain.skillsFilter = opts.skillsFilter
      plain.disableSkills = opts.disableSkills
      plain.skillSampleLimit = opts.skillSampleLimit
    }
    const specs = extra.map(toolSpec)
    const nativeToolkit = await withSignal(opts.signal, (token) =>
      native.NativeToolkit.create(encode(plain), specs, waitFor && bridge(waitFor, opts), token),
    )
    const tk = new Toolkit(CREATE, nativeToolkit, [...extra])
    const cfg = opts.mcpConfig
    if (cfg && typeof cfg === "object" && cfg.a2a && typeof cfg.a2a === "object") tk.#configStore = storeObject(cfg.a2a.store)
    return tk
  }

  #adopt(entries) {
    for (const entry of entries) {
      this.#entries.push(entry)
      if (entry.slot >= 0) this.#byName.set(entry.name, this.#slots[entry.slot])
      else this.#coreNames.add(entry.name)
    }
  }

  #coreTool(name) {
    let wrapped = this.#wrapped.get(name)
    if (!wrapped) {
      const handle = this.#native.nativeTool(name)
      if (!handle) return undefined
      wrapped = wrapNative(handle)
      this.#wrapped.set(name, wrapped)
    }
    return wrapped
  }

  tools() {
    return this.#entries.map(({ name, slot }) => (slot >= 0 ? this.#slots[slot] : this.#coreTool(name)))
  }

  get(name) {
    if (this.#byName.has(name)) return this.#byName.get(name)
    return this.#coreNames.has(name) ? this.#coreTool(name) : undefined
  }

  register(...tools) {
    const specs = tools.map(toolSpec)
    this.#slots.push(...tools)
    this.#adopt(this.#native.register(specs))
    return this
  }

  async addAgent(agentOrCardUrl, opts) {
    const ag = typeof agentOrCardUrl === "string" ? { card: agentOrCardUrl, ...opts } : agentOrCardUrl
    this.#adopt(await withSignal(undefined, () => this.#native.addAgent(encode(ag))))
    return this
  }

  async execute(name, args, ctx) {
    const t = this.#byName.get(name)
    if (t) return t.execute(args ?? {}, ctx)
    const { token, release } = abortWiring(ctx?.signal)
    try {
      return toolResult(await this.#native.execute(String(name), encode(args ?? {}), contextJson(ctx), token))
    } finally {
      release()
    }
  }

  skillsPrompt() {
    return this.#native.skillsPrompt()
  }

  mcpStatus() {
    return JSON.parse(this.#native.mcpStatus())
  }

  toOpenAI() {
    return withSchemas("openai", JSON.parse(this.#native.adapt("openai")), this.tools())
  }

  toAnthropic() {
    return withSchemas("anthropic", JSON.parse(this.#native.adapt("anthropic")), this.tools())
  }

  toGemini() {
    return withSchemas("gemini", JSON.parse(this.#native.adapt("gemini")), this.tools())
  }

  /**
   * Serve this toolkit (SPEC §7B/§7C). A Task runs through `client.ask` (keyed by the A2A
   * `contextId`) or `client.run`, as the reference does; the rest is the core's.
   */
  serve(addr, opts) {
    const runTask = (text, contextId) =>
      contextId ? opts.client.ask(text, { toolkit: this, id: contextId }) : opts.client.run(text, { toolkit: this })
    const a2a = opts.a2a ?? undefined
    const store = a2a == null ? this.#configStore : storeObject(a2a.store)
    return startServer(addr, opts, { runTask, store, toolkit: this.#native })
  }

  async close() {
    await this.#native.close()
  }
}

const createToolkit = (opts) => Toolkit.create(opts)


function toolkitHandle(ctx, where) {
  const handle = handles.get(ctx?.toolkit)
  if (!handle) throw new TypeError(`${where}: \`toolkit\` must be a Toolkit from createToolkit()`)
  return handle
}

module.exports = { handles, Toolkit, createToolkit, toolkitHandle }
