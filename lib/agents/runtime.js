"use strict"
// The agent runtime (SPEC §7D): its handles, its verbs, the host's clock.

const { native } = require("../native.js")
const { encode } = require("../stringify.js")
const { fromCore } = require("../decode.js")
const { lift, bridge } = require("../call-convention.js")
const { raw, crossing } = require("../options-doc.js")
const { natives } = require("../addon-objects.js")
const { loggerOption } = require("../logger.js")
const { telemetryOption, recorder, activeContext: otelContext } = require("../telemetry.js")

/**
 * The `telemetry` option of a runtime: one recorder for all its turns, whose root spans belong
 * to the context the runtime was made in; undefined when off.
 * @param {unknown} option
 * @returns {unknown}
 */
function runtimeRecorder(option) {
  const tracer = telemetryOption(option)
  return tracer && raw(recorder(tracer, { fallback: otelContext() }))
}
const { toolOption } = require("../core-tools.js")
const { outputOption } = require("../schema.js")
const { fetchOption, storeOption, InMemoryConversationStore } = require("../client.js")
const { userSeam } = require("../fetch.js")

/** @typedef {import("../../binding").NativeRuntime} NativeRuntime */
/** @typedef {import("../../binding").NativeClock} NativeClock */
/**
 * A handle's fields as the core gives them (its `HandleFields`): the reference Handle's, in its
 * order; the ones typed here are those only JavaScript can finish.
 * @typedef {Record<string, unknown> & {
 *   def: { registered?: string, budget?: Budget, own?: AgentDef },
 *   parent: number | null,
 *   children: number[],
 *   abort: { turn: number, aborted: boolean } | null,
 *   wakeQueue: { h: number, prompt?: string }[],
 * }} NativeHandleInfo
 */
/** @typedef {import("../../binding").NativeHandleView} NativeHandleView */
/** @typedef {import("../../binding").NativeInspection} NativeInspection */
/** @typedef {import("../../binding").NativeHeartbeat} NativeHeartbeat */
/** @typedef {import("../../index").agents.Clock} Clock */
/** @typedef {import("../../index").agents.Budget} Budget */
/** @typedef {import("../../index").agents.CloseReason} CloseReason */
/** @typedef {import("../../index").agents.TaskResult} TaskResult */
/** @typedef {import("../../index").agents.VerbError} VerbError */
/** @typedef {import("../../index").Request} Request */

/** A Tool object, as the JS side makes and takes them. @typedef {import("../core-tools.js").Tool} Tool */

/**
 * An agent's definition as a registry holds it (`agents.AgentDef` of index.d.ts): its tools
 * the JS side's Tool objects, its lifecycle callbacks handed this module's Handles.
 * @typedef {Omit<import("../../index").agents.AgentDef, "tools" | "onSpawn" | "onClose"> & {
 *   tools?: Tool[],
 *   onSpawn?: (h: Handle) => void | Promise<void>,
 *   onClose?: (h: Handle, reason: CloseReason) => void | Promise<void>,
 * }} AgentDef
 */

/**
 * What `onBudget` is told (`agents.BudgetInfo`): the stopped turn's numbers and its Handle.
 * @typedef {Omit<import("../../index").agents.BudgetInfo, "handle"> & { handle: Handle }} BudgetInfo
 */

/**
 * The runtime's options (`agents.RuntimeOptions`), as they are read: every field may be
 * missing; `registry` holds this module's definitions and `onBudget` is told of Handles.
 * @typedef {Omit<import("../../index").agents.RuntimeOptions, "registry" | "onBudget"> & {
 *   registry?: Record<string, AgentDef>,
 *   onBudget?: (info: BudgetInfo) => unknown,
 * }} RuntimeOptions
 */

/** One handle as `list` reports it. @typedef {Omit<NativeHandleView, "handle">} HandleView */

/**
 * One handle as `inspect` reports it, its pending request parsed.
 * @typedef {Omit<NativeInspection, "pending"> & { pending?: Request }} Inspection
 */

