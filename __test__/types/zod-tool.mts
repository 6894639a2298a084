// A typed tool from a zod 4 schema: `run` receives the schema's output type.
import { z } from "zod"
import { defineTool, httpTool, type Tool } from "../../index.js"

const add: Tool = defineTool({
  name: "add",
  description: "Add two numbers",
  inputSchema: z.object({ a: z.number(), b: z.number().default(2) }),
  run: ({ a, b }) => a + b,
})

const shout = defineTool({
  name: "shout",
  description: "Upper-case a word",
  inputSchema: z.object({ word: z.string().transform((w) => w.length) }),
  // The transform's output: a number, not the string the model sends.
  run: ({ word }) => word.toFixed(0),
})

const lookup = httpTool({ name: "lookup", description: "d", method: "GET", url: "http://127.0.0.1:1/{id}", inputSchema: z.object({ id: z.string() }) })

// @ts-expect-error - `a` is a number: it has no toUpperCase
defineTool({ name: "x", description: "d", inputSchema: z.object({ a: z.number() }), run: ({ a }) => a.toUpperCase() })
// @ts-expect-error - the schema has no `c`
defineTool({ name: "y", description: "d", inputSchema: z.object({ a: z.number() }), run: ({ c }) => c })

export const tools: Tool[] = [add, shout, lookup]
