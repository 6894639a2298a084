"use strict"
// The client (SPEC §8, §10, §11): the loop behind `run`, `ask`, `stream` and `translate`, its
// conversations and conversation stores, the in-process client.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { fromCore } = require("./decode.js")
const { lift, bridge } = require("./call-convention.js")
const { plainFn, raw, crossing, crossingOf } = require("./options-doc.js")
const { natives, shipped, isOwnStore } = require("./addon-objects.js")
const { loggerOption } = require("./logger.js")
const { abortWiring, underSignal } = require("./abort.js")
const { runResult } = require("./types.js")
const { fetchBridge, userSeam } = require("./fetch.js")
const { handles, toolkitHandle, refuseUnsendable } = require("./toolkit.js")
const { engineUrl, storeOfUrl } = require("./stores.js")
const { telemetryOption, recorder, Roots } = require("./telemetry.js")
const { outputOption } = require("./schema.js")

/**
 * What a run verb is given besides its prompt and toolkit, across the boundary as one document
 * (`{ output?, onText? }`, read by the core), and a way to put the schema's own output value
 * (transforms applied) on the result. Nothing crosses when neither is given.
 * @param {string} owner
 * @param {any} ctx
 * @param {unknown} [onText] `ask`'s text callback, called as a plain function
 */
function callCrossing(owner, ctx, onText) {
  const o = outputOption(owner, ctx)
  if (o === undefined && onText === undefined) return { doc: undefined, fns: undefined, settle: (/** @type {RunResult} */ r) => r }
  const [doc, fns] = crossing({ output: o?.doc, onText: plainFn(onText) })
  const box = o?.box
  /** @param {RunResult} r */
  const settle = (r) => {
    if (box !== undefined && r && "output" in r) /** @type {any} */ (r).output = box.value
    return r
  }
  return { doc, fns, settle }
}

/** @typedef {import("./toolkit.js").Toolkit} Toolkit */
/** @typedef {import("../index").RunResult} RunResult */
/** @typedef {import("../index").StreamEvent} StreamEvent */

/** @typedef {import("../index").ConversationStore} ConversationStore */

/**
 * A client's options, as far as they are read here; the whole object crosses to the core
 * (see `crossing`), which reads every field.
 * @typedef {object} ClientOptions
 * @property {ConversationStore | string | null} [store] where `ask` keeps conversations (an object, or a store URL the core opens); in memory when absent
 * @property {unknown} [fetch] the transport for LLM requests: a fetch-like function (see `fetchOption`)
 * @property {unknown} [onError] decides whether a failed LLM call is retried; called when it is a function
 * @property {unknown} [telemetry] OpenTelemetry spans for each run (see `telemetryOption`)
 * @property {{ warn(message: string): unknown } | null} [logger] told the warnings of this client's runs instead of `console.warn`
 */

/**
 * The options `createInProcessClient` hands the constructor: the model's `generate` under a key
 * of this module's own.
 * @typedef {ClientOptions & { [GENERATE]?: unknown }} ClientInit
 */

/**
 * `createInProcessClient`'s options: a client's, and the model itself.
 * @typedef {ClientOptions & { generate?: unknown }} InProcessOptions
 */

/**
 * What `run` reads of its second argument.
 * @typedef {object} RunContext
 * @property {unknown} [toolkit] a Toolkit from createToolkit(); checked (`toolkitHandle`): anything
 *   else is refused with a TypeError
 * @property {AbortSignal | null} [signal]
 * @property {unknown[] | null} [history] the transcript to continue (`null`: none)
 * @property {unknown} [output] the answer's schema: a Standard Schema or a JSON Schema (an addition)
 * @property {unknown} [outputMode] how the schema reaches the model: "auto", "native", "tool", "prompt"
 * @property {unknown} [outputRetries] how many mismatching answers go back to the model (default 1)
 * @property {unknown} [outputName] the final tool's name (default "final_answer")
 */

