// Each line here must fail to compile under --strict (the test reads the errors by line).
import { z } from "zod"
import * as v from "valibot"
import { type } from "arktype"
import { defineTool } from "../../index.js"

defineTool({ name: "z1", description: "d", inputSchema: z.object({ a: z.number() }), run: ({ a }) => a.toUpperCase() })
defineTool({ name: "v1", description: "d", inputSchema: v.object({ a: v.number() }), run: ({ a }) => a.toUpperCase() })
defineTool({ name: "k1", description: "d", inputSchema: type({ a: "number" }), run: ({ a }) => a.toUpperCase() })
defineTool({ name: "z2", description: "d", inputSchema: z.object({ a: z.number() }), run: ({ c }) => c })
