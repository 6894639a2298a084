"use strict"
// MCP servers as a tool source (SPEC §2), and the elicitation bridge.

const { native } = require("./native.js")
const { encode, bridge, callable, withSignal, underSignal } = require("./crossing.js")
const { wrapNative } = require("./core-tools.js")

const parseMcpConfig = (input) => JSON.parse(native.parseMcpConfig(encode(input)))

function expandEnvHeaders(headers) {
  if (!headers) return undefined
  return JSON.parse(native.expandEnvHeaders(encode(headers)) ?? "null") ?? undefined
}

function elicitationToRequest(params) {
  if (params == null) throw new TypeError(`Cannot read properties of ${params} (reading 'mode')`)
  return JSON.parse(native.elicitationToRequest(encode(params)))
}

function answerToElicitResult(answer) {
  if (answer == null) throw new TypeError(`Cannot read properties of ${answer} (reading 'ok')`)
  return JSON.parse(native.answerToElicitResult(encode(answer)))
}

async function loadMcp(input, opts) {
  const waitFor = callable("loadMcp", "waitFor", opts?.waitFor)
  const handle = await withSignal(opts?.signal, (token) => native.NativeMcp.load(encode(input), waitFor && bridge(waitFor, opts), token))
  return {
    tools: handle.tools().map(wrapNative),
    status: JSON.parse(handle.status()),
    async close() {
      await handle.close()
    },
  }
}

const listMcpTools = async (input, opts) => underSignal(opts?.signal, (token) => native.listMcpTools(encode(input), token))

module.exports = { parseMcpConfig, expandEnvHeaders, elicitationToRequest, answerToElicitResult, loadMcp, listMcpTools }
