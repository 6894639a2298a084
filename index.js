"use strict"
// The package entry. Every behaviour lives in the Rust core (crates/core), reached through
// the loader (loader.js: finds the platform's addon). This file only does what Node-API cannot express:
// JSON at the boundary with JavaScript's own semantics, Promises and AbortSignals, WHATWG
// fetch Responses, the decorator registry, and tool objects that stay the caller's own.

const fs = require("node:fs")
const path = require("node:path")
const native = require("./loader.js")

// The core's `[toolnexus] …` warnings, through whatever `console.warn` is at that moment.
native.setWarn((text) => {
  console.warn(text)
})

const encode = (value) => {
  let text
  try {
    text = JSON.stringify(value)
  } catch (e) {
    if (!tooDeep(e)) throw e
    text = stringifyDeep(value, false)
  }
  return text === undefined ? "null" : text
}

/** JSON.stringify ran out of stack: the value nests deeper than its recursion goes. */
const tooDeep = (e) => e instanceof RangeError && /call stack/i.test(e.message)

/** Whether `v` has the internal slot `valueOf` (of a wrapper's prototype) checks for. */
function hasSlot(valueOf, v) {
  try {
    valueOf.call(v)
    return true
  } catch {
    return false
  }
}

/**
 * JSON.stringify(value) without recursion, for values too deep for it: the same text, read the
 * same way (toJSON, wrapper objects, skipped and nulled members, a TypeError for a cycle or a
 * BigInt). `lenient` is encodeLenient's replacer: a BigInt as its digits, a cycle left out.
 */
function stringifyDeep(value, lenient) {
  const out = []
  const frames = []
  const open = new Set()
  const resolve = (holder, key) => {
    let v = holder[key]
    if ((typeof v === "object" && v !== null) || typeof v === "bigint") {
      const toJSON = v.toJSON
      if (typeof toJSON === "function") v = toJSON.call(v, key)
    }
    if (lenient) {
      if (typeof v === "bigint") v = v.toString()
      else if (typeof v === "object" && v !== null && open.has(v)) return undefined
    }
    if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) {
        if (hasSlot(Number.prototype.valueOf, v)) v = Number(v)
        else if (hasSlot(String.prototype.valueOf, v)) v = String(v)
        else if (hasSlot(Boolean.prototype.valueOf, v)) v = Boolean.prototype.valueOf.call(v)
        else if (hasSlot(BigInt.prototype.valueOf, v)) v = BigInt.prototype.valueOf.call(v)
      }
    }
    return v
  }
  const scalar = (v) => {
    switch (typeof v) {
      case "string":
        return JSON.stringify(v)
      case "number":
        return Number.isFinite(v) ? String(v) : "null"
      case "boolean":
        return v ? "true" : "false"
      case "bigint":
        throw new TypeError("Do not know how to serialize a BigInt")
      default:
        return v === null ? "null" : undefined
    }
  }
  const enter = (v) => {
    if (open.has(v)) throw new TypeError("Converting circular structure to JSON")
    open.add(v)
    const array = Array.isArray(v)
    frames.push({ v, array, keys: array ? null : Object.keys(v), n: array ? v.length : 0, i: 0, first: true })
    out.push(array ? "[" : "{")
  }
  const top = resolve({ "": value }, "")
  if (top === null || typeof top !== "object") return scalar(top)
  enter(top)
  while (frames.length > 0) {
    const f = frames[frames.length - 1]
    if (f.i >= (f.array ? f.n : f.keys.length)) {
      out.push(f.array ? "]" : "}")
      open.delete(f.v)
      frames.pop()
      continue
    }
    const key = f.array ? String(f.i) : f.keys[f.i]
    f.i++
    const v = resolve(f.v, key)
    const nested = v !== null && typeof v === "object"
    let text = nested ? undefined : scalar(v)
    if (!nested && text === undefined) {
      if (!f.array) continue
      text = "null"
    }
    if (!f.first) out.push(",")
    f.first = false
    if (!f.array) out.push(JSON.stringify(key), ":")
    if (nested) enter(v)
    else out.push(text)
  }
  return out.join("")
}
/**
 * A value from the core: its JSON text, or `[json, places, ...strings]` when it carries strings
 * too long to go inside one JSON text (see `json::Pieces` in the core): each place is
 * `[index, ...path]`, and the string `strings[index]` goes back at that path.
 */
function fromCore(crossed) {
  if (typeof crossed === "string") return JSON.parse(crossed)
  const root = JSON.parse(crossed[0])
  let value = root
  for (const [index, ...path] of JSON.parse(crossed[1])) {
    const text = crossed[2 + index]
    if (path.length === 0) {
      value = text
      continue
    }
    let at = root
    for (let i = 0; i < path.length - 1; i++) at = at[path[i]]
    at[path[path.length - 1]] = text
  }
  return value
}

/**
 * A RunResult as the reference builds it: every tool call carries `metadata`, `undefined` when
 * the tool gave none (JSON cannot say "present but undefined").
 */
function runResult(r) {
  const calls = r?.toolCalls
  if (Array.isArray(calls)) {
    for (const c of calls) if (c !== null && typeof c === "object" && !("metadata" in c)) c.metadata = undefined
  }
  return r
}

/** An `onTask` event as the reference builds it: `{ id, task, result, state }`, `result` undefined for a failed task. */
function taskEvent(ev) {
  if (ev === null || typeof ev !== "object") return ev
  if (!("result" in ev)) return { id: ev.id, task: ev.task, result: undefined, ...ev }
  runResult(ev.result)
  return ev
}

const isThenable = (v) => v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function"

