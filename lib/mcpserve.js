"use strict"
// A tool list as an MCP server (SPEC §7C): `exposedMcpTools`, `buildMcpServer`.

const { native } = require("./native.js")
const { encode, bridge, callable } = require("./crossing.js")
const { nativeHandle, signalled } = require("./core-tools.js")

function exposedMcpTools(tools, cfg) {
  const picked = native.mcpExposed(
    tools.map((t) => String(t?.name)),
    cfg === undefined ? undefined : encode(cfg),
  )
  // No filter: the list itself, as the reference hands it back.
  return picked == null ? tools : picked.map((i) => tools[i])
}

/** A JS tool as the served MCP server calls it: a throw or a rejection is the error result the reference makes of it. */
function servedCall(t) {
  const failed = (e) => ({ output: e instanceof Error ? e.message : String(e), isError: true })
  return signalled((args, ctx) => {
    try {
      return Promise.resolve(t.execute(args ?? {}, ctx)).then(undefined, failed)
    } catch (e) {
      return failed(e)
    }
  })
}

const textOf = (v) => (typeof v === "string" ? v : String(v))

/**
 * What buildMcpServer returns: the connect surface of the MCP SDK's `Server`. `connect` takes
 * any SDK transport (in-memory, stdio...): messages from it go to a native session, the
 * session's messages go out through `transport.send`. The session holds the process only
 * while a request is being answered, so a server on stdio ends when stdin does.
 */
class McpServer {
  #native
  #transport
  #session

  constructor(nativeServer) {
    this.#native = nativeServer
    this.onclose = undefined
    this.onerror = undefined
  }

  get transport() {
    return this.#transport
  }

  async connect(transport) {
    const session = await this.#native.connect(
      bridge(async (message) => {
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

  #ended(transport, session) {
    session.close()
    if (this.#transport !== transport) return
    this.#transport = undefined
    this.#session = undefined
    this.onclose?.()
  }

  async close() {
    const transport = this.#transport
    const session = this.#session
    if (!transport) return
    try {
      await transport.close()
    } finally {
      if (this.#transport === transport) this.#ended(transport, session)
    }
  }
}

function buildMcpServer(tools, cfg, onCall) {
  const observe = callable("buildMcpServer", "onCall", onCall)
  const server = new native.NativeMcpServer(cfg === undefined ? undefined : encode(cfg), observe && bridge(observe))
  for (const t of tools) {
    const handle = nativeHandle(t)
    if (handle) {
      server.addNative(handle)
      continue
    }
    const decl = { name: textOf(t.name), description: t.description, inputSchema: t.inputSchema, source: t.source }
    server.addJs(encode(decl), servedCall(t))
  }
  return new McpServer(server)
}

module.exports = { exposedMcpTools, buildMcpServer }
