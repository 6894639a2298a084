// A scripted OpenAI-compatible chat-completions endpoint for the benchmark, in its own process.
//
//   node bench/server.mjs [--port N]     (0 / absent = any free port; prints {"listening":PORT})
//
// POST .../chat/completions (any prefix, e.g. /v1/chat/completions), non-streaming only:
//   - no `role: "tool"` message in the request  -> two parallel tool calls, get_weather {"city":"Paris"}
//     and add {"a":2,"b":2}, under the names the request advertises in `tools` (the first name
//     containing "weather", the first other one containing "add"; so MCP-prefixed names such as
//     bench_get_weather work too);
//   - tool results present                      -> the final text (FINAL_TEXT), after checking that
//     the result for the weather call carries WEATHER_TEXT and the one for the add call is 4.
//   `stream: true` is refused with 400 so a runner that streams fails loudly instead of skewing.
// GET /stats  -> {requests, toolCallReplies, finalReplies, invalid, cpuUserUs, cpuSystemUs,
//                 cpuPerRequestUs, rss, lastInvalid}   (since the last reset)
// POST /reset -> zeroes the counters and the CPU baseline.
//
// Cost per request is kept small and flat: the request body is parsed once (JSON.parse: the
// tool names and tool results have to be read), response bodies are precomputed Buffers per
// advertised tool-name pair, and the only per-reply work is one copy of the template plus a
// fixed-width counter written into it (the completion id and both tool-call ids), so every
// reply is distinct at a constant Content-Length. The server reports its own CPU per request
// so a reader can see how much of a figure is the endpoint.

import { FINAL_TEXT, MODEL, WEATHER_TEXT } from "./lib/scenario.mjs"
import { chatServer, endpointStats, portArg, serve, textOf } from "./lib/endpoint.mjs"

const ID_WIDTH = 12
const ID_SLOT = "#".repeat(ID_WIDTH)
const CREATED = 1_700_000_000

// ---------------------------------------------------------------------------------------------
// Precomputed replies

/** A reply template: the JSON bytes with ID_SLOT placeholders, and where the slots are. */
function template(obj) {
  const bytes = Buffer.from(JSON.stringify(obj), "utf8")
  const offsets = []
  for (let at = bytes.indexOf(ID_SLOT); at !== -1; at = bytes.indexOf(ID_SLOT, at + ID_WIDTH)) offsets.push(at)
  const headers = { "content-type": "application/json", "content-length": String(bytes.length) }
  return { bytes, offsets, headers }
}

function toolCallReply(weatherName, addName) {
  return template({
    id: `chatcmpl-${ID_SLOT}`,
    object: "chat.completion",
    created: CREATED,
    model: MODEL,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: `call_w_${ID_SLOT}`, type: "function", function: { name: weatherName, arguments: '{"city":"Paris"}' } },
            { id: `call_a_${ID_SLOT}`, type: "function", function: { name: addName, arguments: '{"a":2,"b":2}' } },
          ],
        },
        logprobs: null,
        finish_reason: "tool_calls",
      },
    ],
    usage: { prompt_tokens: 60, completion_tokens: 40, total_tokens: 100 },
  })
}

const FINAL_REPLY = template({
  id: `chatcmpl-${ID_SLOT}`,
  object: "chat.completion",
  created: CREATED,
  model: MODEL,
  choices: [
    { index: 0, message: { role: "assistant", content: FINAL_TEXT }, logprobs: null, finish_reason: "stop" },
  ],
  usage: { prompt_tokens: 120, completion_tokens: 20, total_tokens: 140 },
})

/** Tool-call templates by advertised name pair (runners differ: get_weather vs bench_get_weather). */
const toolReplies = new Map()

let counter = 0

/** One distinct reply: copy the template, write the counter into every id slot. */
function materialize(t) {
  const digits = String(++counter).padStart(ID_WIDTH, "0")
  const out = Buffer.allocUnsafe(t.bytes.length)
  t.bytes.copy(out)
  for (const at of t.offsets) out.write(digits, at, ID_WIDTH, "latin1")
  return out
}

// ---------------------------------------------------------------------------------------------
// Request handling

const counters = endpointStats({ requests: 0, toolCallReplies: 0, finalReplies: 0, invalid: 0, lastInvalid: null })
const { stats, fail } = counters

/** Check the tool results of a second request; returns an error string or null. */
function checkToolResults(messages) {
  let weather = 0
  let sum = 0
  for (const m of messages) {
    if (m?.role !== "tool") continue
    const id = String(m.tool_call_id ?? "")
    const text = textOf(m.content)
    if (id.startsWith("call_w_")) {
      if (!text.includes(WEATHER_TEXT)) return `weather result ${JSON.stringify(text)} lacks the weather text`
      weather++
    } else if (id.startsWith("call_a_")) {
      if (text.replace(/["\s]/g, "") !== "4") return `add result ${JSON.stringify(text)} is not 4`
      sum++
    } else {
      return `tool result for unknown call id ${JSON.stringify(id)}`
    }
  }
  if (weather !== 1 || sum !== 1) return `expected one result per tool call, got weather=${weather} add=${sum}`
  return null
}

function pickNames(tools) {
  const names = (Array.isArray(tools) ? tools : []).map((t) => t?.function?.name ?? t?.name).filter((n) => typeof n === "string")
  const weather = names.find((n) => n.includes("weather"))
  const add = names.find((n) => n !== weather && n.includes("add"))
  return weather && add ? [weather, add] : null
}

function send(res, t) {
  res.writeHead(200, t.headers)
  res.end(materialize(t))
}

/** Answer one chat request (counted, its body parsed, by chatServer). */
function completions(res, body) {
  if (body.stream === true) return fail(res, 400, "this scripted endpoint does not stream; send stream: false")
  const messages = Array.isArray(body.messages) ? body.messages : []
  if (messages.some((m) => m?.role === "tool")) {
    const problem = checkToolResults(messages)
    if (problem) return fail(res, 400, problem)
    stats.finalReplies++
    return send(res, FINAL_REPLY)
  }
  const names = pickNames(body.tools)
  if (!names) return fail(res, 400, "the request advertises no weather and add tools")
  const key = names[0] + "\u0000" + names[1]
  let t = toolReplies.get(key)
  if (!t) toolReplies.set(key, (t = toolCallReply(names[0], names[1])))
  stats.toolCallReplies++
  return send(res, t)
}

serve(chatServer(completions, counters, { health: true }), portArg(Number(process.env.BENCH_SERVER_PORT ?? 0)))
