"use strict"
// Provider tool schemas (SPEC §4): OpenAI, Anthropic and Gemini declarations of a tool list.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { isStandardSchema, declaredSchema, warnUnsendable, emptySchema } = require("./schema.js")

/** @typedef {import("./core-tools.js").Tool} Tool */

/** @typedef {"openai" | "anthropic" | "gemini"} Style */

/**
 * A tool as OpenAI declares it.
 * @typedef {{ type: "function", function: { name: string, description: string, parameters: Record<string, unknown> } }} OpenAIToolDecl
 */

/**
 * A tool as Anthropic declares it.
 * @typedef {{ name: string, description: string, input_schema: Record<string, unknown> }} AnthropicToolDecl
 */

/**
 * A tool list as Gemini declares it (one entry holding every declaration).
 * @typedef {{ functionDeclarations: { name: string, description: string, parameters: Record<string, unknown> }[] }} GeminiToolDecl
 */

/**
 * What of a tool the core declares.
 * @param {Tool} t
 */
const declOf = (t) => ({ name: t.name, description: t.description, inputSchema: declaredSchema(t.inputSchema) })

/**
 * The core builds the declarations; the schema in each is then the tool's own `inputSchema`
 * object again (not a copy), as the reference hands it out, so identity and later changes to
 * it are seen the same way.
 * @param {Style} style
 * @param {any} out the declarations as parsed from the core's JSON
 * @param {Tool[]} tools the tools they declare, in the same order
 * @returns {any} `out`, its schemas put back
 */
function withSchemas(style, out, tools) {
  const decls = style === "gemini" ? out[0]?.functionDeclarations ?? [] : out
  tools.forEach((t, i) => {
    const d = decls[i]
    if (!d || (style === "openai" ? d.function?.name : d.name) !== t.name) return
    // A Standard Schema is shown as its JSON Schema; one that has none as the empty object
    // schema, and a warning says so (the reference handed these out too, as they were).
    /** @type {unknown} */
    let schema = t.inputSchema
    if (isStandardSchema(schema)) schema = warnUnsendable(t.name, schema) ? emptySchema() : declaredSchema(schema)
    if (style === "openai") d.function.parameters = schema
    else if (style === "anthropic") d.input_schema = schema
    else d.parameters = schema
  })
  return out
}

/**
 * @param {Style} style
 * @param {Tool[]} tools
 * @returns {any} the declarations, parsed from the core's JSON
 */
const adapt = (style, tools) => {
  if (!Array.isArray(tools)) throw new TypeError("tools must be an array of Tool objects")
  return withSchemas(style, JSON.parse(native.adapt(style, encode(tools.map(declOf)))), tools)
}
/**
 * @param {Tool[]} tools
 * @returns {OpenAIToolDecl[]}
 */
const toOpenAI = (tools) => adapt("openai", tools)
/**
 * @param {Tool[]} tools
 * @returns {AnthropicToolDecl[]}
 */
const toAnthropic = (tools) => adapt("anthropic", tools)
/**
 * @param {Tool[]} tools
 * @returns {GeminiToolDecl[]}
 */
const toGemini = (tools) => adapt("gemini", tools)

module.exports = { withSchemas, toOpenAI, toAnthropic, toGemini }
