"use strict"
// The toolkit (SPEC §4): every source's tools as one list, the caller's own Tool objects kept.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { crossingOf } = require("./options-doc.js")
const { loggerOption, warnWith } = require("./logger.js")
const { abortWiring, withSignal } = require("./abort.js")
const { withSchemas } = require("./adapters.js")
const { toolResult, wrapNative, toolSpec, contextJson } = require("./core-tools.js")
const { agentList } = require("./a2a.js")
const { storeObject, startServer } = require("./serve.js")
const { engineUrl } = require("./stores.js")
const { warnUnlisted } = require("./mcpserve.js")
const { schemaRefusal } = require("./schema.js")

/** @typedef {import("./core-tools.js").Tool} Tool */
/** @typedef {import("../binding").NativeToolkit} NativeToolkit */

/**
 * `createToolkit`'s options, as far as they are read here: the whole object crosses to the core
 * (see `crossing`), which reads every field; the caller's tools and signal cross apart.
 * @typedef {object} ToolkitOptions
 * @property {string | { a2a?: import("./serve.js").A2AOptions | null, [key: string]: unknown } | null} [mcpConfig]
 *   a config file's path or a config value (a store object in its `a2a` block is kept here)
 * @property {string | string[] | null} [skillsDir]
 * @property {Iterable<unknown> | null} [skills] skills given as data
 * @property {(() => Iterable<unknown> | PromiseLike<Iterable<unknown>>) | null} [skillProvider]
 *   called once, here, for more data skills
 * @property {unknown} [skillsFilter]
 * @property {unknown} [disableTools]
 * @property {unknown} [disableSkills]
 * @property {unknown} [skillSampleLimit]
 * @property {Tool[] | null} [extraTools] the caller's own Tool objects
 * @property {unknown} [builtins]
 * @property {Iterable<import("./a2a.js").Agent> | null} [agents] remote A2A agents whose skills become tools
 * @property {unknown} [waitFor] resolves input an MCP server asks for (read by the core: unset when falsy, a TypeError when called if not a function)
 * @property {AbortSignal | null} [signal] aborts the MCP load
 * @property {{ warn(message: string): unknown } | null} [logger] told the toolkit's warnings (its assembly, tools, MCP servers, serving) instead of `console.warn`
 * @property {unknown} [store] where remote MCP servers' sign-ins are kept: "memory", a store URL or a store object (crosses as its URL)
 * @property {unknown} [mcpToken] the caller's own tokens for remote MCP servers (read by the core)
 */

/**
 * `toolkit.serve`'s options: the server's, and the client that runs each served Task.
 * @typedef {import("./serve.js").ServeOptions & { client: import("./client.js").Client }} ToolkitServeOptions
 */

/** @type {WeakMap<Toolkit, NativeToolkit>} */
const handles = new WeakMap() // Toolkit -> NativeToolkit
/** @type {WeakMap<Toolkit, TypeError[]>} */
const refusals = new WeakMap() // Toolkit -> why its tool list cannot be sent (Standard Schemas with no JSON Schema)
const CREATE = Symbol("toolnexus.createToolkit")

class Toolkit {
  /** @type {NativeToolkit} */
  #native
  /** @type {Tool[]} the caller's own Tool objects, by the slot the core knows each by */
  #slots = []
  /** @type {Map<string, Tool>} */
  #byName = new Map() // name -> the caller's own Tool object
  /** @type {import("../binding").ToolEntry[]} */
  #entries = [] // { name, slot } in assembly order; slot -1 is a tool of the core's own
  /** @type {Set<string>} */
  #coreNames = new Set()
  /** @type {Map<string, Tool>} */
  #wrapped = new Map() // name -> wrapNative(...) of a core tool, built on first use
  /** @type {object | undefined} */
  #configStore // a store object in an object mcpConfig's `a2a` block (it cannot cross as JSON)
  /** @type {unknown} */
  #configMcp // an object mcpConfig's `mcpServer` block (the MCP profile `serve` falls back to)
  /** @type {TypeError[]} */
  #refused = [] // the refusals of the caller's tools the core took whose schema cannot be sent

