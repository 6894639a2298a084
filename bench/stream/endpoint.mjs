// The scripted streaming endpoint of the stream bench, in its own process.
//
//   node bench/stream/endpoint.mjs [--port N] [--pace-ms N]   (port 0 / absent = any free port; prints {"listening":PORT})
//
// POST .../chat/completions with `stream: true` (anything else is a 400, counted invalid), answered
// as OpenAI's chat-completions stream: `text/event-stream`, one `data: {chunk}\n\n` per event,
// `data: [DONE]` last.
//   - no `role: "tool"` message -> turn 1: 200 content deltas, then one tool call to the advertised
//     get_weather (id, name and the first argument fragment in one chunk, two more fragments),
//     a finish chunk (finish_reason "tool_calls"), a usage chunk (choices: []), [DONE];
//   - a tool result present     -> turn 2, after checking it: the assistant message carries the
//     call with arguments {"city":"Paris"}, one tool message answers that call id with the
//     weather text; then 200 content deltas, finish ("stop"), usage, [DONE].
// The usage chunk is always sent (whether or not stream_options.include_usage asks for it), so
// every runner gets the same bytes and the same number of events.
//
// Pacing: every event is one `res.write` of a precomputed Buffer, and the next is written from
// a setImmediate callback. Node corks a response's socket for the rest of the tick on each write,
// so events written in one tick would leave as one writev; one event per loop turn makes each a
// separate send() on a TCP_NODELAY socket, i.e. its own segment. The endpoint does not wait for
// the client (it cannot see reads), so a client slower than the endpoint's pace reads several
// events per read, exactly as it would from a fast provider. The pace is the same for every
// runner: there is no timer, the endpoint writes as fast as its loop turns.
// `--pace-ms N` (N > 0) spaces events by setTimeout(N) instead: a client then finds one event per
// read, as from a real model at a few hundred tokens per second, and pays its per-read wake-up on
// every event; a run then lasts at least 409 × N ms, so use it with few runs.
//
// GET /stats  -> {requests, turn1, turn2, invalid, eventsWritten, cpuUserUs, cpuSystemUs,
//                 cpuPerRequestUs, rss, lastInvalid} (since the last reset); POST /reset.

import {
  DELTAS_PER_TURN,
  FINAL_DELTAS,
  MODEL,
  TOOL_ARGS,
  TOOL_ARG_FRAGMENTS,
  TURN1_DELTAS,
  WEATHER_TEXT,
  WIRE_EVENTS_TURN1,
  WIRE_EVENTS_TURN2,
} from "./scenario.mjs"
import { chatServer, endpointStats, portArg, serve, textOf } from "../lib/endpoint.mjs"

const paceArg = process.argv.indexOf("--pace-ms")
/** 0 (the default): the next event from setImmediate; N > 0: from setTimeout(N) (see below). */
const PACE_MS = paceArg !== -1 ? Number(process.argv[paceArg + 1]) || 0 : 0
const CREATED = 1_700_000_000
const ID_WIDTH = 12
const ID_SLOT = "#".repeat(ID_WIDTH)
const CALL_PREFIX = "call_w_"

const sse = (obj) => Buffer.from(`data: ${JSON.stringify(obj)}\n\n`, "utf8")
const chunk = (delta, finishReason = null) => ({
  id: "chatcmpl-bench-stream",
  object: "chat.completion.chunk",
  created: CREATED,
  model: MODEL,
  system_fingerprint: null,
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
})
const usage = (prompt, completion) =>
  sse({
    id: "chatcmpl-bench-stream",
    object: "chat.completion.chunk",
    created: CREATED,
    model: MODEL,
    system_fingerprint: null,
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  })
const DONE = Buffer.from("data: [DONE]\n\n")

const textEvents = (deltas) => deltas.map((d, i) => sse(chunk(i === 0 ? { role: "assistant", content: d } : { content: d })))

