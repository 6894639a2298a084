"use strict"
// Native tools (SPEC §6): `defineTool`, and `tool` / `collectTools` for decorated methods.

const { native } = require("./native.js")

// One schema object shared by every tool that declares none, as in the reference.
const EMPTY_SCHEMA = JSON.parse(native.emptySchema())

function defineTool(opts) {
  if (opts == null) throw new TypeError(`Cannot read properties of ${opts} (reading 'name')`)
  return {
    name: opts.name,
    description: opts.description,
    inputSchema: opts.inputSchema ?? EMPTY_SCHEMA,
    source: opts.source ?? "native",
    async execute(args, ctx) {
      try {
        // Read at each call, as the reference does; a missing `run` fails here, not above.
        const run = opts.run
        if (typeof run !== "function") {
          throw new TypeError(`defineTool: tool "${opts.name}" has no \`run\` function (got ${typeof run})`)
        }
        const out = await run.call(opts, args ?? {}, ctx)
        if (out !== null && typeof out === "object" && "output" in out && "isError" in out) return out
        return { output: typeof out === "string" ? out : (JSON.stringify(out) ?? ""), isError: false }
      } catch (e) {
        return { output: e instanceof Error ? e.message : String(e), isError: true }
      }
    },
  }
}

// `tool(description, opts)` marks a function; `collectTools(obj)` gathers the marked ones,
// from a per-instance registry (filled by a decorator's addInitializer) and own properties.
const perInstance = new WeakMap()
const MARK = "__tool"

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
    value[MARK] = made
    return value
  }
}

function collectTools(obj) {
  const found = [...(perInstance.get(obj) ?? [])]
  for (const key of Object.keys(obj)) {
    const v = obj[key]
    if (typeof v === "function" && v[MARK]) found.push(v[MARK])
  }
  return found
}

module.exports = { EMPTY_SCHEMA, defineTool, tool, collectTools }