/**
 * A runtime's internals as its Handles (and a persona's heartbeat) reach them, under the
 * RUNTIME key of the runtime.
 * @typedef {object} Lookup
 * @property {NativeRuntime} native the core's runtime
 * @property {(i: number) => NativeHandleInfo | null} info the core's view of handle `i`
 * @property {(i: number) => Handle} handleAt the Handle of index `i`
 * @property {(h: unknown, everyMs: number, prompt: string, silent: string, onBeat: JsonFn) => NativeHeartbeat} heartbeat
 *   a heartbeat for the Handle `h` of this runtime
 */

/**
 * A runtime seen with its RUNTIME key, which its constructor defines (TypeScript does not see
 * properties made by `Object.defineProperty`).
 * @typedef {AgentRuntime & { readonly [RUNTIME]: Lookup }} LookupRuntime
 */

/**
 * The real clock: timers unref'd, so they never hold the process open.
 * @type {Clock}
 */
const systemClock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms)
    t.unref?.()
    return () => clearTimeout(t)
  },
}

/**
 * A clock of the caller's as the core's: `now()` read at once, its timers firing back.
 * @param {Clock} clock
 * @returns {object} a stand-in that an options document names by the core's clock
 */
function hostClock(clock) {
  /** @type {Map<number, unknown>} timer id -> what the caller's `setTimeout` returned */
  const cancels = new Map()
  /** @type {NativeClock} */
  let handle
  handle = new native.NativeClock(
    lift(() => String(Number(clock.now()))),
    bridge((/** @type {[number, number]} */ [id, ms]) => {
      cancels.set(id, clock.setTimeout(() => {
        cancels.delete(id)
        handle.fireTimer(id)
      }, ms))
      return null
    }),
    bridge((/** @type {number} */ id) => {
      const cancel = cancels.get(id)
      cancels.delete(id)
      if (typeof cancel === "function") cancel()
      return null
    }),
  )
  const standIn = {}
  natives.set(standIn, handle.shared())
  return standIn
}

/**
 * @param {unknown} x
 * @returns {x is VerbError}
 */
const isVerbError = (x) => typeof x === "object" && x !== null && "error" in x && typeof x.error === "string"

const RUNTIME = Symbol("toolnexus.runtime")
/** @type {WeakMap<object, { rt: AgentRuntime, index: number }>} */
const handleSlots = new WeakMap() // Handle -> { rt, index }

/**
 * One live agent: a view over the runtime's table, always current. Its fields are the
 * reference's own enumerable fields, in its order; writing one keeps the written value on
 * this object (as a plain field would), without changing the runtime.
 */
