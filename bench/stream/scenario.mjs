// The streaming scenario every stream runner performs, and what each run is checked against.
//
// One run = the user asks PROMPT with one tool (get_weather) advertised, stream: true.
//   turn 1: the model streams TURN1_DELTAS (200 text deltas), then one tool call
//           get_weather {"city":"Paris"} (its arguments in fragments, as providers send them);
//   the runner executes the tool and sends its result back;
//   turn 2: the model streams FINAL_DELTAS (200 text deltas): the final answer.
// So a run is 2 streamed LLM requests, 400 text deltas, 1 tool call and 1 tool execution.
//
// Imported by the endpoint (to build the streams and check requests), the worker (to check
// answers) and the runners. Strings and the tool shared with the non-streaming bench come from
// ../lib/scenario.mjs.

export { API_KEY, MODEL, WEATHER_DESCRIPTION, WEATHER_SCHEMA, WEATHER_TEXT, getWeather, toolCalls } from "../lib/scenario.mjs"

export const PROMPT = "What's the weather in Paris? Think out loud while you check."
export const DELTAS_PER_TURN = 200
export const TOOL_NAME = "get_weather"
export const TOOL_ARGS = { city: "Paris" }
/** The tool call's arguments as the stream sends them: three fragments, concatenated by the client. */
export const TOOL_ARG_FRAGMENTS = ['{"ci', 'ty":"Pa', 'ris"}']

/** `count` deltas cycling through the words of `sentence`, each a word with its leading space. */
function deltas(sentence, count) {
  const words = sentence.split(" ")
  return Array.from({ length: count }, (_, i) => (i === 0 ? "" : " ") + words[i % words.length])
}

export const TURN1_DELTAS = deltas("Let me look up the current weather in Paris for you before I answer.", DELTAS_PER_TURN)
export const FINAL_DELTAS = deltas("In Paris it is sunny, 21 C with a light wind; a fine day for a walk.", DELTAS_PER_TURN)
export const TURN1_TEXT = TURN1_DELTAS.join("")
/** The final answer: the text of the second turn; every runner must end with exactly this. */
export const FINAL_TEXT = FINAL_DELTAS.join("")
/** Everything the user sees streamed over a run, in order. */
export const ALL_TEXT = TURN1_TEXT + FINAL_TEXT
export const TEXT_DELTAS_PER_RUN = 2 * DELTAS_PER_TURN

/**
 * SSE events on the wire per run, the same for every runner (the per-event figures divide by this):
 * turn 1 = 200 text deltas + 3 tool-call chunks (the first names the call and carries the first
 * argument fragment) + finish + usage + [DONE]; turn 2 = 200 text deltas + finish + usage + [DONE].
 */
export const WIRE_EVENTS_TURN1 = DELTAS_PER_TURN + TOOL_ARG_FRAGMENTS.length + 1 /* finish */ + 1 /* usage */ + 1 /* [DONE] */
export const WIRE_EVENTS_TURN2 = DELTAS_PER_TURN + 1 /* finish */ + 1 /* usage */ + 1 /* [DONE] */
export const WIRE_EVENTS_PER_RUN = WIRE_EVENTS_TURN1 + WIRE_EVENTS_TURN2
