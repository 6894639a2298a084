// SPEC §4 adapters: the uniform tool list in each provider's schema, byte-exact.
import test from "node:test"
import assert from "node:assert/strict"
import { toOpenAI, toAnthropic, toGemini, defineTool } from "../index.js"

const translate = defineTool({
  name: "translate",
  description: "Translate text",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string" }, to: { type: "string", enum: ["fr", "de"] } },
    required: ["text", "to"],
  },
  run: () => "",
})
const now = defineTool({ name: "now", description: "Current time", run: () => "" })

const TRANSLATE_SCHEMA = '{"type":"object","properties":{"text":{"type":"string"},"to":{"type":"string","enum":["fr","de"]}},"required":["text","to"]}'
const EMPTY_SCHEMA = '{"type":"object","properties":{},"additionalProperties":false}'

test("toOpenAI: exact JSON, tool order kept", () => {
  assert.equal(
    JSON.stringify(toOpenAI([translate, now])),
    `[{"type":"function","function":{"name":"translate","description":"Translate text","parameters":${TRANSLATE_SCHEMA}}},` +
      `{"type":"function","function":{"name":"now","description":"Current time","parameters":${EMPTY_SCHEMA}}}]`,
  )
  assert.equal(JSON.stringify(toOpenAI([now, translate]).map((t) => t.function.name)), '["now","translate"]')
})

test("toAnthropic: exact JSON, tool order kept", () => {
  assert.equal(
    JSON.stringify(toAnthropic([translate, now])),
    `[{"name":"translate","description":"Translate text","input_schema":${TRANSLATE_SCHEMA}},` +
      `{"name":"now","description":"Current time","input_schema":${EMPTY_SCHEMA}}]`,
  )
})

test("toGemini: one functionDeclarations group, exact JSON", () => {
  assert.equal(
    JSON.stringify(toGemini([translate, now])),
    `[{"functionDeclarations":[{"name":"translate","description":"Translate text","parameters":${TRANSLATE_SCHEMA}},` +
      `{"name":"now","description":"Current time","parameters":${EMPTY_SCHEMA}}]}]`,
  )
})

test("adapters: empty lists", () => {
  assert.equal(JSON.stringify(toOpenAI([])), "[]")
  assert.equal(JSON.stringify(toAnthropic([])), "[]")
  assert.equal(JSON.stringify(toGemini([])), '[{"functionDeclarations":[]}]')
})

test("adapters: hand-written Tool objects work, schema key order is preserved", () => {
  const handMade = {
    name: "lookup_sku",
    description: "Find a product",
    inputSchema: { required: ["sku"], type: "object", properties: { sku: { type: "string", pattern: "^[A-Z]{3}-\\d+$" } } },
    source: "custom",
    async execute() { return { output: "", isError: false } },
  }
  const schema = '{"required":["sku"],"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\\\d+$"}}}'
  assert.equal(JSON.stringify(toOpenAI([handMade])), `[{"type":"function","function":{"name":"lookup_sku","description":"Find a product","parameters":${schema}}}]`)
  assert.equal(JSON.stringify(toAnthropic([handMade])), `[{"name":"lookup_sku","description":"Find a product","input_schema":${schema}}]`)
  assert.equal(JSON.stringify(toGemini([handMade])), `[{"functionDeclarations":[{"name":"lookup_sku","description":"Find a product","parameters":${schema}}]}]`)
})

test("adapters: unicode and quotes survive the round trip", () => {
  const t = { name: "météo", description: 'Say "hi" — 👋', inputSchema: { type: "object" }, source: "custom", execute: async () => ({ output: "", isError: false }) }
  assert.deepStrictEqual(toAnthropic([t]), [{ name: "météo", description: 'Say "hi" — 👋', input_schema: { type: "object" } }])
})

test("adapters: a non-array argument is a TypeError", () => {
  for (const fn of [toOpenAI, toAnthropic, toGemini]) {
    for (const bad of [undefined, null, translate, "translate", { length: 1, 0: translate }]) {
      assert.throws(() => fn(bad), TypeError, `${fn.name}(${String(bad)})`)
    }
  }
})