class Handle {
  /** @type {LookupRuntime} */
  #rt
  /** @type {number} */
  #index
  /** @type {{ turn: number, controller: AbortController } | null} */
  #abort = null // { turn, controller } of the in-flight turn whose abort was handed out
  /**
   * @param {unknown} key RUNTIME, which only this module holds
   * @param {AgentRuntime} rt the runtime whose table this handle reads
   * @param {number} index its place in that table
   * @param {AgentDef} def the definition it was spawned from
   * @param {string[]} fields the Handle's fields, in the core's order
   */
  constructor(key, rt, index, def, fields) {
    if (key !== RUNTIME) throw new TypeError("handles come from AgentRuntime.spawn()")
    // Every AgentRuntime defines its RUNTIME key in its constructor.
    this.#rt = /** @type {LookupRuntime} */ (rt)
    this.#index = index
    handleSlots.set(this, { rt, index })
    for (const name of fields) {
      if (name === "def") {
        Object.defineProperty(this, "def", { value: def, writable: true, enumerable: true, configurable: true })
        continue
      }
      Object.defineProperty(this, name, {
        get: () => this.#read(name),
        set: (/** @type {unknown} */ value) => shadow(this, name, value),
        enumerable: true,
        configurable: true,
      })
    }
  }
  /**
   * The field `name`, read from the runtime now: as the core gives it, but for what only
   * JavaScript can make of it (handles for indexes, the abort controller).
   * @param {string} name
   * @returns {unknown}
   */
  #read(name) {
    const lookup = this.#rt[RUNTIME]
    if (name === "state") return lookup.native.state(this.#index)
    // The core answers for every index it has handed out, and a Handle has one of those.
    const info = /** @type {NativeHandleInfo} */ (lookup.info(this.#index))
    switch (name) {
      case "parent":
        return info.parent == null ? null : lookup.handleAt(info.parent)
      case "children":
        return info.children.map((c) => lookup.handleAt(c))
      case "wakeQueue":
        return info.wakeQueue.map((w) => ({ ...w, h: lookup.handleAt(w.h) }))
      case "abort":
        return this.#abortOf(info)
      default:
        // Absent fields come as null; the reference leaves them undefined.
        return info[name] ?? undefined
    }
  }
  /**
   * The abort seam of the turn in flight, or of the last turn (`null` before the first):
   * aborting it interrupts that turn. Aborted, by whatever means, it reads as aborted.
   * @param {NativeHandleInfo} info
   * @returns {AbortController | null}
   */
  #abortOf(info) {
    if (info.abort == null) return null
    const { turn, aborted } = info.abort
    if (this.#abort?.turn !== turn) {
      const controller = new AbortController()
      controller.signal.addEventListener("abort", () => {
        const now = /** @type {NativeHandleInfo | null} */ (this.#rt[RUNTIME].info(this.#index))
        if (now?.abort?.turn === turn) this.#rt.interrupt(this)
      }, { once: true })
      this.#abort = { turn, controller }
    }
    const { controller } = this.#abort
    if (aborted && !controller.signal.aborted) controller.abort(new Error("interrupted"))
    return controller
  }
}

/**
 * A field the reference lets its user write: the written value stays on the object itself.
 * @template {object} T
 * @param {T} target
 * @param {PropertyKey} name
 * @param {unknown} value
 * @returns {T}
 */
const shadow = (target, name, value) =>
  Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true })

/** The §7D runtime: the host's verbs over the core's tree of handles. */
class AgentRuntime {
  /** @type {NativeRuntime} */
  #native
  /** @type {Handle[]} */
  #handles = []
  /** @type {Record<string, AgentDef>} */
  #defs
  /** @type {Lookup} */
  #lookup

