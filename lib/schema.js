"use strict"
// Tool schemas given as Standard Schema objects (zod 4, valibot, arktype, ...): the JSON Schema
// a model, an MCP client or an adapter is shown (made by the schema library's own converter),
// the refusal when no converter is at hand, and argument validation before a tool runs.
// Anything without `~standard` is a JSON Schema and is never touched here.

const { createRequire } = require("node:module")
const path = require("node:path")

// The JSON Schema dialect asked of converters. 2020-12 is what the MCP specification defaults
// to and what OpenAI and Anthropic read; `$schema` is dropped from the result (Gemini refuses
// keys it does not know in function parameters).
const TARGET = "draft-2020-12"

/**
 * A Standard Schema as far as this module reads it.
 * @typedef {{ "~standard": { vendor?: unknown, validate?: unknown, jsonSchema?: { input?: unknown } } }} StandardLike
 */

/**
 * Why a schema cannot be shown as JSON Schema, and what the user can do about it.
 * @typedef {{ vendor: string, reason: string, remedy: string }} Refusal
 */

/** @typedef {{ json: Record<string, unknown> } | { refusal: Refusal }} Conversion */

/** @type {WeakMap<object, Conversion>} */
const conversions = new WeakMap()

/**
 * The `~standard` block of `s` when `s` is a Standard Schema (arktype's types are functions),
 * else undefined. Never throws (a throwing getter reads as no block).
 * @param {unknown} s
 * @returns {StandardLike["~standard"] | undefined}
 */
function standardOf(s) {
  if (s === null || (typeof s !== "object" && typeof s !== "function")) return undefined
  try {
    const block = /** @type {any} */ (s)["~standard"]
    return block !== null && typeof block === "object" ? block : undefined
  } catch {
    return undefined
  }
}

/**
 * @param {unknown} s
 * @returns {boolean}
 */
const isStandardSchema = (s) => standardOf(s) !== undefined

/**
 * @param {unknown} e
 * @returns {string}
 */
const messageOf = (e) => (e instanceof Error ? e.message : String(e))

/**
 * A package as the user's program sees it (resolved from its entry script, then from the
 * working directory), else as this package sees it; undefined when none finds it.
 * @param {string} name
 * @returns {any}
 */
function userPackage(name) {
  const entry = process.argv[1] ? [path.resolve(process.argv[1])] : []
  for (const from of [...entry, path.join(process.cwd(), "__toolnexus__.js"), __filename]) {
    try {
      return createRequire(from)(name)
    } catch {
      // Not found from there: try the next place.
    }
  }
  return undefined
}

/**
 * A converter's answer as plain JSON, without its `$schema`; a refusal when it is not an object.
 * @param {unknown} out
 * @param {string} vendor
 * @param {string} converter
 * @returns {Conversion}
 */
function tidy(out, vendor, converter) {
  const json = out === undefined ? undefined : JSON.parse(JSON.stringify(out))
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    return { refusal: { vendor, reason: `${converter} gave no JSON Schema object`, remedy: "pass a JSON Schema object as inputSchema instead" } }
  }
  delete json.$schema
  return { json }
}

/**
 * Run one converter; its throw becomes a refusal that quotes it.
 * @param {() => unknown} convert
 * @param {string} vendor
 * @param {string} converter
 * @returns {Conversion}
 */
function attempt(convert, vendor, converter) {
  try {
    return tidy(convert(), vendor, converter)
  } catch (e) {
    return { refusal: { vendor, reason: `${converter} failed: ${messageOf(e)}`, remedy: "pass a JSON Schema object as inputSchema instead" } }
  }
}

/**
 * The JSON Schema of a Standard Schema, by the first converter that applies: the schema's own
 * Standard JSON Schema (`~standard.jsonSchema.input`), else the library's documented one.
 * @param {any} schema
 * @param {NonNullable<StandardLike["~standard"]>} std
 * @returns {Conversion}
 */
