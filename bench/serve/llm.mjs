// A scripted OpenAI-style endpoint for the serve bench: every chat-completions request gets the
// same final answer (no tool calls), so one served A2A task costs exactly one LLM round trip on
// every peer. Prints {"listening":PORT} on stdout.
import http from "node:http"
import { FINAL_TEXT, MODEL } from "../lib/scenario.mjs"

const reply = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-serve",
    object: "chat.completion",
    created: 1_700_000_000,
    model: MODEL,
    choices: [{ index: 0, message: { role: "assistant", content: FINAL_TEXT }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  }),
)
const headers = { "content-type": "application/json", "content-length": String(reply.length) }
const server = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(200, headers)
    res.end(reply)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ listening: server.address().port })))