  /**
   * @param {RuntimeOptions | null} [opts] read only when it is an object
   */
  constructor(opts) {
    const given = opts !== null && typeof opts === "object"
    const registry = (given ? opts.registry : undefined) ?? {}
    /** @type {Clock} */
    this.clock = (given ? opts.clock : undefined) ?? systemClock
    /** @type {NonNullable<RuntimeOptions["store"]> | InMemoryConversationStore} */
    this.store = (given ? opts.store : undefined) ?? new InMemoryConversationStore()
    this.#defs = registry
    /** @param {number} i */
    const handleAt = (i) => this.#handleAt(i)
    // The options cross whole; what JavaScript alone can do is adapted here: handles for the
    // lifecycle callbacks, the caller's Tool objects, a fetch's Response, a store's methods,
    // a clock's timers.
    // An adapted copy -> the caller's object it stands for (objects both; TypeScript cannot
    // tie `adapted` below to `given`, so the map is typed as `crossing` takes it).
    /** @type {Map<unknown, unknown>} */
    const origins = new Map()
    /** @type {Record<string, unknown>} */
    const adaptedRegistry = {}
    for (const name of Object.keys(registry)) {
      const d = registry[name]
      if (d === null || typeof d !== "object") {
        adaptedRegistry[name] = d
        continue
      }
      const entry = {
        ...d,
        tools: Array.isArray(d.tools) ? d.tools.map(toolOption) : d.tools,
        // A schema library's object crosses as its JSON Schema and its check.
        output: outputOption(`AgentRuntime: registry.${name}`, d)?.doc,
        // (The casts restate the checks before them, which TypeScript forgets inside a callback.)
        onSpawn: typeof d.onSpawn === "function" ? raw(bridge((/** @type {{ handle: number }} */ v) => /** @type {NonNullable<AgentDef["onSpawn"]>} */ (d.onSpawn)(handleAt(v.handle)))) : d.onSpawn,
        onClose: typeof d.onClose === "function" ? raw(bridge((/** @type {{ handle: number, reason: CloseReason }} */ v) => /** @type {NonNullable<AgentDef["onClose"]>} */ (d.onClose)(handleAt(v.handle), v.reason))) : d.onClose,
      }
      adaptedRegistry[name] = entry
      origins.set(entry, d)
    }
    const onBudget = given ? opts.onBudget : undefined
    const adapted = given
      ? {
          ...opts,
          registry: adaptedRegistry,
          fetch: fetchOption(opts.fetch),
          store: storeOption(this.store),
          clock: opts.clock ? hostClock(opts.clock) : undefined,
          logger: loggerOption(opts.logger),
          telemetry: runtimeRecorder(opts.telemetry),
          onBudget: typeof onBudget === "function" ? raw(bridge((/** @type {Omit<BudgetInfo, "handle"> & { handle: number }} */ info) => onBudget.call(opts, { ...info, handle: handleAt(info.handle) }))) : onBudget,
        }
      : opts
    if (given) origins.set(adapted, opts)
    this.#native = new native.NativeRuntime(...crossing(adapted, origins))
    this.#lookup = {
      native: this.#native,
      info: (i) => /** @type {NativeHandleInfo | null} */ (this.#native.info(i)),
      handleAt,
      heartbeat: (/** @type {unknown} */ h, /** @type {number} */ everyMs, /** @type {string} */ prompt, /** @type {string} */ silent, /** @type {JsonFn} */ onBeat) => this.#native.heartbeat(this.#index(h, "heartbeat"), everyMs, prompt, silent, onBeat),
    }
    Object.defineProperty(this, RUNTIME, { value: this.#lookup })
  }

  /**
   * The Handle of index `i`, made the first time it is asked for.
   * @param {number} i
   * @returns {Handle}
   */
  #handleAt(i) {
    let h = this.#handles[i]
    if (!h) {
      // `i` is an index the core handed out, so it answers for it.
      const info = /** @type {NativeHandleInfo} */ (this.#native.info(i))
      // The definition: the runtime's own (the root's), or the caller's registered object,
      // copied with the budget the core merged when the spawn carried one.
      const { own, registered, budget } = info.def
      const base = registered === undefined ? undefined : this.#defs[registered]
      const def = own ?? (budget ? { ...base, budget } : base)
      h = new Handle(RUNTIME, this, i, /** @type {AgentDef} */ (def), Object.keys(info))
      this.#handles[i] = h
    }
    return h
  }

  /**
   * The table index of `h`, which must be a Handle of this runtime.
   * @param {unknown} h
   * @param {string} where the verb, for the message
   * @returns {number}
   */
  #index(h, where) {
    const slot = h !== null && typeof h === "object" ? handleSlots.get(h) : undefined
    if (!slot || slot.rt !== this) throw new TypeError(`AgentRuntime.${where}: expected a Handle of this runtime`)
    return slot.index
  }

  /** @returns {Handle} the runtime's root */
  get root() {
    return this.#handleAt(0)
  }
  /** @returns {string[]} */
  get trace() {
    return this.#native.trace()
  }
  /** @returns {number} */
  get concurrentTurns() {
    return this.#native.concurrentTurns()
  }
  /** @param {number} value kept on this object, as a plain field would keep it */
  set concurrentTurns(value) {
    shadow(this, "concurrentTurns", value)
  }
  /** @returns {number} */
  get maxObservedConcurrentTurns() {
    return this.#native.maxObservedConcurrentTurns()
  }
  /** @param {number} value kept on this object, as a plain field would keep it */
  set maxObservedConcurrentTurns(value) {
    shadow(this, "maxObservedConcurrentTurns", value)
  }

  /**
   * @param {unknown} parent a Handle of this runtime
   * @param {string} defName the registered definition to spawn
   * @param {Budget | null} [budget] carved out of the parent's
   * @returns {Handle | VerbError}
   */
  spawn(parent, defName, budget) {
    const r = this.#native.spawn(this.#index(parent, "spawn"), String(defName), budget == null ? undefined : encode(budget))
    if (r.error !== undefined && r.error !== null) return { error: r.error }
    // Without an error the core names the new handle.
    return this.#handleAt(/** @type {number} */ (r.handle))
  }

  /**
   * @param {unknown} h a Handle of this runtime
   * @param {{ from?: unknown, channel?: unknown, text?: unknown } | null} [item] each field taken by its string form
   * @returns {{ ok: true } | { ok: false, error: string }}
   */
  post(h, item) {
    this.#native.seam(userSeam())
    const i = item ?? {}
    const err = this.#native.post(this.#index(h, "post"), String(i.from), String(i.channel), String(i.text))
    return err == null ? { ok: true } : { ok: false, error: err }
  }

  /**
   * @param {unknown} h a Handle of this runtime
   * @param {unknown} [prompt] taken by its string form
   * @returns {{ ok: true } | { ok: false, error: string }}
   */
  wake(h, prompt) {
    this.#native.seam(userSeam())
    const err = this.#native.wake(this.#index(h, "wake"), prompt === undefined ? undefined : String(prompt))
    return err == null ? { ok: true } : { ok: false, error: err }
  }

  /**
   * @param {unknown} h a Handle of this runtime
   * @param {{ timeoutMs?: number, by?: unknown } | null} [opts] `by`: a Handle of this runtime
   * @returns {Promise<TaskResult>}
   */
  async wait(h, opts) {
    const by = opts?.by === undefined ? undefined : this.#index(opts.by, "wait")
    const timeout = opts?.timeoutMs === undefined ? undefined : encode(opts.timeoutMs)
    return JSON.parse(await this.#native.wait(this.#index(h, "wait"), timeout, by))
  }

  /**
   * @param {unknown} h a Handle of this runtime
   * @returns {void}
   */
  interrupt(h) {
    this.#native.interrupt(this.#index(h, "interrupt"))
  }

  /**
   * @param {unknown} h a Handle of this runtime
   * @param {{ force?: unknown, reason?: unknown } | null} [opts] `force` read as a boolean, `reason` by its string form
   * @returns {Promise<void>}
   */
  async close(h, opts) {
    await this.#native.close(this.#index(h, "close"), !!opts?.force, opts?.reason === undefined ? undefined : String(opts.reason))
  }

  /**
   * @param {unknown} [h] a Handle of this runtime; the root when missing
   * @param {HandleView[]} [acc] the list the views are pushed onto
   * @returns {HandleView[]}
   */
  list(h, acc = []) {
    for (const v of this.#native.list(h === undefined ? 0 : this.#index(h, "list"))) {
      acc.push({ id: v.id, state: v.state, tokens: v.tokens, inbox: v.inbox })
    }
    return acc
  }

  /**
   * @param {unknown} h a Handle of this runtime
   * @returns {Inspection}
   */
  inspect(h) {
    // `#index` has checked the handle is one of this runtime's, so the core answers for it.
    const v = /** @type {NativeInspection} */ (this.#native.inspect(this.#index(h, "inspect")))
    return { id: v.id, state: v.state, tokens: v.tokens, inbox: v.inbox, turns: v.turns, poolTokens: v.poolTokens, pending: v.pending == null ? undefined : JSON.parse(v.pending) }
  }

  /**
   * @param {unknown} answer the Answer to the pending request (it crosses as JSON)
   * @returns {Promise<void>}
   */
  async resume(answer) {
    this.#native.seam(userSeam())
    await this.#native.resume(encode(answer))
  }

  /**
   * One-shot: spawn → wake → wait → close (kept parked when pending).
   * @param {unknown} name the registered definition, by its string form
   * @param {unknown} prompt taken by its string form
   * @returns {Promise<TaskResult>}
   */
  async runAgent(name, prompt) {
    this.#native.seam(userSeam())
    return /** @type {TaskResult} */ (fromCore(await this.#native.runAgent(String(name), String(prompt))))
  }
}

module.exports = { systemClock, isVerbError, Handle, AgentRuntime, RUNTIME }