/**
 * What `ask` and `stream` read of their second argument.
 * @typedef {object} AskContext
 * @property {unknown} [toolkit] a Toolkit from createToolkit(), checked as for `run`
 * @property {AbortSignal | null} [signal]
 * @property {unknown} [id] the conversation's key in the store (used when truthy)
 * @property {unknown} [on_text] called with each text delta (`ask` only; a callback option)
 * @property {unknown} [onText] the same, when `on_text` is not set
 * @property {unknown} [output] the answer's schema: a Standard Schema or a JSON Schema (an addition)
 * @property {unknown} [outputMode] how the schema reaches the model: "auto", "native", "tool", "prompt"
 * @property {unknown} [outputRetries] how many mismatching answers go back to the model (default 1)
 * @property {unknown} [outputName] the final tool's name (default "final_answer")
 */

/**
 * `translate`'s request: OpenAI shapes, crossing as JSON but for `toolkit` and `signal`.
 * `toolkit`, when given, must be a Toolkit from createToolkit() (checked).
 * @typedef {{ toolkit?: unknown, signal?: AbortSignal | null, [key: string]: unknown }} TranslateRequest
 */

/**
 * The `fetch` option: a user's fetch is called, and its Response read, by `fetchBridge`.
 * @param {unknown} f
 * @returns {unknown} a bridge for a function; anything else as it is (the core reads it)
 */
const fetchOption = (f) => (typeof f === "function" ? raw(lift(fetchBridge(/** @type {import("./fetch.js").FetchLike} */ (f)))) : f)

/**
 * The `store` option: the addon's own stores cross as themselves; any other object's `get` and
 * `save` are read when called, as the reference calls them.
 * @param {unknown} store
 * @returns {unknown} the store itself when it is not an object or is one of the addon's own,
 *   else `{ get, save }` bridged
 */
function storeOption(store) {
  if (store === null || typeof store !== "object") return store
  if (isOwnStore(store)) {
    // One of the engine stores crosses as its URL (the core opens the engine itself), the
    // in-memory one as its addon object.
    return engineUrl(store) ?? store
  }
  // Taken as a ConversationStore: a missing method fails when the core calls it. Its
  // `delete(id)`, if it has one, is what deleteConversation calls.
  /** @type {{ get: unknown, save: unknown, delete?: unknown }} */
  const crossed = {
    get: raw(bridge((id) => /** @type {ConversationStore} */ (store).get(id))),
    save: raw(bridge(([id, messages]) => /** @type {ConversationStore} */ (store).save(id, messages))),
  }
  const own = /** @type {{ delete?: unknown }} */ (store)
  if (typeof own.delete === "function") {
    crossed.delete = raw(bridge(async (id) => (await /** @type {(id: unknown) => unknown} */ (own.delete).call(store, id)) !== false))
  }
  return crossed
}

/** @type {WeakMap<InMemoryConversationStore, import("../binding").NativeMemoryStore>} */
const memoryStores = new WeakMap() // InMemoryConversationStore -> NativeMemoryStore

/** Conversations for the life of the process, kept by the core (the default store). */
class InMemoryConversationStore {
  /** @param {{ maxEntries?: number }} [options] how many conversations to keep (the least recently used goes first) */
  constructor(options) {
    const store = new native.NativeMemoryStore(options === undefined ? undefined : encode(options))
    memoryStores.set(this, store)
    natives.set(this, store.shared())
  }

  /**
   * @param {unknown} id
   * @returns {Promise<unknown[] | undefined>} the conversation's messages, undefined for none
   */
  async get(id) {
    // Each store has its native store from its constructor on.
    const json = /** @type {import("../binding").NativeMemoryStore} */ (memoryStores.get(this)).get(String(id))
    return json == null ? undefined : fromCore(json)
  }

  /**
   * @param {unknown} id
   * @param {unknown} messages
   * @returns {Promise<void>}
   */
  async save(id, messages) {
    /** @type {import("../binding").NativeMemoryStore} */ (memoryStores.get(this)).save(String(id), encode(messages))
  }

  /**
   * Let a conversation go (toolnexus-native).
   * @param {unknown} id
   * @returns {Promise<boolean>} whether there was one
   */
  async delete(id) {
    return /** @type {import("../binding").NativeMemoryStore} */ (memoryStores.get(this)).delete(String(id))
  }
}
shipped.add(InMemoryConversationStore.prototype)