// The core calls a bridged function as `(json, replyId)`. It answers at once by returning
// JSON text; a Promise answers later through native.reply / native.replyError, so the core
// never has to wrap a Promise per call.
function answer(id, out, finish) {
  if (!isThenable(out)) return finish(out)
  Promise.resolve(out).then(
    (value) => {
      let text
      try {
        text = finish(value)
      } catch (e) {
        native.replyError(id, e)
        return
      }
      native.reply(id, text)
    },
    (e) => native.replyError(id, e),
  )
  return undefined
}

const asText = (text) => String(text)

/** A function answering JSON text (or a Promise of it), in the core's calling convention. */
const lift = (fn) => (json, id) => answer(id, fn(json), asText)

/**
 * Bridge a JS function to the core: a value in, its JSON out (or later, for a Promise). Told
 * the value is one it may change in place (`inPlace`), a falsy answer gives the value back as
 * the function left it.
 */
const bridge = (fn, self) => (json, id, inPlace) => {
  const value = fromCore(json)
  return answer(id, fn.call(self, value), inPlace ? (out) => encode(out || value) : encode)
}

// ---- options, crossed whole ----
// An options object crosses as one document: its JSON, with each function replaced by
// `{"\u0000fn": n}` (n: its place in the list of bridged functions that goes with it) and each
// value backed by an addon object (a store, a compactor, a clock) by `{"\u0000obj": n}`. The
// core's option types read every field of it, callbacks included (`hostfn` in the core).

const FN = "\u0000fn"
const OBJ = "\u0000obj"
const RAW = Symbol("toolnexus.bridged")

/** Mark a function that already speaks the core's calling convention (no `bridge` around it). */
const raw = (fn) => {
  fn[RAW] = true
  return fn
}

/** A value backed by an addon object -> that object's shared form (`shared()`). */
const natives = new WeakMap()

/**
 * `[json, fns, objects]` for `value`: a function is bridged with `this` bound to the object
 * holding it (or to the object `origins` says that holder stands for: an adapted copy stands
 * for the caller's own object).
 */
function crossing(value, origins) {
  const fns = []
  const objects = []
  const json = JSON.stringify(value, function mark(key, v) {
    if (v === null || (typeof v !== "object" && typeof v !== "function")) return v
    const shared = natives.get(v)
    if (shared !== undefined) {
      objects.push(shared)
      return { [OBJ]: objects.length - 1 }
    }
    if (typeof v !== "function") return v
    fns.push(v[RAW] ? v : bridge(v, origins?.get(this) ?? this))
    return { [FN]: fns.length - 1 }
  })
  return [json === undefined ? "null" : json, fns, objects]
}

/** The `fetch` option: a user's fetch is called, and its Response read, by `fetchBridge`. */
const fetchOption = (f) => (typeof f === "function" ? raw(lift(fetchBridge(f))) : f)

/**
 * The `store` option: the addon's own stores cross as themselves; any other object's `get` and
 * `save` are read when called, as the reference calls them.
 */
function storeOption(store) {
  if (store === null || typeof store !== "object" || natives.has(store)) return store
  return {
    get: raw(bridge((id) => store.get(id))),
    save: raw(bridge(([id, messages]) => store.save(id, messages))),
  }
}

/** A Tool object as the core calls it: its declaration, and `execute` with a signal of its own. */
function toolOption(t) {
  if (t === null || typeof t !== "object" || typeof t.execute !== "function") return t
  const execute = raw(signalled((args, ctx) => t.execute(args, ctx)))
  return { name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source, execute }
}

/**
 * A callback option as the reference treats it: unset when falsy, called when set. A value
 * that is set but is not a function is accepted here and fails where the reference fails, when
 * it is called, with a TypeError that names it.
 */
function callable(where, name, value) {
  if (!value || typeof value === "function") return value || undefined
  return () => {
    throw new TypeError(`${where}: \`${name}\` is not a function (got ${typeof value})`)
  }
}

/**
 * JSON for a value crossing into the core, with the wire's leniency: where JSON.stringify
 * would throw (a circular reference, a BigInt), the cycle is left out and the BigInt is
 * written as its digits, instead of failing the whole run.
 */
function encodeLenient(value) {
  try {
    return encode(value)
  } catch {
    const ancestors = []
    let text
    try {
      text = JSON.stringify(value, function replace(key, v) {
        if (typeof v === "bigint") return v.toString()
        if (v === null || typeof v !== "object") return v
        // `this` is the object holding `key`: drop the ancestors we have walked back out of.
        while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop()
        if (ancestors.includes(v)) return undefined
        ancestors.push(v)
        return v
      })
    } catch (e) {
      if (!tooDeep(e)) throw e
      text = stringifyDeep(value, true)
    }
    return text === undefined ? "null" : text
  }
}

// ---- types (SPEC §1, §10) ----

