// The OpenTelemetry SDK's own share of `toolnexus-otel`: the `toolnexus` run with `telemetry`
// off, and after it the same five spans (a run, two model calls, two tool calls, with the same
// attribute counts) made by hand through the same SDK setup (batch processor, an exporter that
// drops them). Its figures over the `toolnexus` row are what recording costs in this process
// whoever records; `toolnexus-otel` over this row is what our crossing adds.

import { context, trace, SpanKind } from "@opentelemetry/api"
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { MODEL } from "../lib/scenario.mjs"
import { setup as plain } from "./toolnexus.mjs"

/** An exporter that takes every batch and keeps nothing. */
const dropping = {
  export(spans, done) {
    done({ code: 0 })
  },
  shutdown: async () => {},
  forceFlush: async () => {},
}

const model = (op) => ({ "gen_ai.operation.name": op, "gen_ai.provider.name": "openai", "gen_ai.request.model": MODEL })

/** One run's spans, as toolnexus-otel records them. */
function record(tracer) {
  const outer = context.active()
  const run = tracer.startSpan(`invoke_agent ${MODEL}`, { kind: SpanKind.INTERNAL, attributes: model("invoke_agent") }, outer)
  const inside = trace.setSpan(outer, run)
  const chat = () => {
    const s = tracer.startSpan(`chat ${MODEL}`, { kind: SpanKind.CLIENT, attributes: { ...model("chat"), "server.address": "127.0.0.1", "server.port": 80 } }, inside)
    s.setAttributes({ "gen_ai.response.model": MODEL, "gen_ai.response.id": "chatcmpl-1", "gen_ai.response.finish_reasons": ["stop"], "gen_ai.usage.input_tokens": 60, "gen_ai.usage.output_tokens": 40 })
    s.end()
  }
  const tool = (name) => {
    const attributes = { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.type": "function", "gen_ai.tool.call.id": "call_1", "toolnexus.tool.source": "native" }
    tracer.startSpan(`execute_tool ${name}`, { kind: SpanKind.INTERNAL, attributes }, inside).end()
  }
  chat()
  tool("get_weather")
  tool("add")
  chat()
  run.setAttributes({ "gen_ai.usage.input_tokens": 180, "gen_ai.usage.output_tokens": 60, "toolnexus.run.turns": 2, "toolnexus.run.tool_calls": 2, "toolnexus.run.status": "done" })
  run.end()
}

export async function setup(options) {
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] })
  const tracer = provider.getTracer("toolnexus", "0.16.0")
  const untraced = await plain(options)
  return {
    run: async () => {
      const text = await untraced.run()
      record(tracer)
      return text
    },
    close: async () => {
      await provider.shutdown()
      await untraced.close()
    },
  }
}
