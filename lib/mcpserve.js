"use strict"
// A tool list as an MCP server (SPEC §7C): `exposedMcpTools`, `buildMcpServer`.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { bridge } = require("./call-convention.js")
const { plainFn, crossing } = require("./options-doc.js")
const { nativeHandle, signalled } = require("./core-tools.js")
const { declaredSchema, outputSchemaOf, schemaRefusal, warnUnsendable } = require("./schema.js")

/** @typedef {import("./core-tools.js").Tool} Tool */

/**
 * A message transport of the MCP SDK (`InMemoryTransport`, `StdioServerTransport`, ...), as far
 * as `McpServer` uses it: what `start`, `send` and `close` return is awaited; the three handlers
 * are chained (any the transport had before is still called first).
 * @typedef {object} McpTransport
 * @property {() => unknown} start
 * @property {(message: unknown) => unknown} send
 * @property {() => unknown} close
 * @property {(() => void) | undefined} [onclose]
 * @property {((error: Error) => void) | undefined} [onerror]
 * @property {((message: unknown, extra?: unknown) => void) | undefined} [onmessage]
 */

/**
 * The tools a served MCP profile exposes: the list itself when `cfg` has no filter, else those
 * it names.
 * @template {Tool} T
 * @param {T[]} tools
 * @param {unknown} [cfg] the MCP serving profile (`{ name?, version?, tools? }`)
 * @returns {T[]}
 */
function exposedMcpTools(tools, cfg) {
  const picked = native.mcpExposed(
    tools.map((t) => String(t?.name)),
    cfg === undefined ? undefined : encode(cfg),
  )
  // No filter: the list itself, as the reference hands it back.
  return picked == null ? tools : picked.map((i) => tools[i])
}

/**
 * Warn of each tool an MCP profile lists whose Standard Schema has no JSON Schema (it is listed
 * with the empty object schema, as the server is built; the reference's server sent the
 * schema library's internals at each `tools/list`).
 * @param {ReadonlyArray<{ name?: unknown, inputSchema?: unknown } | null | undefined>} tools
 * @param {unknown} cfg the MCP serving profile (an object filters by its `tools`)
 */
function warnUnlisted(tools, cfg) {
  const refused = tools.map((t) => t != null && schemaRefusal(t.name, t.inputSchema) !== undefined)
  if (!refused.includes(true)) return
  const profile = cfg !== null && typeof cfg === "object" ? encode(cfg) : undefined
  const picked = native.mcpExposed(
    tools.map((t) => String(t?.name)),
    profile,
  )
  for (const i of picked == null ? tools.keys() : picked) {
    const t = tools[i]
    if (t != null && refused[i]) warnUnsendable(t.name, t.inputSchema)
  }
}

/**
 * A JS tool as the served MCP server calls it: a throw or a rejection is the error result the reference makes of it.
 * @param {Tool} t
 * @returns {JsonFn}
 */
function servedCall(t) {
  /** @param {unknown} e */
  const failed = (e) => ({ output: e instanceof Error ? e.message : String(e), isError: true })
  return signalled((args, ctx) => {
    try {
      return Promise.resolve(t.execute(args ?? {}, ctx)).then(undefined, failed)
    } catch (e) {
      return failed(e)
    }
  })
}

/**
 * @param {unknown} v
 * @returns {string}
 */
const textOf = (v) => (typeof v === "string" ? v : String(v))

/**
 * What buildMcpServer returns: the connect surface of the MCP SDK's `Server`. `connect` takes
 * any SDK transport (in-memory, stdio...): messages from it go to a native session, the
 * session's messages go out through `transport.send`. The session holds the process only
 * while a request is being answered, so a server on stdio ends when stdin does.
 */
class McpServer {
  /** @type {import("../binding").NativeMcpServer} */
  #native
  /** @type {McpTransport | undefined} the transport connected now */
  #transport
  /** @type {import("../binding").NativeMcpSession | undefined} its session (set and cleared with it) */
  #session