function convert(schema, std) {
  const vendor = typeof std.vendor === "string" ? std.vendor : String(std.vendor)
  const input = std.jsonSchema?.input
  if (typeof input === "function") {
    const out = attempt(() => input.call(std.jsonSchema, { target: TARGET }), vendor, "~standard.jsonSchema.input")
    if ("json" in out) return out
    // A library whose own converter failed may still have a documented one below.
    if (!["zod", "valibot", "arktype"].includes(vendor)) return out
  }
  if (vendor === "zod") {
    if (schema._zod === undefined) {
      return { refusal: { vendor, reason: "it is a zod 3 schema, and zod 3 has no JSON Schema converter", remedy: "use zod 4 (npm install zod@4), or pass a JSON Schema object as inputSchema" } }
    }
    const zod = userPackage("zod")
    const toJSONSchema = typeof zod?.toJSONSchema === "function" ? zod.toJSONSchema : userPackage("zod/v4")?.toJSONSchema
    if (typeof toJSONSchema !== "function") {
      return { refusal: { vendor, reason: "zod 4's z.toJSONSchema was not found from this program", remedy: "install zod 4 next to your program (npm install zod@4), or pass a JSON Schema object as inputSchema" } }
    }
    return attempt(() => toJSONSchema(schema, { target: TARGET, io: "input" }), vendor, "z.toJSONSchema")
  }
  if (vendor === "valibot") {
    const toJsonSchema = userPackage("@valibot/to-json-schema")?.toJsonSchema
    if (typeof toJsonSchema !== "function") {
      return { refusal: { vendor, reason: "valibot converts to JSON Schema through @valibot/to-json-schema, which is not installed", remedy: "install it (npm install @valibot/to-json-schema), or pass a JSON Schema object as inputSchema" } }
    }
    return attempt(() => toJsonSchema(schema, { target: TARGET, typeMode: "input" }), vendor, "toJsonSchema of @valibot/to-json-schema")
  }
  if (vendor === "arktype" && typeof schema.toJsonSchema === "function") {
    return attempt(() => schema.toJsonSchema(), vendor, "arktype's toJsonSchema")
  }
  return {
    refusal: {
      vendor,
      reason: `it offers no Standard JSON Schema (~standard.jsonSchema) and "${vendor}" has no converter toolnexus knows`,
      remedy: "pass a JSON Schema object as inputSchema, or a schema from a library that implements Standard JSON Schema",
    },
  }
}

/**
 * What to show of a Standard Schema (computed once per schema object). Never throws.
 * @param {unknown} schema a Standard Schema
 * @returns {Conversion}
 */
function conversionOf(schema) {
  const std = standardOf(schema)
  if (std === undefined) return { refusal: { vendor: "unknown", reason: "it is not a Standard Schema", remedy: "pass a JSON Schema object as inputSchema" } }
  const key = /** @type {object} */ (schema)
  let done = conversions.get(key)
  if (!done) {
    try {
      done = convert(schema, std)
    } catch (e) {
      done = { refusal: { vendor: String(std.vendor), reason: messageOf(e), remedy: "pass a JSON Schema object as inputSchema instead" } }
    }
    conversions.set(key, done)
  }
  return done
}

/**
 * `defineTool`'s `inputSchema`: a Standard Schema's JSON Schema when it converts, else what
 * was given (a JSON Schema, or a Standard Schema refused where it would be sent).
 * @param {unknown} schema
 * @returns {unknown}
 */
function shownSchema(schema) {
  if (!isStandardSchema(schema)) return schema
  const c = conversionOf(schema)
  return "json" in c ? c.json : schema
}

/**
 * The schema a tool's declaration carries across to the core: a JSON Schema as given, a
 * Standard Schema converted, and nothing for one that cannot be (the core declares the empty
 * object schema; the refusal is made where the list is sent, see `schemaRefusal`).
 * @param {unknown} schema
 * @returns {unknown}
 */
function declaredSchema(schema) {
  if (!isStandardSchema(schema)) return schema
  const c = conversionOf(schema)
  return "json" in c ? c.json : undefined
}

/**
 * The error that refuses to send tool `name`'s schema, or undefined when it can be sent.
 * @param {unknown} name
 * @param {unknown} schema
 * @returns {TypeError | undefined}
 */
function schemaRefusal(name, schema) {
  if (!isStandardSchema(schema)) return undefined
  const c = conversionOf(schema)
  if ("json" in c) return undefined
  const { vendor, reason, remedy } = c.refusal
  return new TypeError(`tool "${String(name)}": its inputSchema is a ${vendor} Standard Schema that cannot be sent as JSON Schema: ${reason}; ${remedy}`)
}

/** @returns {Record<string, unknown>} the empty object schema, as the core declares a tool without one */
const emptySchema = () => ({ type: "object", properties: {}, additionalProperties: false })

/** Schemas already said to be unsendable (so an adapter called each turn says it once). */
const warned = new WeakSet()

/**
 * Where the reference handed a tool's schema on without failing (the adapters, an MCP server's
 * `tools/list`, a runtime's turns), one with no JSON Schema is declared as the empty object
 * schema and a warning says so, once per schema; never its internals.
 * @param {unknown} name
 * @param {unknown} schema
 * @returns {boolean} whether the schema cannot be sent (and was declared empty)
 */