/** Turn 1 by advertised tool name: the events, and which of them carries the per-reply call id. */
function turn1Events(toolName) {
  const head = sse(
    chunk({ tool_calls: [{ index: 0, id: CALL_PREFIX + ID_SLOT, type: "function", function: { name: toolName, arguments: TOOL_ARG_FRAGMENTS[0] } }] }),
  )
  const events = [
    ...textEvents(TURN1_DELTAS),
    head,
    ...TOOL_ARG_FRAGMENTS.slice(1).map((f) => sse(chunk({ tool_calls: [{ index: 0, function: { arguments: f } }] }))),
    sse(chunk({}, "tool_calls")),
    usage(40, DELTAS_PER_TURN + 10),
    DONE,
  ]
  if (events.length !== WIRE_EVENTS_TURN1) throw new Error("turn 1 layout does not match scenario.mjs")
  return { events, headAt: DELTAS_PER_TURN, slotAt: head.indexOf(ID_SLOT) }
}

const TURN2 = [...textEvents(FINAL_DELTAS), sse(chunk({}, "stop")), usage(300, DELTAS_PER_TURN), DONE]
if (TURN2.length !== WIRE_EVENTS_TURN2) throw new Error("turn 2 layout does not match scenario.mjs")

const turn1ByName = new Map()
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" }

// ---------------------------------------------------------------------------------------------

const counters = endpointStats({ requests: 0, turn1: 0, turn2: 0, invalid: 0, eventsWritten: 0, aborted: 0, lastInvalid: null })
const { stats, fail } = counters
let counter = 0

/** Checks a turn-2 request; an error string or null. */
function checkToolTurn(messages) {
  const results = messages.filter((m) => m?.role === "tool")
  if (results.length !== 1) return `expected one tool result, got ${results.length}`
  const id = String(results[0].tool_call_id ?? "")
  if (!id.startsWith(CALL_PREFIX)) return `tool result for unknown call id ${JSON.stringify(id)}`
  if (!textOf(results[0].content).includes(WEATHER_TEXT)) return `tool result ${JSON.stringify(results[0].content)} lacks the weather text`
  const assistant = messages.find((m) => m?.role === "assistant" && Array.isArray(m.tool_calls))
  const call = assistant?.tool_calls?.find((c) => c?.id === id)
  if (!call) return "no assistant message carries the answered tool call"
  let args
  try {
    args = JSON.parse(call.function?.arguments)
  } catch {
    return `tool call arguments ${JSON.stringify(call.function?.arguments)} are not JSON`
  }
  if (args?.city !== TOOL_ARGS.city || Object.keys(args).length !== 1) return `tool call arguments ${call.function.arguments} are not {"city":"Paris"}`
  return null
}

/** Writes `events` one per loop turn; `patch` (index, buffer) replaces one of them for this reply. */
function stream(res, events, patchAt = -1, patch = null) {
  res.writeHead(200, SSE_HEADERS)
  const last = events.length - 1
  let i = 0
  const step = () => {
    if (res.destroyed) {
      stats.aborted++
      return
    }
    const buf = i === patchAt ? patch : events[i]
    stats.eventsWritten++
    if (i === last) return res.end(buf)
    res.write(buf)
    i++
    if (PACE_MS > 0) setTimeout(step, PACE_MS)
    else setImmediate(step)
  }
  step()
}

/** Answer one chat request (counted, its body parsed, by chatServer). */
function completions(res, body) {
  if (body.stream !== true) return fail(res, 400, "this endpoint only streams; send stream: true")
  const messages = Array.isArray(body.messages) ? body.messages : []
  if (messages.some((m) => m?.role === "tool")) {
    const problem = checkToolTurn(messages)
    if (problem) return fail(res, 400, problem)
    stats.turn2++
    return stream(res, TURN2)
  }
  const names = (Array.isArray(body.tools) ? body.tools : []).map((t) => t?.function?.name ?? t?.name).filter((n) => typeof n === "string")
  const name = names.find((n) => n.includes("weather"))
  if (!name) return fail(res, 400, "the request advertises no weather tool")
  let t = turn1ByName.get(name)
  if (!t) turn1ByName.set(name, (t = turn1Events(name)))
  // A distinct call id per reply: copy the head chunk, write a fixed-width counter into it.
  const head = Buffer.from(t.events[t.headAt])
  head.write(String(++counter).padStart(ID_WIDTH, "0"), t.slotAt, ID_WIDTH, "latin1")
  stats.turn1++
  return stream(res, t.events, t.headAt, head)
}

serve(chatServer(completions, counters), portArg(0))