  /**
   * Only `create` makes a Toolkit (it passes `CREATE`).
   * @param {symbol} key
   * @param {NativeToolkit} nativeToolkit
   * @param {Tool[]} tools the caller's own Tool objects, in slot order
   */
  constructor(key, nativeToolkit, tools) {
    if (key !== CREATE) throw new TypeError("use createToolkit(options) to build a Toolkit")
    this.#native = nativeToolkit
    this.#slots = tools
    handles.set(this, nativeToolkit)
    refusals.set(this, this.#refused)
    this.#adopt(nativeToolkit.entries())
  }

  /**
   * Assemble a toolkit: every source's tools, in order.
   * @param {ToolkitOptions} [opts]
   * @returns {Promise<Toolkit>}
   */
  static async create(opts = {}) {
    const given = opts !== null && typeof opts === "object"
    const extra = (given ? opts.extraTools : undefined) ?? []
    if (!Array.isArray(extra)) throw new TypeError("createToolkit: `extraTools` must be an array of Tool objects")
    /** @type {Record<string, unknown> | unknown} the options as they cross: the core reads every field */
    let adapted = opts
    if (given) {
      const wantsSkills = opts.skillsDir !== undefined || opts.skills !== undefined || opts.skillProvider !== undefined
      // The provider is called first, as the reference calls it before it reads `skills`.
      const provided = wantsSkills && opts.skillProvider !== undefined ? await skillProviderDefs(opts) : undefined
      adapted = {
        ...opts,
        // The caller's tools and signal cross apart (their objects stay here).
        extraTools: undefined,
        signal: undefined,
        agents: agentList(opts.agents),
        logger: loggerOption(opts.logger),
        // A store object crosses as its URL (the core keeps MCP sign-ins there).
        store: engineUrl(opts.store) ?? opts.store,
        // Iterables are read here, as the reference spreads them; the provider is called once, here.
        skills: wantsSkills && opts.skills !== undefined ? [...(opts.skills ?? [])] : undefined,
        skillProvider: provided,
      }
    }
    const specs = extra.map(toolSpec)
    const [doc, fns, objects] = crossingOf(adapted, opts)
    const nativeToolkit = await withSignal(given ? opts.signal : undefined, (token) => native.NativeToolkit.create(doc, fns, objects, specs, token))
    const tk = new Toolkit(CREATE, nativeToolkit, [...extra])
    const cfg = given ? opts.mcpConfig : undefined
    if (cfg && typeof cfg === "object" && cfg.a2a && typeof cfg.a2a === "object") tk.#configStore = storeObject(cfg.a2a.store)
    if (cfg && typeof cfg === "object") tk.#configMcp = cfg.mcpServer
    return tk
  }

  /**
   * Take in entries the core added: a JS tool's by its slot, a core tool's by its name.
   * @param {import("../binding").ToolEntry[]} entries
   */
  #adopt(entries) {
    for (const entry of entries) {
      this.#entries.push(entry)
      if (entry.slot >= 0) {
        const t = this.#slots[entry.slot]
        this.#byName.set(entry.name, t)
        // Refused where the list is sent (a run, a stream, translate), as a provider would.
        const refused = schemaRefusal(t.name, t.inputSchema)
        if (refused) this.#refused.push(refused)
      } else this.#coreNames.add(entry.name)
    }
  }

  /**
   * A tool of the core's own as a Tool object (made once); undefined when the core has none by that name.
   * @param {string} name
   * @returns {Tool | undefined}
   */
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

