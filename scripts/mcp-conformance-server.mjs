#!/usr/bin/env node
// A server for the MCP project's conformance suite (npm `@modelcontextprotocol/conformance`),
// written only against toolnexus's public API, as a user would write one: a toolkit served with
// `toolkit.serve`, with the tools, prompts and resources the suite's server scenarios call for.
// It prints its MCP URL on stdout's first line and serves until it is signalled.
//
//   node scripts/mcp-conformance-server.mjs [port]
import { createToolkit, defineTool, pending } from "../index.js"

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
// A 1x1 red pixel PNG, and the smallest WAV (a header and no samples).
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="

/** A tool whose result is the MCP content blocks `content` (its text for a model: `output`). */
const blocks = (name, description, output, content) =>
  defineTool({ name, description, run: () => ({ output, isError: false, content }) })

/**
 * A tool that asks its caller (a served `pending` becomes an elicitation) and, run again with the
 * answer, says what came back.
 */
const asking = (name, description, prompt, schema, inputSchema) =>
  defineTool({
    name,
    description,
    inputSchema,
    run: (args, ctx) => {
      const a = ctx?.answer
      if (!a) return pending({ kind: "input", prompt: prompt(args), data: { schema } })
      const action = a.ok ? "accept" : a.reason === "declined" ? "decline" : "cancel"
      return `Elicitation completed: action=${action}, content=${JSON.stringify(a.data ?? {})}`
    },
  })

const tools = [
  defineTool({
    name: "test_simple_text",
    description: "Returns a simple text response",
    run: () => "This is a simple text response for testing.",
  }),
  blocks("test_image_content", "Returns an image", "an image", [{ type: "image", data: PNG, mimeType: "image/png" }]),
  blocks("test_audio_content", "Returns audio", "a sound", [{ type: "audio", data: WAV, mimeType: "audio/wav" }]),
  blocks("test_embedded_resource", "Returns an embedded resource", "This is an embedded resource content.", [
    {
      type: "resource",
      resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." },
    },
  ]),
  blocks("test_multiple_content_types", "Returns text, an image and a resource", "Multiple content types test:", [
    { type: "text", text: "Multiple content types test:" },
    { type: "image", data: PNG, mimeType: "image/png" },
    {
      type: "resource",
      resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: '{"test":"data","value":123}' },
    },
  ]),
  defineTool({
    name: "test_tool_with_logging",
    description: "Sends log messages while it runs",
    run: async (_args, ctx) => {
      ctx?.log?.("info", "Tool execution started")
      await sleep(50)
      ctx?.log?.("info", "Tool processing data")
      await sleep(50)
      ctx?.log?.("info", "Tool execution completed")
      return "Logging test completed"
    },
  }),
  defineTool({
    name: "test_tool_with_progress",
    description: "Reports its progress",
    run: async (_args, ctx) => {
      ctx?.progress?.(0, 100)
      await sleep(50)
      ctx?.progress?.(50, 100)
      await sleep(50)
      ctx?.progress?.(100, 100)
      return "Progress test completed"
    },
  }),
  defineTool({
    name: "test_error_handling",
    description: "Always fails",
    run: () => {
      throw new Error("This tool intentionally returns an error for testing")
    },
  }),
  defineTool({
    name: "test_reconnection",
    description: "Closes its event stream mid-call; the client resumes it for the result",
    run: async (_args, ctx) => {
      ctx?.closeStream?.()
      await sleep(200)
      return "Reconnection test completed"
    },
  }),
  defineTool({
    name: "test_sampling",
    description: "Asks the caller's model",
    inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
    run: async ({ prompt }, ctx) => {
      const answer = await ctx.sample({ messages: [prompt], maxTokens: 100 })
      return `LLM response: ${answer.content?.text ?? JSON.stringify(answer.content)}`
    },
  }),
  asking(
    "test_elicitation",
    "Asks the user",
    ({ message }) => message,
    {
      type: "object",
      properties: {
        username: { type: "string", description: "User's response" },
        email: { type: "string", description: "User's email address" },
      },
      required: ["username", "email"],
    },
    { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  ),
  asking("test_elicitation_sep1034_defaults", "Asks with defaults", () => "Please review your details", {
    type: "object",
    properties: {
      name: { type: "string", default: "John Doe" },
      age: { type: "integer", default: 30 },
      score: { type: "number", default: 95.5 },
      status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
      verified: { type: "boolean", default: true },
    },
  }),
  asking("test_elicitation_sep1330_enums", "Asks with every kind of enum", () => "Please choose", {
    type: "object",
    properties: {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: {
        type: "string",
        oneOf: [
          { const: "value1", title: "First Option" },
          { const: "value2", title: "Second Option" },
          { const: "value3", title: "Third Option" },
        ],
      },
      legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
      untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: {
        type: "array",
        items: {
          anyOf: [
            { const: "value1", title: "First Choice" },
            { const: "value2", title: "Second Choice" },
            { const: "value3", title: "Third Choice" },
          ],
        },
      },
    },
  }),
  defineTool({
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    },
    run: (args) => JSON.stringify(args),
  }),
]

const prompts = [
  { name: "test_simple_prompt", description: "A prompt without arguments", get: () => "This is a simple prompt for testing." },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with two arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
    get: ({ arg1, arg2 }) => `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`,
    complete: { arg1: (value) => ["paris", "park", "party"].filter((v) => v.startsWith(value)) },
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt that embeds a resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
    get: ({ resourceUri }) => [
      {
        role: "user",
        content: { type: "resource", resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } },
      },
      "Please process the embedded resource above.",
    ],
  },
  {
    name: "test_prompt_with_image",
    description: "A prompt with an image",
    get: () => [{ role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } }, "Please analyze the image above."],
  },
]

const resources = [
  {
    uri: "test://static-text",
    name: "static-text",
    description: "A text resource",
    mimeType: "text/plain",
    read: () => "This is the content of the static text resource.",
  },
  {
    uri: "test://static-binary",
    name: "static-binary",
    description: "A binary resource",
    mimeType: "image/png",
    read: () => Buffer.from(PNG, "base64"),
  },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource to watch", read: () => "watched" },
]

const resourceTemplates = [
  {
    uriTemplate: "test://template/{id}/data",
    name: "template-data",
    description: "Data by id",
    mimeType: "application/json",
    read: ({ params }) => JSON.stringify({ id: params.id, templateTest: true, data: `Data for ID: ${params.id}` }),
  },
]

const toolkit = await createToolkit({ builtins: false, extraTools: tools })
const port = process.argv[2] ?? "0"
const server = await toolkit.serve(`127.0.0.1:${port}`, {
  mcp: { name: "toolnexus-conformance", version: "1.0.0", prompts, resources, resourceTemplates },
})
console.log(`${server.url.replace("127.0.0.1", "localhost")}/mcp`)

const stop = async () => {
  await server.stop()
  await toolkit.close()
  process.exit(0)
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
