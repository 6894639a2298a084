// require() from a CommonJS consumer works and gives a usable API.
const test = require("node:test")
const assert = require("node:assert/strict")
const tn = require("../index.js")

test("require() returns the full API object", () => {
  for (const name of ["pending", "authRequired", "pendingOf", "sanitize", "defineTool", "tool", "collectTools",
    "toOpenAI", "toAnthropic", "toGemini", "Toolkit", "createToolkit", "Client", "createClient"]) {
    assert.equal(typeof tn[name], "function", name)
  }
})

test("a tool built through require() runs inside a toolkit", async () => {
  const shout = tn.defineTool({ name: "shout", description: "upper-case", run: ({ s }) => String(s).toUpperCase() })
  const tk = await tn.createToolkit({ extraTools: [shout] })
  assert.deepEqual(await tk.execute("shout", { s: "quiet" }), { output: "QUIET", isError: false })
  assert.equal(tn.sanitize("a b"), "a_b")
  await tk.close()
})