  /**
   * Every tool, in assembly order: the caller's own objects, and the core's as Tool objects.
   * @returns {Tool[]}
   */
  tools() {
    // An entry of the core's own (slot -1) always names a tool the core has, so `#coreTool`
    // finds one for it.
    return /** @type {Tool[]} */ (this.#entries.map(({ name, slot }) => (slot >= 0 ? this.#slots[slot] : this.#coreTool(name))))
  }

  /**
   * A tool by name: the caller's own object, or the core's as a Tool object.
   * @param {string} name
   * @returns {Tool | undefined}
   */
  get(name) {
    if (this.#byName.has(name)) return this.#byName.get(name)
    return this.#coreNames.has(name) ? this.#coreTool(name) : undefined
  }

  /**
   * Add tools now; a name already taken keeps its first tool.
   * @param {...Tool} tools
   * @returns {this}
   */
  register(...tools) {
    const specs = tools.map(toolSpec)
    this.#slots.push(...tools)
    this.#adopt(this.#native.register(specs))
    return this
  }

  /**
   * Resolve a remote agent and register its tools.
   * @param {unknown} agentOrCardUrl an Agent descriptor, or its card's URL
   * @param {Record<string, unknown>} [opts] with a URL: the descriptor's other fields
   * @returns {Promise<this>}
   */
  async addAgent(agentOrCardUrl, opts) {
    const ag = typeof agentOrCardUrl === "string" ? { card: agentOrCardUrl, ...opts } : agentOrCardUrl
    this.#adopt(await withSignal(undefined, () => this.#native.addAgent(encode(ag))))
    return this
  }

  /**
   * Run a tool by name: the caller's own through its `execute`, any other through the core.
   * @param {string} name
   * @param {Record<string, unknown> | null} [args]
   * @param {import("./core-tools.js").ToolContext} [ctx]
   * @returns {Promise<import("./core-tools.js").ToolResult>}
   */
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

  /**
   * The skill catalog (markdown), for a system prompt.
   * @returns {string}
   */
  skillsPrompt() {
    return this.#native.skillsPrompt()
  }

  /**
   * Each configured MCP server's status, by name.
   * @returns {Record<string, import("../index").McpStatus>}
   */
  mcpStatus() {
    return JSON.parse(this.#native.mcpStatus())
  }

  /** @returns {import("./adapters.js").OpenAIToolDecl[]} */
  toOpenAI() {
    return withSchemas("openai", JSON.parse(this.#native.adapt("openai")), this.tools())
  }

  /** @returns {import("./adapters.js").AnthropicToolDecl[]} */
  toAnthropic() {
    return withSchemas("anthropic", JSON.parse(this.#native.adapt("anthropic")), this.tools())
  }

  /** @returns {import("./adapters.js").GeminiToolDecl[]} */
  toGemini() {
    return withSchemas("gemini", JSON.parse(this.#native.adapt("gemini")), this.tools())
  }

  /**
   * Serve this toolkit (SPEC §7B/§7C). A Task runs through `client.ask` (keyed by the A2A
   * `contextId`) or `client.run`, as the reference does; the rest is the core's.
   * @param {string} addr `host:port`
   * @param {ToolkitServeOptions} opts
   * @returns {Promise<import("./serve.js").ServeHandle>}
   */
  serve(addr, opts) {
    /** @type {import("./serve.js").RunTask} */
    const runTask = (text, contextId, extra) => {
      const signal = extra?.signal
      return contextId ? opts.client.ask(text, { toolkit: this, id: contextId, signal }) : opts.client.run(text, { toolkit: this, signal })
    }
    const a2a = opts.a2a ?? undefined
    const store = a2a == null ? this.#configStore : storeObject(a2a.store)
    // The served MCP profile lists the caller's tools: a Standard Schema with no JSON Schema is
    // listed with the empty object schema, and said so.
    const profile = opts.mcp ?? this.#configMcp
    if (profile) warnUnlisted(this.#entries.filter((e) => e.slot >= 0).map((e) => this.#slots[e.slot]), profile)
    // A Task parked for input is taken up in the conversation it ran in (its contextId).
    /** @type {import("./serve.js").ResumeTask} */
    const resumeTask = (contextId, pending, answer, extra) => opts.client.askWithAnswer(this, contextId, pending, answer, { signal: extra?.signal })
    return startServer(addr, opts, { runTask, resumeTask, store, toolkit: this.#native })
  }

  /** @returns {Promise<void>} */
  async close() {
    await this.#native.close()
  }
}

/**
 * What `skillProvider` resolves to, as a list; a provider that fails is reported (to the
 * logger, else `console.warn`) and contributes nothing, as in the reference.
 * @param {ToolkitOptions} opts
 * @returns {Promise<unknown[]>}
 */
async function skillProviderDefs(opts) {
  if (!opts.skillProvider) return []
  /** @type {Iterable<unknown>} */
  let defs
  try {
    defs = await opts.skillProvider()
  } catch (e) {
    const text = `[toolnexus] skill provider failed: ${e instanceof Error ? e.message : String(e)}`
    if (opts.logger != null) warnWith(opts.logger, text)
    else console.warn(text)
    return []
  }
  // Spread outside the guard: a provider that resolves to something not iterable fails the
  // toolkit with a TypeError, as the reference's spread does.
  return [...defs]
}

/**
 * Build a Toolkit (see `Toolkit.create`).
 * @param {ToolkitOptions} [opts]
 * @returns {Promise<Toolkit>}
 */
const createToolkit = (opts) => Toolkit.create(opts)


/**
 * The native toolkit behind `ctx.toolkit`; a TypeError naming `where` when it is not a Toolkit.
 * @param {{ toolkit?: unknown } | null | undefined} ctx
 * @param {string} where
 * @returns {NativeToolkit}
 */
function toolkitHandle(ctx, where) {
  // Looked up whatever it is: anything that is not one of our Toolkits finds nothing.
  const handle = handles.get(/** @type {Toolkit} */ (ctx?.toolkit))
  if (!handle) throw new TypeError(`${where}: \`toolkit\` must be a Toolkit from createToolkit()`)
  refuseUnsendable(/** @type {Toolkit} */ (ctx?.toolkit))
  return handle
}

/**
 * Throw the first refusal of a toolkit's tool list (a tool whose Standard Schema has no JSON
 * Schema to send), if it has one.
 * @param {Toolkit} toolkit
 */
function refuseUnsendable(toolkit) {
  const first = refusals.get(toolkit)?.[0]
  // A new error each time, so each run's stack is its own.
  if (first) throw new TypeError(first.message)
}

module.exports = { handles, Toolkit, createToolkit, toolkitHandle, refuseUnsendable }