  /** @param {import("../binding").NativeMcpServer} nativeServer */
  constructor(nativeServer) {
    this.#native = nativeServer
    /** @type {(() => void) | undefined} called when the connected transport closes */
    this.onclose = undefined
    /** @type {((error: Error) => void) | undefined} called with a transport's or a message's failure */
    this.onerror = undefined
  }

  /** @returns {McpTransport | undefined} */
  get transport() {
    return this.#transport
  }

  /**
   * Serve over `transport` until it closes.
   * @param {McpTransport} transport
   * @returns {Promise<void>}
   */
  async connect(transport) {
    const session = await this.#native.connect(
      bridge(async (/** @type {unknown} */ message) => {
        try {
          await transport.send(message)
        } catch (e) {
          this.onerror?.(e instanceof Error ? e : new Error(String(e)))
        }
      }),
    )
    this.#transport = transport
    this.#session = session
    const priorClose = transport.onclose
    const priorError = transport.onerror
    const priorMessage = transport.onmessage
    transport.onclose = () => {
      priorClose?.()
      this.#ended(transport, session)
    }
    transport.onerror = (error) => {
      priorError?.(error)
      this.onerror?.(error)
    }
    transport.onmessage = (message, extra) => {
      priorMessage?.(message, extra)
      try {
        session.receive(encode(message))
      } catch (e) {
        this.onerror?.(e instanceof Error ? e : new Error(String(e)))
      }
    }
    try {
      await transport.start()
    } catch (e) {
      this.#ended(transport, session)
      throw e
    }
  }

  /**
   * A connection is over: its session closes; if it is still the current one, the server has
   * none now and says so through `onclose`.
   * @param {McpTransport} transport
   * @param {import("../binding").NativeMcpSession} session
   */
  #ended(transport, session) {
    session.close()
    if (this.#transport !== transport) return
    this.#transport = undefined
    this.#session = undefined
    this.onclose?.()
  }

  /**
   * Tell the connected client that resource `uri` changed, if it subscribed to it.
   * @param {string} uri
   * @returns {boolean} whether it was told
   */
  notifyResourceUpdated(uri) {
    return this.#session?.resourceUpdated(String(uri)) ?? false
  }

  /**
   * Close the connected transport, if any.
   * @returns {Promise<void>}
   */
  async close() {
    const transport = this.#transport
    const session = this.#session
    if (!transport) return
    try {
      await transport.close()
    } finally {
      // `#session` is set and cleared together with `#transport`, so it is this transport's.
      if (this.#transport === transport) this.#ended(transport, /** @type {import("../binding").NativeMcpSession} */ (session))
    }
  }
}

/**
 * An MCP server of `tools`: a tool of the core's own that nobody has changed since `wrapNative`
 * made it is served natively, any other through its `execute`.
 * @param {Iterable<Tool>} tools
 * @param {unknown} [cfg] the MCP serving profile (`{ name?, version?, tools? }`)
 * @param {unknown} [onCall] called with each `tools/call` (read by the core: unset when falsy, a
 *   TypeError when called if it is not a function)
 * @returns {McpServer}
 */
function buildMcpServer(tools, cfg, onCall) {
  // The profile and `onCall` cross as one document; the core reads both. `onCall` is called
  // as a plain function, as the reference calls it.
  const server = new native.NativeMcpServer(...crossing({ profile: cfg, onCall: plainFn(onCall) }))
  const list = [...tools]
  warnUnlisted(list, cfg)
  for (const t of list) {
    const handle = nativeHandle(t)
    if (handle) {
      server.addNative(handle)
      continue
    }
    const decl = { name: textOf(t.name), description: t.description, inputSchema: declaredSchema(t.inputSchema), source: t.source, outputSchema: outputSchemaOf(t) }
    server.addJs(encode(decl), servedCall(t))
  }
  return new McpServer(server)
}

module.exports = { exposedMcpTools, buildMcpServer, warnUnlisted }
