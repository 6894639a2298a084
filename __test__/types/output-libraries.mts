// Structured output: `result.output` and a stream's partial object take each library's output type.
import { z } from "zod"
import * as v from "valibot"
import { type } from "arktype"
import { createClient, createToolkit, type RunResult } from "../../index.js"

const client = createClient({ baseUrl: "http://127.0.0.1:1", style: "openai", model: "m" })
const toolkit = await createToolkit({ builtins: false })

const fromZod = await client.run("?", { toolkit, output: z.object({ city: z.string(), temp: z.number().transform(String) }) })
const city: string | undefined = fromZod.output?.city
const temp: string | undefined = fromZod.output?.temp // the transform's output type
// @ts-expect-error - `temp` is a string after the transform
const tempNumber: number | undefined = fromZod.output?.temp

const fromValibot = await client.ask("?", { toolkit, id: "c", output: v.object({ n: v.number() }), outputRetries: 2 })
const n: number | undefined = fromValibot.output?.n
// @ts-expect-error - the schema has no `m`
fromValibot.output?.m

const fromArktype = await client.run("?", { toolkit, output: type({ ok: "boolean" }), outputMode: "tool" })
const ok: boolean | undefined = fromArktype.output?.ok

for await (const ev of client.stream("?", { toolkit, output: z.object({ items: z.array(z.object({ name: z.string() })) }) })) {
  if (ev.type === "output") {
    // A partial object is the model's JSON before any check: its values are unknown until narrowed.
    const raw = ev.partial.items?.[0]?.name
    // @ts-expect-error - an unchecked value is not yet a string
    const unchecked: string | undefined = raw
    const first: string | undefined = typeof raw === "string" ? raw : undefined
    void unchecked, first
  }
  if (ev.type === "output_retry") {
    const why: string = `${ev.attempt}: ${ev.issues.map((i) => `${i.path} ${i.message}`).join("; ")} in ${ev.text}`
    void why
  }
  if (ev.type === "done") {
    const names: string[] | undefined = ev.result.output?.items.map((i) => i.name)
    void names
  }
}

// A partial's keys are the schema's input side: a transform changes the checked answer, not the JSON written.
for await (const ev of client.stream("?", { toolkit, output: z.object({ temp: z.number().transform(String) }) })) {
  if (ev.type === "output") {
    // @ts-expect-error - the JSON written has a number (unknown until narrowed) for `temp`, no string methods
    ev.partial.temp?.toUpperCase()
  }
  if (ev.type === "done") {
    const t: string | undefined = ev.result.output?.temp
    void t
  }
}

// A JSON Schema gives `unknown`; no `output` keeps RunResult as it was.
const fromJson = await client.run("?", { toolkit, output: { type: "object", properties: { a: { type: "number" } } } })
const a: unknown = fromJson.output
const plain: RunResult = await client.run("?", { toolkit })
// @ts-expect-error - not a mode
client.run("?", { toolkit, output: z.string(), outputMode: "json" })

export { city, temp, tempNumber, n, ok, a, plain }
