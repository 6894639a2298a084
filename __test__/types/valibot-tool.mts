// A typed tool from a valibot schema: `run` receives the schema's output type.
import * as v from "valibot"
import { defineTool, type Tool } from "../../index.js"

const add: Tool = defineTool({
  name: "add",
  description: "Add two numbers",
  inputSchema: v.object({ a: v.number(), b: v.optional(v.number(), 2) }),
  run: ({ a, b }) => a + b,
})

// @ts-expect-error - `a` is a number: it has no toUpperCase
defineTool({ name: "x", description: "d", inputSchema: v.object({ a: v.number() }), run: ({ a }) => a.toUpperCase() })
// @ts-expect-error - the schema has no `c`
defineTool({ name: "y", description: "d", inputSchema: v.object({ a: v.number() }), run: ({ c }) => c })

export const tools: Tool[] = [add]
