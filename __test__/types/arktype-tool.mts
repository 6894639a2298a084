// A typed tool from an arktype type: `run` receives the type's output.
import { type } from "arktype"
import { defineTool, type Tool } from "../../index.js"

const add: Tool = defineTool({
  name: "add",
  description: "Add two numbers",
  inputSchema: type({ a: "number", b: "number" }),
  run: ({ a, b }) => a + b,
})

// @ts-expect-error - `a` is a number: it has no toUpperCase
defineTool({ name: "x", description: "d", inputSchema: type({ a: "number" }), run: ({ a }) => a.toUpperCase() })
// @ts-expect-error - the type has no `c`
defineTool({ name: "y", description: "d", inputSchema: type({ a: "number" }), run: ({ c }) => c })

export const tools: Tool[] = [add]
