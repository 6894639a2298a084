// A tool declared with JSON Schema keeps its plain record arguments, as before.
import { defineTool, type Tool, type JSONSchema } from "../../index.js"

const schema: JSONSchema = { type: "object", properties: { a: { type: "number" } }, required: ["a"] }
const half: Tool = defineTool({
  name: "half",
  description: "Half of a",
  inputSchema: { type: "object", properties: { a: { type: "number" } }, required: ["a"] },
  run: (args) => {
    const a: unknown = args.a
    return typeof a === "number" ? String(a / 2) : "not a number"
  },
})
const plain = defineTool({ name: "plain", description: "no schema", run: (args: Record<string, unknown>) => Object.keys(args).join(",") })
const declared = defineTool({ name: "declared", description: "a typed schema", inputSchema: schema, run: (args) => String(args.a) })

// @ts-expect-error - a JSON Schema tool's arguments are unknowns: no arithmetic without a check
defineTool({ name: "z", description: "d", inputSchema: schema, run: (args) => args.a * 2 })

export const tools: Tool[] = [half, plain, declared]