function pending(request) {
  if (request == null) throw new TypeError(`Cannot read properties of ${request} (reading 'id')`)
  // A primitive is spread as the reference spreads it (a string into its characters).
  if (typeof request !== "object") request = { ...request }
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

// One schema object shared by every tool that declares none, as in the reference.
const EMPTY_SCHEMA = JSON.parse(native.emptySchema())

function defineTool(opts) {
  if (opts == null) throw new TypeError(`Cannot read properties of ${opts} (reading 'name')`)
  return {
    name: opts.name,
    description: opts.description,
    inputSchema: opts.inputSchema ?? EMPTY_SCHEMA,
    source: opts.source ?? "native",
    async execute(args, ctx) {
      try {
        // Read at each call, as the reference does; a missing `run` fails here, not above.
        const run = opts.run
        if (typeof run !== "function") {
          throw new TypeError(`defineTool: tool "${opts.name}" has no \`run\` function (got ${typeof run})`)
        }
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

/**
 * The core builds the declarations; the schema in each is then the tool's own `inputSchema`
 * object again (not a copy), as the reference hands it out, so identity and later changes to
 * it are seen the same way.
 */
function withSchemas(style, out, tools) {
  const decls = style === "gemini" ? out[0]?.functionDeclarations ?? [] : out
  tools.forEach((t, i) => {
    const d = decls[i]
    if (!d || (style === "openai" ? d.function?.name : d.name) !== t.name) return
    if (style === "openai") d.function.parameters = t.inputSchema
    else if (style === "anthropic") d.input_schema = t.inputSchema
    else d.parameters = t.inputSchema
  })
  return out
}

const adapt = (style, tools) => {
  if (!Array.isArray(tools)) throw new TypeError("tools must be an array of Tool objects")
  return withSchemas(style, JSON.parse(native.adapt(style, encode(tools.map(declOf)))), tools)
}
const toOpenAI = (tools) => adapt("openai", tools)
const toAnthropic = (tools) => adapt("anthropic", tools)
const toGemini = (tools) => adapt("gemini", tools)

// ---- single-turn translation helpers (SPEC §11) ----

const finishReasonFor = (hasToolCalls, providerStop) =>
  native.translateFinishReasonFor(Boolean(hasToolCalls), typeof providerStop === "string" ? providerStop : undefined)
const contentText = (content) => native.translateContentText(encode(content))
// An object passes through as itself, as in the reference; anything else is parsed.
const argsObject = (args) => (args && typeof args === "object" ? args : JSON.parse(native.translateArgsObject(encode(args))))
const argsString = (args) => native.translateArgsString(encode(args))
const toolCallsOf = (message) => JSON.parse(native.translateToolCallsOf(encode(message)))
// Spread with for-of so any iterable works and a non-iterable throws JavaScript's own TypeError.
function openAIMessagesToAnthropic(messages) {
  const list = []
  for (const m of messages ?? []) list.push(m)
  return JSON.parse(native.translateMessagesToAnthropic(encode(list)))
}
function openAIToolsToAnthropic(tools) {
  const list = []
  for (const t of tools ?? []) list.push(t)
  return JSON.parse(native.translateToolsToAnthropic(encode(list)))
}
const openAIToolChoiceToAnthropic = (choice) => JSON.parse(native.translateToolChoiceToAnthropic(encode(choice))) ?? undefined
const hasSystemMessage = (messages) =>
  Array.isArray(messages ?? [])
    ? native.translateHasSystemMessage(encode(messages ?? []))
    : (messages ?? []).some((m) => native.translateHasSystemMessage(encode([m])))

// ---- tools the core owns ----

/**
 * A ToolResult from the core: its JSON, or for a long output `[json of the rest, output]`
 * (the output crosses as a string of its own, unescaped).
 */
const toolResult = (crossed) => {
  if (typeof crossed === "string") return JSON.parse(crossed)
  const result = JSON.parse(crossed[0])
  result.output = crossed[1]
  return result
}

/**
 * A tool the core owns, as a plain Tool object: its declaration read once, `execute`
 * crossing with the JSON of the arguments and of `{ answer, timeout }`, `ctx.signal` wired
 * to the call's cancel token.
 */
function wrapNative(handle) {
  const { name, description, inputSchema, source } = JSON.parse(handle.decl())
  return remember(handle, {
    name,
    description,
    inputSchema,
    source,
    async execute(args, ctx) {
      const ctxJson = ctx == null ? undefined : encode({ answer: ctx.answer, timeout: ctx.timeout })
      const { token, release } = abortWiring(ctx?.signal)
      try {
        return toolResult(await handle.execute(encode(args ?? {}), ctxJson, token))
      } finally {
        release()
      }
    },
  })
}

// Tool objects made by wrapNative, with what they were made with: while a tool still has all
// of it, a server built from it (buildMcpServer) runs the core's tool without a JS hop.
const nativeTools = new WeakMap()

function remember(handle, t) {
  nativeTools.set(t, { handle, name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source, execute: t.execute })
  return t
}

/** The core's handle behind `t`, when `t` is a wrapNative tool nobody has changed. */
function nativeHandle(t) {
  const r = t !== null && typeof t === "object" ? nativeTools.get(t) : undefined
  const same = r && r.name === t.name && r.description === t.description && r.inputSchema === t.inputSchema && r.source === t.source && r.execute === t.execute
  return same ? r.handle : undefined
}

// ---- skills (SPEC §3) ----

function skillOptions(where, input) {
  const opts = typeof input === "string" || Array.isArray(input) ? { dirs: input } : input
  if (opts === null || typeof opts !== "object") throw new TypeError(`${where}: expected a path, an array of paths or an options object`)
  return encode({ dirs: opts.dirs, skills: opts.skills, filter: opts.filter, sampleLimit: opts.sampleLimit })
}

/** A SkillInfo with the reference's keys, in its order (`description` present even when unset). */
function skillInfo(s) {
  const info = { name: s.name, description: s.description, location: s.location, content: s.content, origin: s.origin }
  if (s.origin === "logical") {
    info.resources = s.resources
    info.base = s.base
  }
  return info
}

function loadSkills(input) {
  const source = native.skillsLoad(skillOptions("loadSkills", input))
  const skills = JSON.parse(source.skills())
  for (const name of Object.keys(skills)) skills[name] = skillInfo(skills[name])
  return {
    skills,
    tool: wrapNative(source.tool()),
    prompt() {
      return source.prompt()
    },
  }
}

function listSkills(input) {
  const inv = JSON.parse(native.skillsList(skillOptions("listSkills", input)))
  return { skills: inv.skills.map(skillInfo), skipped: inv.skipped }
}

// ---- HTTP tools (SPEC §7) ----

function httpTool(opts) {
  if (opts === null || typeof opts !== "object") throw new TypeError("httpTool: options must be an object")
  const handle = native.httpTool(encode(opts))
  const t = wrapNative(handle)
  // The declared schema object itself, as the reference hands it back.
  if (opts.inputSchema != null) t.inputSchema = opts.inputSchema
  return remember(handle, t)
}

// ---- built-in tools (SPEC §4A) ----

// `undefined` crosses as nothing; `null` fails as reading a field of it does.
const builtinsJson = (cfg) => {
  if (cfg === null) throw new TypeError("Cannot read properties of null (reading 'disabled')")
  return cfg === undefined ? undefined : encode(cfg)
}

const createBuiltinTools = () => native.createBuiltinTools().map(wrapNative)
const selectBuiltins = (cfg) => native.selectBuiltins(builtinsJson(cfg)).map(wrapNative)
const builtinsEnabled = (cfg) => native.builtinsEnabled(builtinsJson(cfg))

// ---- remote A2A agents (SPEC §7A) ----

/** An Agent descriptor: plain data, the four fields present even when unset. */
function agent(opts) {
  return { card: opts.card, headers: opts.headers, timeout: opts.timeout, pollEvery: opts.pollEvery }
}

/** The `agents` option as a list (an iterable is spread as the reference spreads it). */
const agentList = (agents) => (agents == null ? undefined : [...agents])

const agentTools = async (ag) => (await withSignal(undefined, () => native.agentTools(encode(ag)))).map(wrapNative)

const parseAgentsConfig = (block) =>
  JSON.parse(native.parseAgentsConfig(block === undefined ? undefined : encode(block))).map(agent)

// ---- toolkit (SPEC §4) ----

const handles = new WeakMap() // Toolkit -> NativeToolkit
const CREATE = Symbol("toolnexus.createToolkit")

/**
 * A JS tool's bridged call. A call carrying `call` (a number) comes from a caller that can give
 * up (a served MCP request whose client left): ctx gets an AbortSignal of its own, aborted by a
 * later `{ abort }` message with the same number.
 */
function signalled(execute) {
  const signals = new Map()
  return (json, id) => {
    const msg = fromCore(json)
    if (msg.abort !== undefined) {
      signals.get(msg.abort)?.abort()
      signals.delete(msg.abort)
      return "null"
    }
    if (msg.call === undefined) return answer(id, execute(msg.args, msg.ctx), encodeLenient)
    const controller = new AbortController()
    signals.set(msg.call, controller)
    let out
    try {
      out = Promise.resolve(execute(msg.args, { ...msg.ctx, signal: controller.signal }))
    } catch (e) {
      out = Promise.reject(e)
    }
    const done = () => signals.delete(msg.call)
    out.then(done, done)
    return answer(id, out, encodeLenient)
  }
}

function toolSpec(t, i) {
  if (t === null || typeof t !== "object" || typeof t.name !== "string" || typeof t.execute !== "function") {
    throw new TypeError(`extraTools[${i}] is not a Tool: it needs a string \`name\` and an \`execute\` function`)
  }
  const call = signalled((args, ctx) => t.execute(args, ctx))
  return { decl: encode({ name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source }), call }
}

const contextJson = (ctx) => (ctx == null ? undefined : encode({ answer: ctx.answer, timeout: ctx.timeout }))

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

// ---- serving (SPEC §7B, §7C) ----

const taskStores = new WeakMap() // InMemoryTaskStore | FileTaskStore -> NativeTaskStore

async function storeGet(store, id) {
  const json = await taskStores.get(store).get(String(id))
  return json == null ? undefined : JSON.parse(json)
}

async function storeSave(store, task) {
  await taskStores.get(store).save(encode(task))
}

/** Tasks for the life of the process. */
class InMemoryTaskStore {
  constructor() {
    taskStores.set(this, new native.NativeTaskStore())
  }

  get(id) {
    return storeGet(this, id)
  }

  save(task) {
    return storeSave(this, task)
  }
}

/** One `<id>.json` per Task under `dir` (created now), written atomically. */
class FileTaskStore {
  constructor(dir) {
    taskStores.set(this, native.NativeTaskStore.file(String(dir)))
  }

  get(id) {
    return storeGet(this, id)
  }

  save(task) {
    return storeSave(this, task)
  }
}

function resolveStore(store) {
  if (store === undefined || typeof store === "string") {
    const dir = native.storeChoice(store)
    return dir == null ? new InMemoryTaskStore() : new FileTaskStore(dir)
  }
  return store
}

/** A store given as an object (not a selector), or undefined. */
const storeObject = (store) => (store !== null && (typeof store === "object" || typeof store === "function") ? store : undefined)

const buildAgentCard = (cfg, skills, url) => JSON.parse(native.buildAgentCard(encode(cfg ?? {}), encode(skills ?? []), String(url)))

/**
 * The server behind `startA2AServer` and `toolkit.serve`. A store object is handed over as
 * the native store it wraps when it is one of ours, else as its bridged `get` / `save`.
 */
async function startServer(addr, opts, { runTask, store, toolkit, mcpTools }) {
  const { a2a, mcp, onTask, onCall } = opts
  const plain = {
    addr,
    a2a: a2a && typeof a2a === "object" ? { ...a2a, store: storeObject(a2a.store) ? undefined : a2a.store } : a2a,
    mcp,
    skills: opts.skills,
    auth: opts.auth,
    allowedOrigins: opts.allowedOrigins,
    maxBodyBytes: opts.maxBodyBytes,
  }
  const proto = store && Object.getPrototypeOf(store)
  const ours = proto === InMemoryTaskStore.prototype || proto === FileTaskStore.prototype ? taskStores.get(store) : undefined
  const spec = {
    options: encode(plain),
    runTask: bridge(({ text, contextId }) => runTask(text, contextId)),
    onTask: onTask ? bridge((ev) => onTask(taskEvent(ev))) : undefined,
    onCall: onCall ? bridge((ev) => onCall(ev)) : undefined,
    storeGet: store && !ours ? bridge((id) => store.get(id)) : undefined,
    storeSave: store && !ours ? bridge((task) => store.save(task)) : undefined,
    mcpTools: mcpTools && mcp ? mcpTools.map(toolSpec) : undefined,
  }
  const server = await native.startServer(spec, ours, toolkit)
  return { url: server.url, stop: () => server.stop(), close: () => server.stop() }
}

/** Stand up the HTTP server with your own `runTask` (what `toolkit.serve` is built on). */
function startA2AServer(opts) {
  const store = opts.a2a ? storeObject(opts.a2a.store) : undefined
  return startServer(opts.addr, opts, { runTask: opts.runTask, store, mcpTools: opts.mcpTools })
}

// ---- MCP source (SPEC §2) ----

const parseMcpConfig = (input) => JSON.parse(native.parseMcpConfig(encode(input)))

function expandEnvHeaders(headers) {
  if (!headers) return undefined
  return JSON.parse(native.expandEnvHeaders(encode(headers)) ?? "null") ?? undefined
}

function elicitationToRequest(params) {
  if (params == null) throw new TypeError(`Cannot read properties of ${params} (reading 'mode')`)
  return JSON.parse(native.elicitationToRequest(encode(params)))
}

function answerToElicitResult(answer) {
  if (answer == null) throw new TypeError(`Cannot read properties of ${answer} (reading 'ok')`)
  return JSON.parse(native.answerToElicitResult(encode(answer)))
}

async function loadMcp(input, opts) {
  const waitFor = callable("loadMcp", "waitFor", opts?.waitFor)
  const handle = await withSignal(opts?.signal, (token) => native.NativeMcp.load(encode(input), waitFor && bridge(waitFor, opts), token))
  return {
    tools: handle.tools().map(wrapNative),
    status: JSON.parse(handle.status()),
    async close() {
      await handle.close()
    },
  }
}

const listMcpTools = async (input, opts) => underSignal(opts?.signal, (token) => native.listMcpTools(encode(input), token))

// ---- the MCP profile: a toolkit as an MCP server (SPEC §7C) ----

function exposedMcpTools(tools, cfg) {
  const picked = native.mcpExposed(
    tools.map((t) => String(t?.name)),
    cfg === undefined ? undefined : encode(cfg),
  )
  // No filter: the list itself, as the reference hands it back.
  return picked == null ? tools : picked.map((i) => tools[i])
}

/** A JS tool as the served MCP server calls it: a throw or a rejection is the error result the reference makes of it. */
function servedCall(t) {
  const failed = (e) => ({ output: e instanceof Error ? e.message : String(e), isError: true })
  return signalled((args, ctx) => {
    try {
      return Promise.resolve(t.execute(args ?? {}, ctx)).then(undefined, failed)
    } catch (e) {
      return failed(e)
    }
  })
}

const textOf = (v) => (typeof v === "string" ? v : String(v))

/**
 * What buildMcpServer returns: the connect surface of the MCP SDK's `Server`. `connect` takes
 * any SDK transport (in-memory, stdio...): messages from it go to a native session, the
 * session's messages go out through `transport.send`. The session holds the process only
 * while a request is being answered, so a server on stdio ends when stdin does.
 */
class McpServer {
  #native
  #transport
  #session

  constructor(nativeServer) {
    this.#native = nativeServer
    this.onclose = undefined
    this.onerror = undefined
  }

  get transport() {
    return this.#transport
  }

  async connect(transport) {
    const session = await this.#native.connect(
      bridge(async (message) => {
        try {
          await transport.send(message)
        } catch (e) {
          this.onerror?.(e instanceof Error ? e : new Error(String(e)))
        }
      }),
    )
    this.#transport = transport
    this.#session = session
    const priorClose = transport.onclose
    const priorError = transport.onerror
    const priorMessage = transport.onmessage
    transport.onclose = () => {
      priorClose?.()
      this.#ended(transport, session)
    }
    transport.onerror = (error) => {
      priorError?.(error)
      this.onerror?.(error)
    }
    transport.onmessage = (message, extra) => {
      priorMessage?.(message, extra)
      try {
        session.receive(encode(message))
      } catch (e) {
        this.onerror?.(e instanceof Error ? e : new Error(String(e)))
      }
    }
    try {
      await transport.start()
    } catch (e) {
      this.#ended(transport, session)
      throw e
    }
  }

  #ended(transport, session) {
    session.close()
    if (this.#transport !== transport) return
    this.#transport = undefined
    this.#session = undefined
    this.onclose?.()
  }

  async close() {
    const transport = this.#transport
    const session = this.#session
    if (!transport) return
    try {
      await transport.close()
    } finally {
      if (this.#transport === transport) this.#ended(transport, session)
    }
  }
}

function buildMcpServer(tools, cfg, onCall) {
  const observe = callable("buildMcpServer", "onCall", onCall)
  const server = new native.NativeMcpServer(cfg === undefined ? undefined : encode(cfg), observe && bridge(observe))
  for (const t of tools) {
    const handle = nativeHandle(t)
    if (handle) {
      server.addNative(handle)
      continue
    }
    const decl = { name: textOf(t.name), description: t.description, inputSchema: t.inputSchema, source: t.source }
    server.addJs(encode(decl), servedCall(t))
  }
  return new McpServer(server)
}

// ---- client (SPEC §8, §10) ----

/**
 * The `fetch` option: call the user's fetch and read the Response here. A plain request
 * answers with the whole body; a streaming one keeps the reader and hands the core one
 * chunk per `pull`, so tokens reach the loop as they arrive.
 */
function fetchBridge(fetchFn) {
  const readers = new Map()
  // One AbortController per request in flight: the core aborts it when the run is aborted,
  // times out or stops reading, and the user's fetch sees that through `signal`.
  const controllers = new Map()
  let nextId = 1
  return async (json) => {
    const msg = JSON.parse(json)
    if (msg.pull !== undefined) {
      const open = readers.get(msg.pull)
      if (!open) return '{"done":true}'
      const { done, value } = await open.reader.read()
      if (!done) return encode({ chunk: open.decoder.decode(value, { stream: true }) })
      readers.delete(msg.pull)
      controllers.delete(open.req)
      const tail = open.decoder.decode()
      return tail ? encode({ chunk: tail }) : '{"done":true}'
    }
    if (msg.cancel !== undefined) {
      const open = readers.get(msg.cancel)
      readers.delete(msg.cancel)
      if (open) {
        open.reader.cancel().catch(() => {})
        controllers.get(open.req)?.abort()
        controllers.delete(open.req)
      }
      return "null"
    }
    if (msg.abort !== undefined) {
      controllers.get(msg.abort)?.abort()
      controllers.delete(msg.abort)
      return "null"
    }
    const controller = new AbortController()
    controllers.set(msg.req, controller)
    let keep = false
    try {
      const res = await fetchFn(msg.url, { method: "POST", headers: msg.headers, body: msg.body, signal: controller.signal })
      // Read as the reference reads a Response: `ok` decides, a success is `json()` (or the
      // body's reader when streaming), a failure `text()`; `headers` only for Retry-After.
      const ok = Boolean(res.ok)
      const status = typeof res.status === "number" ? res.status : ok ? 200 : 0
      const headers = headerPairs(res.headers)
      if (ok && msg.stream) {
        if (res.body && typeof res.body.getReader === "function") {
          const id = nextId++
          readers.set(id, { reader: res.body.getReader(), decoder: new TextDecoder(), req: msg.req })
          keep = true
          return encode({ status, headers, id })
        }
        return encode({ status, headers, body: await res.text() })
      }
      if (ok) return encode({ status, headers, body: encode(await res.json()) })
      return encode({ status, headers, body: await res.text() })
    } finally {
      if (!keep) controllers.delete(msg.req)
    }
  }
}

/** A Response's headers as pairs: all of them when they can be listed, else Retry-After alone. */
function headerPairs(headers) {
  if (headers == null) return []
  if (typeof headers.entries === "function") return [...headers.entries()]
  if (typeof headers.get === "function") {
    const retryAfter = headers.get("retry-after")
    return retryAfter == null ? [] : [["retry-after", String(retryAfter)]]
  }
  return []
}

// ---- the user's seams (SPEC §8: "omit fetch => global fetch") ----
// The reference sends every LLM request through `globalThis.fetch`, read at call time. The
// built-in HTTP is Node's fetch as far as a request can tell, so it stands in for it, unless
// the user has put something of their own in its way: a replaced `globalThis.fetch` (msw,
// nock, a test stub), an undici global dispatcher (MockAgent, ProxyAgent), or Node's own
// proxy from the environment. Then a run goes through `globalThis.fetch` itself, exactly as
// a `fetch` option would.

const DISPATCHER = Symbol.for("undici.globalDispatcher.1")
const sourceOf = Function.prototype.toString

let seenFetch
let seenFetchIsNodes = false
/** Whether `f` is Node's own `fetch` (its source loads Node's internal undici). */
function isNodesFetch(f) {
  if (f !== seenFetch) {
    seenFetch = f
    try {
      seenFetchIsNodes = typeof f === "function" && sourceOf.call(f).includes("require('internal/deps/undici/undici')")
    } catch {
      seenFetchIsNodes = false
    }
  }
  return seenFetchIsNodes
}

let seenDispatcher
let seenDispatcherIsNodes = true
/** Whether `d` is no dispatcher, or the default Agent Node's fetch makes for itself. */
function isNodesDispatcher(d) {
  if (d === undefined) return true
  if (d !== seenDispatcher) {
    seenDispatcher = d
    seenDispatcherIsNodes = false
    try {
      const made = d.constructor
      if (typeof made === "function" && made.name === "Agent" && sourceOf.call(made).startsWith("class extends DispatcherBase")) {
        const key = Object.getOwnPropertySymbols(d).find((k) => k.description === "options")
        const options = key === undefined ? undefined : d[key]
        seenDispatcherIsNodes = options != null && options.connect === undefined && !options.interceptors
      }
    } catch {
      seenDispatcherIsNodes = false
    }
  }
  return seenDispatcherIsNodes
}

/** Node's fetch is told to take its proxy from the environment. */
function envProxy() {
  const v = process.env.NODE_USE_ENV_PROXY
  return (v !== undefined && v !== "" && v !== "0") || process.execArgv.includes("--use-env-proxy")
}

let globalFetchSet = false
/**
 * Whether this run's LLM requests must go through `globalThis.fetch` (see above). The bridge
 * to it is handed to the addon the first time it is needed.
 */
function userSeam() {
  if (isNodesFetch(globalThis.fetch) && isNodesDispatcher(globalThis[DISPATCHER]) && !envProxy()) return false
  if (!globalFetchSet) {
    native.setGlobalFetch(lift(fetchBridge((url, init) => globalThis.fetch(url, init))))
    globalFetchSet = true
  }
  return true
}

// ---- conversation stores (SPEC §8) ----

const memoryStores = new WeakMap() // InMemoryConversationStore -> NativeMemoryStore

class InMemoryConversationStore {
  constructor() {
    const store = new native.NativeMemoryStore()
    memoryStores.set(this, store)
    natives.set(this, store.shared())
  }

  async get(id) {
    const json = memoryStores.get(this).get(String(id))
    return json == null ? undefined : fromCore(json)
  }

  async save(id, messages) {
    memoryStores.get(this).save(String(id), encode(messages))
  }
}

/** Wire an AbortSignal to a fresh core cancel token; `release` unhooks the listener. */
const noRelease = () => {}
const NO_SIGNAL = { token: undefined, release: noRelease }

/** A cancel token fired by `signal`; none at all without a signal, unless `always` asks for one. */
function abortWiring(signal, always = false) {
  if (!signal && !always) return NO_SIGNAL
  const token = new native.CancelToken()
  if (!signal) return { token, release: noRelease }
  const fire = () => {
    const r = signal.reason
    token.cancel(r instanceof Error ? r.message : r === undefined ? undefined : String(r))
  }
  if (signal.aborted) {
    fire()
    return { token, release: () => {} }
  }
  signal.addEventListener("abort", fire, { once: true })
  return { token, release: () => signal.removeEventListener("abort", fire) }
}

/** Run one native call under an optional signal; an abort rejects with the signal's own reason. */
async function withSignal(signal, call) {
  const { token, release } = abortWiring(signal)
  try {
    return await call(token)
  } catch (e) {
    if (signal?.aborted) throw signal.reason
    throw e
  } finally {
    release()
  }
}

const underSignal = async (signal, call) => fromCore(await withSignal(signal, call))

/** A run of the client's: its RunResult, shaped as the reference's. */
const runUnder = async (signal, call) => runResult(await underSignal(signal, call))

function toolkitHandle(ctx, where) {
  const handle = handles.get(ctx?.toolkit)
  if (!handle) throw new TypeError(`${where}: \`toolkit\` must be a Toolkit from createToolkit()`)
  return handle
}

const GENERATE = Symbol("toolnexus.generate")

class Client {
  #native
  #store

  constructor(opts) {
    const given = opts !== null && typeof opts === "object"
    // A store without get/save fails where the reference fails: when the client uses it.
    this.#store = (given ? opts.store : undefined) ?? new InMemoryConversationStore()
    const generate = given ? opts[GENERATE] : undefined
    const onError = given ? opts.onError : undefined
    const adapted = given
      ? {
          ...opts,
          fetch: fetchOption(opts.fetch),
          store: storeOption(this.#store),
          onError: typeof onError === "function" ? raw(bridge((info) => onError("error" in info ? { ...info, error: native.makeError(encode(info.error)) } : info))) : onError,
          // Called as a plain function, as the reference calls it.
          generate: typeof generate === "function" ? raw(bridge(generate)) : generate,
        }
      : opts
    this.#native = new native.NativeClient(...crossing(adapted, given ? new Map([[adapted, opts]]) : undefined), generate !== undefined)
  }

  conversationStore() {
    return this.#store
  }

  metrics() {
    return this.#native.metrics()
  }

  async run(prompt, ctx) {
    const handle = toolkitHandle(ctx, "run")
    // `null` crosses as "null": the core reads it as no history.
    const history = ctx.history === undefined ? undefined : encode(ctx.history)
    return runUnder(ctx.signal, (token) => this.#native.run(String(prompt), handle, history, token, userSeam()))
  }

  async ask(prompt, ctx) {
    const handle = toolkitHandle(ctx, "ask")
    const onText = callable("ask", "on_text", ctx.on_text ?? ctx.onText)
    const id = ctx.id ? String(ctx.id) : undefined
    return runUnder(ctx.signal, (token) => this.#native.ask(String(prompt), handle, id, token, onText && bridge(onText), userSeam()))
  }

  async translate(req) {
    if (req === null || typeof req !== "object") throw new TypeError("translate: request must be an object")
    const handle = req.toolkit === undefined ? undefined : handles.get(req.toolkit)
    if (req.toolkit !== undefined && !handle) throw new TypeError("translate: `toolkit` must be a Toolkit from createToolkit()")
    const { toolkit, signal, ...plain } = req
    return underSignal(signal, (token) => this.#native.translate(encode(plain), handle, token, userSeam()))
  }

  static toolCallsJSON(res) {
    return JSON.parse(native.toolCallsJson(encode(res)))
  }

  conversation(ctx) {
    return new Conversation(this, ctx?.toolkit, ctx?.signal)
  }

  /**
   * Events as the loop produces them. The loop waits for each event to be taken before it
   * goes on, as a generator would, and stops when the consumer stops.
   */
  stream(prompt, ctx) {
    const nativeClient = this.#native
    return (async function* streamEvents() {
      const handle = toolkitHandle(ctx, "stream")
      const signal = ctx.signal
      const { token, release } = abortWiring(signal, true)
      const queue = []
      let wake = null
      let settled = false
      let failure
      const poke = () => {
        const w = wake
        wake = null
        w?.()
      }
      const onEvent = (json) =>
        new Promise((ack) => {
          const ev = fromCore(json)
          if (ev?.type === "done") runResult(ev.result)
          queue.push({ ev, ack })
          poke()
        })
      const id = ctx.id ? String(ctx.id) : undefined
      nativeClient.stream(String(prompt), handle, id, token, lift(onEvent), userSeam()).then(
        () => {
          settled = true
          poke()
        },
        (e) => {
          settled = true
          failure = e
          poke()
        },
      )
      try {
        for (;;) {
          if (queue.length) {
            const { ev, ack } = queue.shift()
            yield ev
            ack("null")
            continue
          }
          if (settled) {
            if (failure) throw signal?.aborted ? signal.reason : failure
            return
          }
          await new Promise((resolve) => (wake = resolve))
        }
      } finally {
        if (!settled) token.cancel()
        for (const { ack } of queue.splice(0)) ack("null")
        release()
      }
    })()
  }
}

/** A multi-turn conversation: each send continues the transcript in `messages`. */
class Conversation {
  #client
  #toolkit
  #signal

  constructor(client, toolkit, signal) {
    this.messages = []
    this.#client = client
    this.#toolkit = toolkit
    this.#signal = signal
  }

  async send(prompt) {
    const result = await this.#client.run(prompt, { toolkit: this.#toolkit, signal: this.#signal, history: this.messages })
    this.messages = result.messages
    return result
  }

  reset() {
    this.messages = []
  }
}

/** A client whose model is a `generate` function in this process: no wire, no key. */
function createInProcessClient(opts) {
  const { generate, ...rest } = opts ?? {}
  // The core refuses anything but a function here.
  return new Client({ ...rest, fetch: undefined, [GENERATE]: generate ?? null })
}

const createClient = (opts) => new Client(opts)

// ---- agents (SPEC §7D-§7F): in agents.js, compiled on first use ----

const AGENT_MEMBERS = [
  "compactor", "estimateTokens", "composeSoul", "memoryTool", "runGated", "allTodosDone", "guardedHooks", "Loop",
  "BOOTSTRAP_ORDER", "MAX_FILE_BYTES", "TRUNCATION_NOTICE", "HEARTBEAT_OK", "HEARTBEAT_PROMPT", "systemClock",
  "isVerbError", "Handle", "AgentRuntime", "Agent", "agent", "harness", "fromDir", "startAgent",
]

/**
 * The `agents` namespace. Its members start as accessors; the first read or write of any of
 * them loads agents.js and turns every member into the plain data property it is from then on.
 */
const agents = {}

function loadAgents() {
  const shared = {
    fs, path, native, encode, fromCore, lift, bridge, callable, defineTool, wrapNative, toolSpec, fetchBridge,
    natives, crossing, raw, fetchOption, storeOption, toolOption, InMemoryConversationStore, createClient, userSeam, runResult,
  }
  const members = require("./agents.js")(shared)
  for (const key of Object.keys(members)) {
    Object.defineProperty(agents, key, { value: members[key], writable: true, enumerable: true, configurable: true })
  }
}

for (const key of AGENT_MEMBERS) {
  Object.defineProperty(agents, key, {
    get() {
      loadAgents()
      return agents[key]
    },
    set(value) {
      loadAgents()
      agents[key] = value
    },
    enumerable: true,
    configurable: true,
  })
}

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
module.exports.finishReasonFor = finishReasonFor
module.exports.contentText = contentText
module.exports.argsObject = argsObject
module.exports.argsString = argsString
module.exports.toolCallsOf = toolCallsOf
module.exports.openAIMessagesToAnthropic = openAIMessagesToAnthropic
module.exports.openAIToolsToAnthropic = openAIToolsToAnthropic
module.exports.openAIToolChoiceToAnthropic = openAIToolChoiceToAnthropic
module.exports.hasSystemMessage = hasSystemMessage
module.exports.SKILL_TOOL_DESCRIPTION = native.SKILL_TOOL_DESCRIPTION
module.exports.SKILLS_PROMPT_PREAMBLE = native.SKILLS_PROMPT_PREAMBLE
module.exports.loadSkills = loadSkills
module.exports.listSkills = listSkills
module.exports.httpTool = httpTool
module.exports.createBuiltinTools = createBuiltinTools
module.exports.selectBuiltins = selectBuiltins
module.exports.builtinsEnabled = builtinsEnabled
module.exports.parseMcpConfig = parseMcpConfig
module.exports.expandEnvHeaders = expandEnvHeaders
module.exports.elicitationToRequest = elicitationToRequest
module.exports.answerToElicitResult = answerToElicitResult
module.exports.loadMcp = loadMcp
module.exports.listMcpTools = listMcpTools
module.exports.exposedMcpTools = exposedMcpTools
module.exports.buildMcpServer = buildMcpServer
module.exports.agent = agent
module.exports.agentTools = agentTools
module.exports.parseAgentsConfig = parseAgentsConfig
module.exports.Toolkit = Toolkit
module.exports.createToolkit = createToolkit
module.exports.Client = Client
module.exports.createClient = createClient
module.exports.Conversation = Conversation
module.exports.InMemoryConversationStore = InMemoryConversationStore
module.exports.createInProcessClient = createInProcessClient
module.exports.InMemoryTaskStore = InMemoryTaskStore
module.exports.FileTaskStore = FileTaskStore
module.exports.resolveStore = resolveStore
module.exports.buildAgentCard = buildAgentCard
module.exports.startA2AServer = startA2AServer
module.exports.agents = agents
