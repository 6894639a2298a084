"use strict"
// MCP servers as a tool source (SPEC §2), and the elicitation bridge.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { crossingOf } = require("./options-doc.js")
const { withSignal, underSignal } = require("./abort.js")
const { wrapNative } = require("./core-tools.js")
const { engineUrl } = require("./stores.js")

/**
 * `loadMcp`'s options: they cross whole (see `crossing`) and the core reads `waitFor` (unset
 * when falsy, a TypeError when called if it is not a function); the signal crosses apart.
 * @typedef {object} McpLoadOptions
 * @property {unknown} [waitFor] resolves input an MCP server asks for during a call
 * @property {AbortSignal | null} [signal] aborts the load
 * @property {unknown} [store] where remote servers' sign-ins are kept: "memory", a store URL or a store object
 * @property {unknown} [mcpToken] the caller's own tokens for remote servers (read by the core)
 */

/**
 * A loaded MCP source: its tools as Tool objects, each server's status, and `close()`.
 * @typedef {object} McpSource
 * @property {import("./core-tools.js").Tool[]} tools
 * @property {Record<string, import("../index").McpStatus>} status each server's status, by name, in config order
 * @property {() => Promise<void>} close
 */

/**
 * A config file's path or a config value in, the server map (by name) out.
 * @param {unknown} input
 * @returns {import("../index").McpConfig}
 */
const parseMcpConfig = (input) => JSON.parse(native.parseMcpConfig(encode(input)))

/**
 * Header values with each `${NAME}` filled in from the environment; undefined for none.
 * @param {unknown} headers
 * @returns {Record<string, string> | undefined}
 */
function expandEnvHeaders(headers) {
  if (!headers) return undefined
  return JSON.parse(native.expandEnvHeaders(encode(headers)) ?? "null") ?? undefined
}

/**
 * An MCP elicitation's params as a suspension Request.
 * @param {unknown} params
 * @returns {import("./types.js").Request}
 */
function elicitationToRequest(params) {
  if (params == null) throw new TypeError(`Cannot read properties of ${params} (reading 'mode')`)
  return JSON.parse(native.elicitationToRequest(encode(params)))
}

/**
 * An Answer to a suspension as the MCP elicitation result.
 * @param {unknown} answer
 * @returns {import("../index").ElicitResult}
 */
function answerToElicitResult(answer) {
  if (answer == null) throw new TypeError(`Cannot read properties of ${answer} (reading 'ok')`)
  return JSON.parse(native.answerToElicitResult(encode(answer)))
}

/**
 * Connect to the MCP servers `input` configures (a config file's path or a config value).
 * @param {unknown} input
 * @param {McpLoadOptions | null} [opts]
 * @returns {Promise<McpSource>}
 */
async function loadMcp(input, opts) {
  // The options cross whole (the core reads `waitFor`); the signal crosses as a cancel token.
  const given = opts !== null && typeof opts === "object"
  // A store object crosses as its URL (the core keeps sign-ins there).
  const adapted = given ? { ...opts, signal: undefined, store: engineUrl(opts.store) ?? opts.store } : null
  const [doc, fns, objects] = crossingOf(adapted, opts)
  const handle = await withSignal(opts?.signal, (token) => native.NativeMcp.load(encode(input), doc, fns, objects, token))
  return {
    tools: handle.tools().map(wrapNative),
    status: JSON.parse(handle.status()),
    async close() {
      await handle.close()
    },
  }
}

/**
 * The tools each configured server offers, without keeping the connections: the inventory.
 * @param {unknown} input a config file's path or a config value
 * @param {{ signal?: AbortSignal | null } | null} [opts]
 * @returns {Promise<import("../index").McpInventory>}
 */
const listMcpTools = async (input, opts) => underSignal(opts?.signal, (token) => native.listMcpTools(encode(input), token))

module.exports = { parseMcpConfig, expandEnvHeaders, elicitationToRequest, answerToElicitResult, loadMcp, listMcpTools }
