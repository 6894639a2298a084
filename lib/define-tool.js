"use strict"
// Tools written in JavaScript (SPEC §6 native tools): `defineTool`, and `tool` / `collectTools`
// for decorated methods.

const { native } = require("./native.js")
const { isStandardSchema, shownSchema, validateArgs } = require("./schema.js")

/** @typedef {import("./core-tools.js").Tool} Tool */
/** @typedef {import("./core-tools.js").ToolContext} ToolContext */

/**
 * What `defineTool` makes a Tool of. `run` is read at each call, so a missing one fails then.
 * @typedef {object} DefineToolOptions
 * @property {string} name
 * @property {string} description
 * @property {Record<string, unknown>} [inputSchema] a JSON Schema, or a Standard Schema (zod 4,
 *   valibot, arktype...): then the tool's `inputSchema` is its JSON Schema, and each call's
 *   arguments are validated by it before `run` gets its output
 * @property {string} [source]
 * @property {Record<string, unknown>} [outputSchema] the JSON Schema (or a Standard Schema) of
 *   the tool's structured result: an object `run` returns is then also the result's
 *   `structuredContent`, and an MCP server of the tool declares it as the tool's `outputSchema`
 * @property {(this: DefineToolOptions, args: any, ctx?: ToolContext) => unknown} run
 *   a string result is the output, a ToolResult-shaped one passes through, anything else is JSON-encoded
 */

/**
 * A decorator context, as far as `tool` reads it (absent when `tool(...)` wraps a plain function).
 * @typedef {object} ToolDecoratorContext
 * @property {string | symbol} [name]
 * @property {(initializer: (this: object) => void) => void} [addInitializer]
 */

/**
 * A function `tool` has marked: the Tool made of it, under `MARK`.
 * @typedef {Function & { __tool?: Tool }} MarkedFunction
 */

// One schema object shared by every tool that declares none, as in the reference.
/** @type {Record<string, unknown>} */
const EMPTY_SCHEMA = JSON.parse(native.emptySchema())

/**
 * A Tool from a plain function (SPEC §6).
 * @param {DefineToolOptions} opts
 * @returns {Tool}
 */
function defineTool(opts) {
  if (opts == null) throw new TypeError(`Cannot read properties of ${opts} (reading 'name')`)
  const given = opts.inputSchema
  // A Standard Schema validates every call; a JSON Schema is only declared, as before.
  const standard = isStandardSchema(given) ? given : undefined
  const outputSchema =
    opts.outputSchema === undefined ? undefined : /** @type {Record<string, unknown>} */ (shownSchema(opts.outputSchema))
  return {
    name: opts.name,
    description: opts.description,
    inputSchema: /** @type {Record<string, unknown>} */ (shownSchema(given) ?? EMPTY_SCHEMA),
    source: opts.source ?? "native",
    ...(outputSchema === undefined ? {} : { outputSchema }),
    async execute(args, ctx) {
      try {
        // Read at each call, as the reference does; a missing `run` fails here, not above.
        const run = opts.run
        if (typeof run !== "function") {
          throw new TypeError(`defineTool: tool "${opts.name}" has no \`run\` function (got ${typeof run})`)
        }
        /** @type {unknown} */
        let input = args ?? {}
        if (standard !== undefined) {
          const checked = await validateArgs(standard, opts.name, input)
          if ("failure" in checked) return checked.failure
          input = checked.value
        }
        const out = await run.call(opts, input, ctx)
        // A ToolResult-shaped value passes through untouched, as the reference passes it.
        if (out !== null && typeof out === "object" && "output" in out && "isError" in out) return /** @type {import("./core-tools.js").ToolResult} */ (out)
        const output = typeof out === "string" ? out : (JSON.stringify(out) ?? "")
        // A tool that declares its result's schema hands an object back as structured content too.
        if (outputSchema !== undefined && out !== null && typeof out === "object" && !Array.isArray(out)) {
          return { output, isError: false, structuredContent: /** @type {Record<string, unknown>} */ (out) }
        }
        return { output, isError: false }
      } catch (e) {
        return { output: e instanceof Error ? e.message : String(e), isError: true }
      }
    },
  }
}

// `tool(description, opts)` marks a function; `collectTools(obj)` gathers the marked ones,
// from a per-instance registry (filled by a decorator's addInitializer) and own properties.
/** @type {WeakMap<object, Tool[]>} */
const perInstance = new WeakMap()
const MARK = "__tool"

/**
 * A decorator (or plain wrapper) marking a function as a tool.
 * @param {string} description
 * @param {{ name?: string, inputSchema?: Record<string, unknown> }} [opts] `inputSchema` as `defineTool` takes it
 * @returns {(value: unknown, context?: ToolDecoratorContext) => unknown} `value` back, marked when it is a function
 */
function tool(description, opts) {
  return function mark(value, context) {
    if (typeof value !== "function") return value
    const name = opts?.name ?? (context?.name ? String(context.name) : value.name)
    const made = defineTool({ name, description, inputSchema: opts?.inputSchema, run: (args, ctx) => value(args, ctx) })
    if (typeof context?.addInitializer === "function") {
      context.addInitializer(function register() {
        const list = perInstance.get(this) ?? []
        list.push(made)
        perInstance.set(this, list)
      })
    }
    /** @type {MarkedFunction} */ (value)[MARK] = made
    return value
  }
}

/**
 * The tools marked with `tool` on `obj`: those its decorated methods registered, then its own
 * function properties that carry one.
 * @param {object} obj
 * @returns {Tool[]}
 */
function collectTools(obj) {
  const found = [...(perInstance.get(obj) ?? [])]
  for (const key of Object.keys(obj)) {
    // Any own property, whatever it holds.
    const v = /** @type {Record<string, any>} */ (obj)[key]
    if (typeof v === "function" && v[MARK]) found.push(v[MARK])
  }
  return found
}

module.exports = { EMPTY_SCHEMA, defineTool, tool, collectTools }