/**
 * A run of the client's: its RunResult, shaped as the reference's.
 * @param {AbortSignal | null | undefined} signal
 * @param {(token: import("../binding").CancelToken | undefined) => PromiseLike<import("./decode.js").Crossed>} call
 * @returns {Promise<RunResult>}
 */
async function runUnder(signal, call) {
  // Without a signal there is nothing to wire: one await instead of three nested async calls.
  if (signal == null) return runResult(fromCore(await call(undefined)))
  return runResult(await underSignal(signal, call))
}

const GENERATE = Symbol("toolnexus.generate")

/** A model, its options, and the loop that runs against it: every run goes through the core. */
class Client {
  /** @type {import("../binding").NativeClient} */
  #native
  /** @type {ConversationStore} the store `ask` uses: the caller's, or one in memory */
  #store
  /** @type {Roots | undefined} the contexts runs were started in, by token (`telemetry` on) */
  #roots

  /** @param {ClientInit} opts */
  constructor(opts) {
    const given = opts !== null && typeof opts === "object"
    // A store without get/save fails where the reference fails: when the client uses it.
    // A store URL is the core's to open; `conversationStore()` answers the store it names.
    this.#store = /** @type {ConversationStore} */ (storeOfUrl((given ? opts.store : undefined) ?? new InMemoryConversationStore()))
    const generate = given ? opts[GENERATE] : undefined
    const onError = given ? opts.onError : undefined
    const tracer = given ? telemetryOption(opts.telemetry) : undefined
    this.#roots = tracer && new Roots()
    const adapted = given
      ? {
          ...opts,
          // One recorder for all the client's runs; each run names its caller's context by token.
          telemetry: tracer && raw(recorder(tracer, { roots: this.#roots })),
          fetch: fetchOption(opts.fetch),
          store: storeOption(this.#store),
          logger: loggerOption(opts.logger),
          onError: typeof onError === "function" ? raw(bridge((/** @type {import("../index").ErrorInfo} */ info) => onError("error" in info ? { ...info, error: native.makeError(encode(info.error)) } : info))) : onError,
          // Called as a plain function, as the reference calls it.
          generate: typeof generate === "function" ? raw(bridge(/** @type {(request: unknown) => unknown} */ (generate))) : generate,
        }
      : opts
    this.#native = new native.NativeClient(...crossingOf(adapted, opts), generate !== undefined)
  }

  /** @returns {ConversationStore} */
  conversationStore() {
    return this.#store
  }

  /**
   * The metrics so far, as Prometheus text.
   * @returns {string}
   */
  metrics() {
    return this.#native.metrics()
  }

  /**
   * Run the loop over `prompt` with `ctx.toolkit`'s tools.
   * @param {unknown} prompt
   * @param {RunContext} ctx
   * @returns {Promise<RunResult>}
   */
  async run(prompt, ctx) {
    const handle = toolkitHandle(ctx, "run")
    // `null` crosses as "null": the core reads it as no history.
    const history = ctx.history === undefined ? undefined : encode(ctx.history)
    const out = callCrossing("run", ctx)
    const roots = this.#roots
    if (roots === undefined) return out.settle(await runUnder(ctx.signal, (token) => this.#native.run(String(prompt), handle, history, out.doc, out.fns, token, userSeam())))
    const root = roots.enter()
    try {
      return out.settle(await runUnder(ctx.signal, (token) => this.#native.run(String(prompt), handle, history, out.doc, out.fns, token, userSeam(), root)))
    } finally {
      roots.delete(root)
    }
  }

  /**
   * A run of the core's, under `signal`, recorded in the caller's trace context (`telemetry`).
   * @param {AbortSignal | null | undefined} signal
   * @param {(token: import("../binding").CancelToken | undefined, root: number | undefined) => PromiseLike<import("./decode.js").Crossed>} call
   * @returns {Promise<RunResult>}
   */
  async #traced(signal, call) {
    const roots = this.#roots
    const root = roots?.enter()
    try {
      return await runUnder(signal, (token) => call(token, root))
    } finally {
      if (root !== undefined) roots?.delete(root)
    }
  }

  /**
   * A run that continues the conversation the store keeps under `ctx.id`.
   * @param {unknown} prompt
   * @param {AskContext} ctx
   * @returns {Promise<RunResult>}
   */
  async ask(prompt, ctx) {
    const handle = toolkitHandle(ctx, "ask")
    const id = ctx.id ? String(ctx.id) : undefined
    const out = callCrossing("ask", ctx, ctx.on_text ?? ctx.onText)
    return out.settle(await this.#traced(ctx.signal, (token, root) => this.#native.ask(String(prompt), handle, id, out.doc, out.fns, token, userSeam(), root)))
  }

  /**
   * SPEC §10 durable resume: the run that parked with `pending` (its RunResult's `pending`;
   * `history` is that result's `messages`) goes on with `answer`, which must echo `pending.id`.
   * The Answer reaches the parked call alone; the turn's other parked calls run again and park
   * on their own Requests. An Answer is applied once (claimed in the client's store).
   * @param {unknown} toolkit a Toolkit from createToolkit()
   * @param {unknown} history the transcript the run parked with
   * @param {unknown} pending the Request it parked on
   * @param {unknown} answer `{ id, ok, data? }`
   * @param {{ signal?: AbortSignal | null, output?: unknown, outputMode?: unknown, outputRetries?: unknown, outputName?: unknown } | null} [options]
   * @returns {Promise<RunResult>}
   */
  async runWithAnswer(toolkit, history, pending, answer, options) {
    const handle = toolkitHandle({ toolkit }, "runWithAnswer")
    const out = callCrossing("runWithAnswer", options ?? {})
    return out.settle(await this.#traced(options?.signal, (token, root) => this.#native.runWithAnswer(handle, encode(history), encode(pending), encode(answer), out.doc, out.fns, token, userSeam(), root)))
  }

  /**
   * `runWithAnswer` over the conversation the store keeps under `conversationId` (the `id` the
   * parked `ask` was given), saved as the run goes.
   * @param {unknown} toolkit a Toolkit from createToolkit()
   * @param {unknown} conversationId
   * @param {unknown} pending the Request it parked on
   * @param {unknown} answer `{ id, ok, data? }`
   * @param {{ signal?: AbortSignal | null, output?: unknown, outputMode?: unknown, outputRetries?: unknown, outputName?: unknown } | null} [options]
   * @returns {Promise<RunResult>}
   */
  async askWithAnswer(toolkit, conversationId, pending, answer, options) {
    const handle = toolkitHandle({ toolkit }, "askWithAnswer")
    const out = callCrossing("askWithAnswer", options ?? {})
    return out.settle(await this.#traced(options?.signal, (token, root) => this.#native.askWithAnswer(handle, String(conversationId), encode(pending), encode(answer), out.doc, out.fns, token, userSeam(), root)))
  }

  /**
   * Delete a conversation from the store, with what its runs parked on: a parked Request of
   * it can no longer be answered (toolnexus-native).
   * @param {unknown} conversationId
   * @returns {Promise<boolean>} whether the store had it
   */
  async deleteConversation(conversationId) {
    return this.#native.deleteConversation(String(conversationId))
  }

  /**
   * One provider call, OpenAI shapes in and out; no tool is run.
   * @param {TranslateRequest} req
   * @returns {Promise<import("../index").TranslateResult>}
   */
  async translate(req) {
    if (req === null || typeof req !== "object") throw new TypeError("translate: request must be an object")
    // Looked up whatever it is: anything that is not one of our Toolkits finds nothing.
    const handle = req.toolkit === undefined ? undefined : handles.get(/** @type {Toolkit} */ (req.toolkit))
    if (req.toolkit !== undefined && !handle) throw new TypeError("translate: `toolkit` must be a Toolkit from createToolkit()")
    if (handle) refuseUnsendable(/** @type {Toolkit} */ (req.toolkit))
    const { toolkit, signal, ...plain } = req
    return underSignal(signal, (token) => this.#native.translate(encode(plain), handle, token, userSeam()))
  }

  /**
   * A translate result's tool calls as an OpenAI `tool_calls` array (each field as the result has it).
   * @param {unknown} res
   * @returns {Array<{ id: unknown, type: "function", function: { name: unknown, arguments: unknown } }>}
   */
  static toolCallsJSON(res) {
    return JSON.parse(native.toolCallsJson(encode(res)))
  }

  /**
   * A conversation over `ctx.toolkit` (a Toolkit from createToolkit(), checked at each send).
   * @param {{ toolkit?: unknown, signal?: AbortSignal | null } | null} [ctx]
   * @returns {Conversation}
   */
  conversation(ctx) {
    return new Conversation(this, ctx?.toolkit, ctx?.signal)
  }

  /**
   * Events as the loop produces them. The loop waits for each event to be taken before it
   * goes on, as a generator would, and stops when the consumer stops.
   * @param {unknown} prompt
   * @param {AskContext} ctx
   * @returns {AsyncGenerator<StreamEvent, void, unknown>}
   */
  stream(prompt, ctx) {
    const nativeClient = this.#native
    // The caller's context, where the stream was asked for (the generator's body runs later).
    const roots = this.#roots
    const root = roots?.enter()
    return (async function* streamEvents() {
      const handle = toolkitHandle(ctx, "stream")
      const out = callCrossing("stream", ctx)
      const signal = ctx.signal
      const { token, release } = abortWiring(signal, true)
      /** @type {Array<{ ev: StreamEvent, ack: (answer: string) => void }>} events not yet taken, each with its acknowledgement */
      const queue = []
      /** @type {((value?: unknown) => void) | null} wakes the generator waiting for news */
      let wake = null
      let settled = false
      /** @type {unknown} */
      let failure
      const poke = () => {
        const w = wake
        wake = null
        w?.()
      }
      /** @param {import("./decode.js").Crossed} json */
      const onEvent = (json) =>
        new Promise((ack) => {
          const ev = fromCore(json)
          if (ev?.type === "done") out.settle(runResult(ev.result))
          queue.push({ ev, ack })
          poke()
        })
      const id = ctx.id ? String(ctx.id) : undefined
      nativeClient.stream(String(prompt), handle, id, out.doc, out.fns, token, lift(onEvent), userSeam(), root).then(
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
            // The queue is not empty here.
            const { ev, ack } = /** @type {(typeof queue)[number]} */ (queue.shift())
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
        // `abortWiring` asked with `always` gives a token.
        if (!settled) /** @type {import("../binding").CancelToken} */ (token).cancel()
        for (const { ack } of queue.splice(0)) ack("null")
        release()
        if (root !== undefined) roots?.delete(root)
      }
    })()
  }
}

/** A multi-turn conversation: each send continues the transcript in `messages`. */
class Conversation {
  /** @type {Client} */
  #client
  /** @type {unknown} */
  #toolkit
  /** @type {AbortSignal | null | undefined} */
  #signal

  /**
   * @param {Client} client
   * @param {unknown} toolkit
   * @param {AbortSignal | null | undefined} signal
   */
  constructor(client, toolkit, signal) {
    /** @type {unknown[]} the transcript so far */
    this.messages = []
    this.#client = client
    this.#toolkit = toolkit
    this.#signal = signal
  }

  /**
   * A run that continues the transcript; its messages become the transcript.
   * @param {unknown} prompt
   * @returns {Promise<RunResult>}
   */
  async send(prompt) {
    const result = await this.#client.run(prompt, { toolkit: this.#toolkit, signal: this.#signal, history: this.messages })
    this.messages = result.messages
    return result
  }

  /** Start over: an empty transcript. */
  reset() {
    this.messages = []
  }
}

/**
 * A client whose model is a `generate` function in this process: no wire, no key.
 * @param {InProcessOptions | null} [opts]
 * @returns {Client}
 */
function createInProcessClient(opts) {
  const { generate, ...rest } = opts ?? {}
  // The core refuses anything but a function here.
  return new Client({ ...rest, fetch: undefined, [GENERATE]: generate ?? null })
}

/**
 * A client over `opts` (see `Client`).
 * @param {ClientOptions} opts
 * @returns {Client}
 */
const createClient = (opts) => new Client(opts)

module.exports = { fetchOption, storeOption, memoryStores, InMemoryConversationStore, Client, Conversation, createClient, createInProcessClient }
