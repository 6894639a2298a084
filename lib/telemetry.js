"use strict"
// The `telemetry` option: the core decides which spans a run has and what they say (a run's
// `invoke_agent`, each model call's `chat <model>`, each tool's `execute_tool <name>`); this
// module only hands them to OpenTelemetry's API, an optional peer loaded the first time a
// client asks for it. With the option off nothing here runs and nothing is loaded.

const { bridge } = require("./call-convention.js")

/** @type {any} `@opentelemetry/api`, once loaded */
let otel

/** @returns {any} the OpenTelemetry API, loaded on first use */
function api() {
  if (otel === undefined) {
    try {
      otel = require("@opentelemetry/api")
    } catch (e) {
      throw new Error("toolnexus: the `telemetry` option needs @opentelemetry/api (npm install @opentelemetry/api) and an OpenTelemetry SDK that registers a tracer provider", { cause: e })
    }
  }
  return otel
}

const VERSION = "0.16.0"

/**
 * What the `telemetry` option asks for: `undefined` when it is off (absent, false, null), else
 * a function giving the tracer to use at each run (the global provider's, looked up then, so a
 * provider registered after the client is built is the one used; or the option's own `tracer`).
 * @param {unknown} option
 * @returns {(() => any) | undefined}
 */
function telemetryOption(option) {
  if (option === undefined || option === null || option === false) return undefined
  const { trace } = api()
  if (option === true) return () => trace.getTracer("toolnexus", VERSION)
  if (typeof option === "object") {
    const o = /** @type {{ tracer?: any, tracerProvider?: any }} */ (option)
    if (o.tracer != null) {
      if (typeof o.tracer.startSpan !== "function") throw new TypeError("toolnexus: `telemetry.tracer` must be an OpenTelemetry Tracer (it has no startSpan)")
      const tracer = o.tracer
      return () => tracer
    }
    if (o.tracerProvider != null) {
      if (typeof o.tracerProvider.getTracer !== "function") throw new TypeError("toolnexus: `telemetry.tracerProvider` must be an OpenTelemetry TracerProvider (it has no getTracer)")
      const provider = o.tracerProvider
      return () => provider.getTracer("toolnexus", VERSION)
    }
    return () => trace.getTracer("toolnexus", VERSION)
  }
  throw new TypeError(`toolnexus: \`telemetry\` must be true, false or { tracer } (got ${typeof option})`)
}

/**
 * A recorder: the core tells it, in batches, when its spans started and ended (`at`, as
 * OpenTelemetry's HrTime), and asks for the propagation headers of the span named `want` when
 * a request is about to leave inside it. A span with a parent of its own (`parent`, a span of
 * this recorder) goes under it; a server's request span continues the trace its request
 * carried (`carrier`); an outermost span of a run goes under the context the run was started
 * in (`root`, a token from `Roots.enter`); anything else under `fallback` (the context active
 * when the batch arrives, by default).
 * @param {() => any} tracerOf
 * @param {{ roots?: Map<number, any>, fallback?: any }} [where]
 * @returns {JsonFn} a function the core calls (see the core's `trace` module)
 */
function recorder(tracerOf, where = {}) {
  const { context, trace, propagation, SpanKind, SpanStatusCode, ROOT_CONTEXT } = otel
  const { roots, fallback } = where
  const tracer = tracerOf()
  /** @type {Map<number, { span: any, ctx: any }>} */
  const open = new Map()
  const kinds = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT, server: SpanKind.SERVER }
  /** @param {any} ev */
  const begin = (ev) => {
    let parent
    if (ev.carrier != null) parent = propagation.extract(ROOT_CONTEXT, ev.carrier)
    else if (ev.parent != null) parent = open.get(ev.parent)?.ctx
    else if (ev.root != null) parent = roots?.get(ev.root)
    parent ??= fallback ?? context.active()
    const kind = kinds[/** @type {keyof typeof kinds} */ (ev.kind)] ?? SpanKind.INTERNAL
    const span = tracer.startSpan(ev.name, { kind, attributes: ev.attributes, startTime: ev.at }, parent)
    open.set(ev.id, { span, ctx: trace.setSpan(parent, span) })
  }
  /** @param {any} ev */
  const finish = (ev) => {
    const entry = open.get(ev.id)
    if (entry === undefined) return
    open.delete(ev.id)
    const { span } = entry
    if (ev.attributes) span.setAttributes(ev.attributes)
    if (ev.error != null) span.setStatus({ code: SpanStatusCode.ERROR, message: String(ev.error) })
    span.end(ev.at)
  }
  /** @param {any} batch */
  const record = (batch) => {
    // One span the user's tracer refuses never costs the others theirs.
    for (const ev of batch.events) {
      try {
        if (ev.op === "start") begin(ev)
        else finish(ev)
      } catch {}
    }
    const wanted = batch.want == null ? undefined : open.get(batch.want)
    if (wanted === undefined) return null
    /** @type {Record<string, string>} */
    const headers = {}
    propagation.inject(wanted.ctx, headers)
    return headers
  }
  return bridge(record)
}

/**
 * A client's runs: each started run gets a token naming the context it was started in (the
 * caller's span, if any), the parent of its outermost span; `leave` forgets it when the run ends.
 */
class Roots extends Map {
  next = 0

  /** @returns {number} a token for the context active now */
  enter() {
    this.next = (this.next + 1) % 0x7fffffff
    this.set(this.next, otel.context.active())
    // A stream asked for and never read keeps its entry: the oldest go past a bound.
    if (this.size > 10_000) this.delete(this.keys().next().value)
    return this.next
  }
}

/**
 * A server's recorder: its request spans belong to no caller's context (each continues the trace
 * its request carried, or starts one).
 * @param {() => any} tracerOf
 * @returns {JsonFn}
 */
const serverRecorder = (tracerOf) => recorder(tracerOf, { fallback: otel.ROOT_CONTEXT })

/**
 * `fn()` inside the trace a served request's span hands on (`carrier`: its propagation headers),
 * so a run it starts is that span's child.
 * @template T
 * @param {Record<string, string>} carrier
 * @param {() => T} fn
 * @returns {T}
 */
function withCarrier(carrier, fn) {
  const { context, propagation, ROOT_CONTEXT } = api()
  return context.with(propagation.extract(ROOT_CONTEXT, carrier), fn)
}

/** @returns {any} the context active now (once `telemetryOption` has loaded the API) */
const activeContext = () => otel.context.active()

module.exports = { telemetryOption, recorder, serverRecorder, withCarrier, Roots, activeContext }
