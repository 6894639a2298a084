"use strict"
// The package entry. Every behaviour lives in the Rust core (crates/core), reached through
// the generated loader (binding.js). This file only does what Node-API cannot express:
// JSON at the boundary with JavaScript's own semantics, Promises and AbortSignals, WHATWG
// fetch Responses, the decorator registry, and tool objects that stay the caller's own.

const native = require("./binding.js")

const encode = (value) => {
  const text = JSON.stringify(value)
  return text === undefined ? "null" : text
}
const isThenable = (v) => v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function"

/** Bridge a JS function to the core: JSON text in, JSON text (or a Promise of it) out. */
function bridge(fn, self) {
  return (json) => {
    const out = fn.call(self, JSON.parse(json))
    return isThenable(out) ? Promise.resolve(out).then(encode) : encode(out)
  }
}

function needFunction(where, name, value) {
  if (value !== undefined && typeof value !== "function") throw new TypeError(`${where}: \`${name}\` must be a function`)
  return value
}

// ---- types (SPEC §1, §10) ----

function pending(request) {
  if (request === null || typeof request !== "object") throw new TypeError("pending: request must be an object")
  // An explicit id of null/undefined keeps its place; the core fills it in.
  const fields = "id" in request && request.id == null ? { ...request, id: null } : request
  return JSON.parse(native.pending(encode(fields)))
}

function authRequired(url, prompt) {
  return JSON.parse(native.authRequired(String(url), prompt === undefined ? undefined : String(prompt)))
}

function pendingOf(result) {
  return result.metadata?.pending
}

const sanitize = (value) => native.sanitize(String(value))

// ---- native tools (SPEC §6) ----

function defineTool(opts) {
  if (opts === null || typeof opts !== "object") throw new TypeError("defineTool: options must be an object")
  const run = opts.run
  if (typeof run !== "function") throw new TypeError("defineTool: `run` must be a function")
  return {
    name: opts.name,
    description: opts.description,
    inputSchema: opts.inputSchema ?? JSON.parse(native.emptySchema()),
    source: opts.source ?? "native",
    async execute(args, ctx) {
      try {
        const out = await run.call(opts, args ?? {}, ctx)
        if (out !== null && typeof out === "object" && "output" in out && "isError" in out) return out
        return { output: typeof out === "string" ? out : (JSON.stringify(out) ?? ""), isError: false }
      } catch (e) {
        return { output: e instanceof Error ? e.message : String(e), isError: true }
      }
    },
  }
}

// `tool(description, opts)` marks a function; `collectTools(obj)` gathers the marked ones,
// from a per-instance registry (filled by a decorator's addInitializer) and own properties.
const perInstance = new WeakMap()
const MARK = "__tool"

function tool(description, opts) {
  return function mark(value, context) {
    if (typeof value !== "function") return value
    const name = opts?.name ?? (context?.name ? String(context.name) : value.name)
    const made = defineTool({ name, description, inputSchema: opts?.inputSchema, run: (args, ctx) => value(args, ctx) })
    if (typeof context?.addInitializer === "function") {
      context.addInitializer(function register() {
        const list = perInstance.get(this) ?? []
        list.push(made)
        perInstance.set(this, list)
      })
    }
    value[MARK] = made
    return value
  }
}

function collectTools(obj) {
  const found = [...(perInstance.get(obj) ?? [])]
  for (const key of Object.keys(obj)) {
    const v = obj[key]
    if (typeof v === "function" && v[MARK]) found.push(v[MARK])
  }
  return found
}

// ---- adapters (SPEC §4) ----

const declOf = (t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })
const adapt = (style, tools) => {
  if (!Array.isArray(tools)) throw new TypeError("tools must be an array of Tool objects")
  return JSON.parse(native.adapt(style, encode(tools.map(declOf))))
}
const toOpenAI = (tools) => adapt("openai", tools)
const toAnthropic = (tools) => adapt("anthropic", tools)
const toGemini = (tools) => adapt("gemini", tools)

// ---- toolkit (SPEC §4) ----

const handles = new WeakMap() // Toolkit -> NativeToolkit
const CREATE = Symbol("toolnexus.createToolkit")
const NOT_YET = ["mcpConfig", "skillsDir", "skills", "skillProvider", "skillsFilter", "disableSkills", "skillSampleLimit", "agents"]

function toolSpec(t, i) {
  if (t === null || typeof t !== "object" || typeof t.name !== "string" || typeof t.execute !== "function") {
    throw new TypeError(`extraTools[${i}] is not a Tool: it needs a string \`name\` and an \`execute\` function`)
  }
  const call = (json) => {
    const { args, ctx } = JSON.parse(json)
    const out = t.execute(args, ctx)
    return isThenable(out) ? Promise.resolve(out).then(encode) : encode(out)
  }
  return { decl: encode({ name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source }), call }
}

class Toolkit {
  #native
  #slots = []
  #byName = new Map()

  constructor(key, nativeToolkit, tools) {
    if (key !== CREATE) throw new TypeError("use createToolkit(options) to build a Toolkit")
    this.#native = nativeToolkit
    this.#slots = tools
    handles.set(this, nativeToolkit)
    this.#adopt(nativeToolkit.entries())
  }

