"use strict"
// The client (SPEC §8, §10, §11): the loop behind `run`, `ask`, `stream` and `translate`, its
// conversations and conversation stores, the in-process client.

const { native } = require("./native.js")
const { encode, fromCore, lift, bridge, callable, raw, natives, crossing, abortWiring, underSignal } = require("./crossing.js")
const { runResult } = require("./types.js")
const { fetchBridge, userSeam } = require("./fetch.js")
const { handles, toolkitHandle } = require("./toolkit.js")

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


/** A run of the client's: its RunResult, shaped as the reference's. */
const runUnder = async (signal, call) => runResult(await underSignal(signal, call))

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

module.exports = { fetchOption, storeOption, memoryStores, InMemoryConversationStore, Client, Conversation, createClient, createInProcessClient }
