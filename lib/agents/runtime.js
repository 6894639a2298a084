"use strict"
// The agent runtime (SPEC §7D): its handles, its verbs, the host's clock.

const { native } = require("../native.js")
const { encode, fromCore, lift, bridge, raw, natives, crossing } = require("../crossing.js")
const { toolOption } = require("../core-tools.js")
const { fetchOption, storeOption, InMemoryConversationStore } = require("../client.js")
const { userSeam } = require("../fetch.js")

/** The real clock: timers unref'd, so they never hold the process open. */
const systemClock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms)
    t.unref?.()
    return () => clearTimeout(t)
  },
}

/** A clock of the caller's as the core's: `now()` read at once, its timers firing back. */
function hostClock(clock) {
  const cancels = new Map()
  let handle
  handle = new native.NativeClock(
    lift(() => String(Number(clock.now()))),
    bridge(([id, ms]) => {
      cancels.set(id, clock.setTimeout(() => {
        cancels.delete(id)
        handle.fireTimer(id)
      }, ms))
      return null
    }),
    bridge((id) => {
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

const isVerbError = (x) => typeof x === "object" && x !== null && "error" in x && typeof x.error === "string"

const RUNTIME = Symbol("toolnexus.runtime")
const handleSlots = new WeakMap() // Handle -> { rt, index }

/**
 * One live agent: a view over the runtime's table, always current. Its fields are the
 * reference's own enumerable fields, in its order; writing one keeps the written value on
 * this object (as a plain field would), without changing the runtime.
 */
class Handle {
  #rt
  #index
  #abort = null // { turn, controller } of the in-flight turn whose abort was handed out
  constructor(key, rt, index, def) {
    if (key !== RUNTIME) throw new TypeError("handles come from AgentRuntime.spawn()")
    this.#rt = rt
    this.#index = index
    handleSlots.set(this, { rt, index })
    for (const name of HANDLE_FIELDS) {
      if (name === "def") {
        Object.defineProperty(this, "def", { value: def, writable: true, enumerable: true, configurable: true })
        continue
      }
      Object.defineProperty(this, name, {
        get: () => this.#read(name),
        set: (value) => shadow(this, name, value),
        enumerable: true,
        configurable: true,
      })
    }
  }
  #read(name) {
    const lookup = this.#rt[RUNTIME]
    if (name === "state") return lookup.native.state(this.#index)
    const info = lookup.info(this.#index)
    switch (name) {
      case "id":
        return info.id
      case "parent":
        return info.parent == null ? null : lookup.handleAt(info.parent)
      case "depth":
        return info.depth
      case "children":
        return info.children.map((c) => lookup.handleAt(c))
      case "inbox":
        return JSON.parse(info.inbox)
      case "pool":
        return { tokens: info.pool[0], toolCalls: info.pool[1], children: info.pool[2] }
      case "eff":
        return { maxTurns: info.eff[0], maxConcurrent: info.eff[1], maxDepth: info.eff[2] }
      case "deadline":
        return info.deadline ?? undefined
      case "usageTotal":
        return info.usageTotal
      case "toolCallsTotal":
        return info.toolCallsTotal
      case "turnsTotal":
        return info.turnsTotal
      case "pendingRequest":
        return info.pendingRequest == null ? undefined : JSON.parse(info.pendingRequest)
      case "lastResult":
        return info.lastResult == null ? undefined : JSON.parse(info.lastResult)
      case "abort":
        return this.#abortOf(info)
      case "checkpoint":
        return info.checkpoint == null ? undefined : { input: info.checkpoint }
      case "drained":
        return JSON.parse(info.drained)
      case "wakeQueue":
        return info.wakeQueue.map((h, i) => {
          const p = info.wakePrompts[i]
          return p == null ? { h: lookup.handleAt(h) } : { h: lookup.handleAt(h), prompt: p }
        })
      case "taskKey":
        return info.taskKey ?? undefined
      case "runningChildren":
        return info.runningChildren
      case "seq":
        return info.seq
      default:
        return undefined
    }
  }
  /**
   * The abort seam of the turn in flight, or of the last turn (`null` before the first):
   * aborting it interrupts that turn. Aborted, by whatever means, it reads as aborted.
   */
  #abortOf(info) {
    if (info.abortTurn == null) return null
    if (this.#abort?.turn !== info.abortTurn) {
      const controller = new AbortController()
      const turn = info.abortTurn
      controller.signal.addEventListener("abort", () => {
        if (this.#rt[RUNTIME].info(this.#index)?.abortTurn === turn) this.#rt.interrupt(this)
      }, { once: true })
      this.#abort = { turn, controller }
    }
    const { controller } = this.#abort
    if (info.aborted && !controller.signal.aborted) controller.abort(new Error("interrupted"))
    return controller
  }
}

/** A field the reference lets its user write: the written value stays on the object itself. */
const shadow = (target, name, value) =>
  Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true })

// The reference's Handle fields, in its order (its `waiters` and `ready` are not exposed).
const HANDLE_FIELDS = [
  "id", "def", "parent", "depth", "children", "inbox", "state", "pool", "eff", "deadline", "usageTotal",
  "toolCallsTotal", "turnsTotal", "pendingRequest", "lastResult", "abort", "checkpoint", "drained", "wakeQueue",
  "taskKey", "runningChildren", "seq",
]

class AgentRuntime {
  #native
  #handles = []
  #defs
  #lookup

  constructor(opts) {
    const given = opts !== null && typeof opts === "object"
    const registry = (given ? opts.registry : undefined) ?? {}
    this.clock = (given ? opts.clock : undefined) ?? systemClock
    this.store = (given ? opts.store : undefined) ?? new InMemoryConversationStore()
    this.#defs = registry
    const handleAt = (i) => this.#handleAt(i)
    // The options cross whole; what JavaScript alone can do is adapted here: handles for the
    // lifecycle callbacks, the caller's Tool objects, a fetch's Response, a store's methods,
    // a clock's timers.
    const origins = new Map()
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
        onSpawn: typeof d.onSpawn === "function" ? raw(bridge((v) => d.onSpawn(handleAt(v.handle)))) : d.onSpawn,
        onClose: typeof d.onClose === "function" ? raw(bridge((v) => d.onClose(handleAt(v.handle), v.reason))) : d.onClose,
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
          onBudget: typeof onBudget === "function" ? raw(bridge((info) => onBudget.call(opts, { ...info, handle: handleAt(info.handle) }))) : onBudget,
        }
      : opts
    if (given) origins.set(adapted, opts)
    this.#native = new native.NativeRuntime(...crossing(adapted, origins))
    this.#lookup = {
      native: this.#native,
      info: (i) => this.#native.info(i),
      handleAt,
      heartbeat: (h, everyMs, prompt, silent, onBeat) => this.#native.heartbeat(this.#index(h, "heartbeat"), everyMs, prompt, silent, onBeat),
    }
    Object.defineProperty(this, RUNTIME, { value: this.#lookup })
  }

  #handleAt(i, def) {
    let h = this.#handles[i]
    if (!h) {
      const info = this.#native.info(i)
      const d = def ?? (i === 0 ? { name: "root", does: "runtime root", model: "none" } : this.#defs[info.def])
      h = new Handle(RUNTIME, this, i, d)
      this.#handles[i] = h
    }
    return h
  }

  #index(h, where) {
    const slot = h !== null && typeof h === "object" ? handleSlots.get(h) : undefined
    if (!slot || slot.rt !== this) throw new TypeError(`AgentRuntime.${where}: expected a Handle of this runtime`)
    return slot.index
  }

  get root() {
    return this.#handleAt(0)
  }
  get trace() {
    return this.#native.trace()
  }
  get concurrentTurns() {
    return this.#native.concurrentTurns()
  }
  set concurrentTurns(value) {
    shadow(this, "concurrentTurns", value)
  }
  get maxObservedConcurrentTurns() {
    return this.#native.maxObservedConcurrentTurns()
  }
  set maxObservedConcurrentTurns(value) {
    shadow(this, "maxObservedConcurrentTurns", value)
  }

  spawn(parent, defName, budget) {
    const r = this.#native.spawn(this.#index(parent, "spawn"), String(defName), budget == null ? undefined : encode(budget))
    if (r.error !== undefined && r.error !== null) return { error: r.error }
    const base = this.#defs[defName]
    const def = budget ? { ...base, budget: { ...base.budget, ...budget } } : base
    return this.#handleAt(r.handle, def)
  }

  post(h, item) {
    this.#native.seam(userSeam())
    const i = item ?? {}
    const err = this.#native.post(this.#index(h, "post"), String(i.from), String(i.channel), String(i.text))
    return err == null ? { ok: true } : { ok: false, error: err }
  }

  wake(h, prompt) {
    this.#native.seam(userSeam())
    const err = this.#native.wake(this.#index(h, "wake"), prompt === undefined ? undefined : String(prompt))
    return err == null ? { ok: true } : { ok: false, error: err }
  }

  async wait(h, opts) {
    const by = opts?.by === undefined ? undefined : this.#index(opts.by, "wait")
    const timeout = opts?.timeoutMs ? Number(opts.timeoutMs) : undefined
    return JSON.parse(await this.#native.wait(this.#index(h, "wait"), timeout, by))
  }

  interrupt(h) {
    this.#native.interrupt(this.#index(h, "interrupt"))
  }

  async close(h, opts) {
    await this.#native.close(this.#index(h, "close"), !!opts?.force, opts?.reason === undefined ? undefined : String(opts.reason))
  }

  list(h, acc = []) {
    for (const v of this.#native.list(h === undefined ? 0 : this.#index(h, "list"))) {
      acc.push({ id: v.id, state: v.state, tokens: v.tokens, inbox: v.inbox })
    }
    return acc
  }

  inspect(h) {
    const v = this.#native.inspect(this.#index(h, "inspect"))
    return { id: v.id, state: v.state, tokens: v.tokens, inbox: v.inbox, turns: v.turns, poolTokens: v.poolTokens, pending: v.pending == null ? undefined : JSON.parse(v.pending) }
  }

  async resume(answer) {
    this.#native.seam(userSeam())
    await this.#native.resume(encode(answer))
  }

  /** One-shot: spawn → wake → wait → close (kept parked when pending). */
  async runAgent(name, prompt) {
    this.#native.seam(userSeam())
    return fromCore(await this.#native.runAgent(String(name), String(prompt)))
  }
}

module.exports = { systemClock, isVerbError, Handle, AgentRuntime, RUNTIME }