  static async create(opts = {}) {
    if (opts === null || typeof opts !== "object") throw new TypeError("createToolkit: options must be an object")
    for (const key of NOT_YET) {
      if (opts[key] !== undefined) throw new Error(`createToolkit: option \`${key}\` is not supported by this build yet`)
    }
    const extra = opts.extraTools ?? []
    if (!Array.isArray(extra)) throw new TypeError("createToolkit: `extraTools` must be an array of Tool objects")
    const plain = { disableTools: opts.disableTools, builtins: opts.builtins }
    const nativeToolkit = await native.NativeToolkit.create(encode(plain), extra.map(toolSpec))
    return new Toolkit(CREATE, nativeToolkit, [...extra])
  }

  #adopt(entries) {
    for (const { name, slot } of entries) if (slot >= 0) this.#byName.set(name, this.#slots[slot])
  }

  tools() {
    return [...this.#byName.values()]
  }

  get(name) {
    return this.#byName.get(name)
  }

  register(...tools) {
    const specs = tools.map(toolSpec)
    this.#slots.push(...tools)
    this.#adopt(this.#native.register(specs))
    return this
  }

  async execute(name, args, ctx) {
    const t = this.#byName.get(name)
    if (t) return t.execute(args ?? {}, ctx)
    const ctxJson = ctx === undefined ? undefined : encode({ answer: ctx.answer, timeout: ctx.timeout })
    return JSON.parse(await this.#native.execute(String(name), encode(args ?? {}), ctxJson))
  }

  skillsPrompt() {
    return this.#native.skillsPrompt()
  }

  mcpStatus() {
    return {}
  }

  toOpenAI() {
    return JSON.parse(this.#native.adapt("openai"))
  }

  toAnthropic() {
    return JSON.parse(this.#native.adapt("anthropic"))
  }

  toGemini() {
    return JSON.parse(this.#native.adapt("gemini"))
  }

  async close() {
    await this.#native.close()
  }
}

const createToolkit = (opts) => Toolkit.create(opts)

// ---- client (SPEC §8, §10) ----

/** The `fetch` option: call the user's fetch, read the Response on this thread, answer once. */
function fetchBridge(fetchFn) {
  return async (json) => {
    const { url, headers, body } = JSON.parse(json)
    const res = await fetchFn(url, { method: "POST", headers, body })
    const text = await res.text()
    const pairs = typeof res.headers?.entries === "function" ? [...res.headers.entries()] : []
    return JSON.stringify({ status: res.status, headers: pairs, body: text })
  }
}

const PLAIN_OPTIONS = ["baseUrl", "style", "model", "apiKey", "headers", "systemPrompt", "maxTurns", "retries", "retryBaseMs", "timeoutMs", "requestParams"]
const CLIENT_NOT_YET = ["store", "onMetric", "onError"]

class Client {
  #native

  constructor(opts) {
    if (opts === null || typeof opts !== "object") throw new TypeError("createClient: options must be an object")
    for (const key of CLIENT_NOT_YET) {
      if (opts[key] !== undefined) throw new Error(`createClient: option \`${key}\` is not supported by this build yet`)
    }
    const plain = {}
    for (const key of PLAIN_OPTIONS) if (opts[key] !== undefined) plain[key] = opts[key]
    const hooks = opts.hooks ?? {}
    if (typeof hooks !== "object") throw new TypeError("createClient: `hooks` must be an object")
    const hook = (name) => {
      const fn = needFunction("createClient", `hooks.${name}`, hooks[name])
      return fn && bridge(fn, hooks)
    }
    const fetchFn = needFunction("createClient", "fetch", opts.fetch)
    const waitFor = needFunction("createClient", "waitFor", opts.waitFor)
    const bodyTransform = needFunction("createClient", "bodyTransform", opts.bodyTransform)
    this.#native = new native.NativeClient(encode(plain), {
      fetch: fetchFn && fetchBridge(fetchFn),
      waitFor: waitFor && bridge(waitFor, opts),
      beforeLlm: hook("beforeLLM"),
      afterLlm: hook("afterLLM"),
      beforeTool: hook("beforeTool"),
      afterTool: hook("afterTool"),
      bodyTransform: bodyTransform && bridge(bodyTransform, opts),
    })
  }

  async run(prompt, ctx) {
    const handle = handles.get(ctx?.toolkit)
    if (!handle) throw new TypeError("run: `toolkit` must be a Toolkit from createToolkit()")
    const signal = ctx.signal
    let token, onAbort
    if (signal) {
      token = new native.CancelToken()
      onAbort = () => token.cancel()
      if (signal.aborted) token.cancel()
      else signal.addEventListener("abort", onAbort, { once: true })
    }
    const history = ctx.history === undefined || ctx.history === null ? undefined : encode(ctx.history)
    try {
      return JSON.parse(await this.#native.run(String(prompt), handle, history, token))
    } catch (e) {
      if (signal?.aborted) throw signal.reason
      throw e
    } finally {
      if (signal) signal.removeEventListener("abort", onAbort)
    }
  }
}

const createClient = (opts) => new Client(opts)

module.exports.pending = pending
module.exports.authRequired = authRequired
module.exports.pendingOf = pendingOf
module.exports.sanitize = sanitize
module.exports.defineTool = defineTool
module.exports.tool = tool
module.exports.collectTools = collectTools
module.exports.toOpenAI = toOpenAI
module.exports.toAnthropic = toAnthropic
module.exports.toGemini = toGemini
module.exports.Toolkit = Toolkit
module.exports.createToolkit = createToolkit
module.exports.Client = Client
module.exports.createClient = createClient
