"use strict"
// Provider tool schemas (SPEC §4): OpenAI, Anthropic and Gemini declarations of a tool list.

const { native } = require("./native.js")
const { encode } = require("./crossing.js")

const declOf = (t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })

/**
 * The core builds the declarations; the schema in each is then the tool's own `inputSchema`
 * object again (not a copy), as the reference hands it out, so identity and later changes to
 * it are seen the same way.
 */
function withSchemas(style, out, tools) {
  const decls = style === "gemini" ? out[0]?.functionDeclarations ?? [] : out
  tools.forEach((t, i) => {
    const d = decls[i]
    if (!d || (style === "openai" ? d.function?.name : d.name) !== t.name) return
    if (style === "openai") d.function.parameters = t.inputSchema
    else if (style === "anthropic") d.input_schema = t.inputSchema
    else d.parameters = t.inputSchema
  })
  return out
}

const adapt = (style, tools) => {
  if (!Array.isArray(tools)) throw new TypeError("tools must be an array of Tool objects")
  return withSchemas(style, JSON.parse(native.adapt(style, encode(tools.map(declOf)))), tools)
}
const toOpenAI = (tools) => adapt("openai", tools)
const toAnthropic = (tools) => adapt("anthropic", tools)
const toGemini = (tools) => adapt("gemini", tools)

module.exports = { withSchemas, toOpenAI, toAnthropic, toGemini }
