"use strict"
// The `telemetry` option: the core decides which spans a run has and what they say (a run's
// `invoke_agent`, each model call's `chat <model>`, each tool's `execute_tool <name>`); this
// module only hands them to OpenTelemetry's API, an optional peer loaded the first time a
// client asks for it. With the option off nothing here runs and nothing is loaded.

const { bridge } = require("./crossing.js")

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
 * The recorder one run's spans go to: spans with no parent in the run are children of the
 * context active where the run was started (the caller's span, if any).
 * @param {() => any} tracerOf
 * @param {any} [parentContext] the context the run's outermost span belongs to (the active one by default)
 * @returns {unknown} a function the core calls (see the core's `trace` module)
 */
function recorder(tracerOf, parentContext) {
  const { context, trace, propagation, SpanKind, SpanStatusCode } = otel
  const tracer = tracerOf()
  const root = parentContext ?? context.active()
  /** @type {Map<number, { span: any, ctx: any }>} */
  const open = new Map()
  const kinds = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT, server: SpanKind.SERVER }
  /** @param {any} ev */
  const record = (ev) => {
    if (ev.op === "start") {
      const parent = ev.parent == null ? root : open.get(ev.parent)?.ctx ?? root
      const span = tracer.startSpan(ev.name, { kind: kinds[/** @type {keyof typeof kinds} */ (ev.kind)] ?? SpanKind.INTERNAL, attributes: ev.attributes }, parent)
      const ctx = trace.setSpan(parent, span)
      open.set(ev.id, { span, ctx })
      /** @type {Record<string, string>} */
      const headers = {}
      propagation.inject(ctx, headers)
      return headers
    }
    const entry = open.get(ev.id)
    if (entry === undefined) return null
    open.delete(ev.id)
    const { span } = entry
    if (ev.attributes) span.setAttributes(ev.attributes)
    if (ev.error != null) span.setStatus({ code: SpanStatusCode.ERROR, message: String(ev.error) })
    span.end()
    return null
  }
  return bridge(record)
}

module.exports = { telemetryOption, recorder }