function warnUnsendable(name, schema) {
  const refused = schemaRefusal(name, schema)
  if (refused === undefined) return false
  const key = /** @type {object} */ (schema)
  if (!warned.has(key)) {
    warned.add(key)
    console.warn(`[toolnexus] ${refused.message} (declared as an empty object schema)`)
  }
  return true
}

/**
 * One issue's path as text: `a.b[0].c`.
 * @param {ReadonlyArray<unknown> | undefined} p
 * @returns {string}
 */
function pathText(p) {
  if (!Array.isArray(p)) return ""
  let out = ""
  for (const seg of p) {
    const key = seg !== null && typeof seg === "object" && "key" in seg ? seg.key : seg
    if (typeof key === "number") out += `[${key}]`
    else out += (out ? "." : "") + String(typeof key === "symbol" ? key.description : key)
  }
  return out
}

/**
 * The text a model reads for failed validation: every issue as `path: message` (or the message
 * alone when it has no path, or already starts with its path), joined by "; ".
 * @param {unknown} name
 * @param {ReadonlyArray<{ message?: unknown, path?: ReadonlyArray<unknown> }>} issues
 * @returns {string}
 */
function issuesText(name, issues) {
  const parts = [...issues].map((issue) => {
    const message = String(issue?.message ?? "invalid value")
    const where = pathText(issue?.path)
    return where && !message.startsWith(`${where} `) ? `${where}: ${message}` : message
  })
  return `Invalid arguments for tool "${String(name)}": ${parts.join("; ") || "validation failed"}`
}

/**
 * Validate a call's arguments with a Standard Schema: its output value, or the error result
 * the model reads.
 * @param {unknown} schema a Standard Schema
 * @param {unknown} name the tool's name
 * @param {unknown} args
 * @returns {Promise<{ value: unknown } | { failure: { output: string, isError: true } }>}
 */
async function validateArgs(schema, name, args) {
  const std = /** @type {NonNullable<StandardLike["~standard"]>} */ (standardOf(schema))
  if (typeof std.validate !== "function") {
    return { failure: { output: `Invalid arguments for tool "${String(name)}": its inputSchema has no ~standard.validate function`, isError: true } }
  }
  const result = await std.validate(args)
  if (result?.issues) return { failure: { output: issuesText(name, result.issues), isError: true } }
  return { value: result?.value }
}

/**
 * A run's `output` option as the core reads it: `{ schema, validate?, mode?, retries?, name? }`
 * and, for a Standard Schema, the box its last validated value lands in (the schema's output,
 * transforms applied, which JSON could not carry back). Nothing for an unset `output`.
 * A Standard Schema that cannot be shown as JSON Schema is refused here, naming the remedy.
 * @param {string} owner the method (`run`, `ask`, `stream`)
 * @param {{ output?: unknown, outputMode?: unknown, outputRetries?: unknown, outputName?: unknown }} ctx
 * @returns {{ doc: Record<string, unknown>, box: { value?: unknown } | undefined } | undefined}
 */
function outputOption(owner, ctx) {
  const given = ctx.output
  if (given === undefined || given === null) return undefined
  const doc = /** @type {Record<string, unknown>} */ ({ mode: ctx.outputMode, retries: ctx.outputRetries, name: ctx.outputName })
  const std = standardOf(given)
  if (std === undefined) return { doc: { ...doc, schema: given }, box: undefined }
  const c = conversionOf(given)
  if (!("json" in c)) {
    const { vendor, reason, remedy } = c.refusal
    throw new TypeError(`${owner}: \`output\` is a ${vendor} Standard Schema that cannot be sent as JSON Schema: ${reason}; ${remedy.replace("as inputSchema", "as output")}`)
  }
  const validate = std.validate
  if (typeof validate !== "function") throw new TypeError(`${owner}: \`output\` has no ~standard.validate function`)
  /** @type {{ value?: unknown }} */
  const box = {}
  /** @param {unknown} value */
  const check = async (value) => {
    const result = await validate.call(std, value)
    if (result?.issues) {
      return { issues: [...result.issues].map((i) => ({ path: pathText(i?.path), message: String(i?.message ?? "invalid value") })) }
    }
    box.value = result?.value
    return { value: result?.value }
  }
  return { doc: { ...doc, schema: c.json, validate: check }, box }
}

/**
 * The schema of a tool's structured result as its declaration carries it (`declaredSchema` of
 * its `outputSchema`; nothing when it declares none).
 * @param {{ outputSchema?: unknown }} t
 * @returns {unknown}
 */
const outputSchemaOf = (t) => declaredSchema(t.outputSchema)

module.exports = { outputOption, outputSchemaOf, isStandardSchema, shownSchema, declaredSchema, schemaRefusal, warnUnsendable, emptySchema, validateArgs, issuesText }
