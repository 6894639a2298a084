"use strict"
// The durable stores (issue 26), one class per engine: SqliteStore, PostgresStore, RedisStore.
// Each is both a ConversationStore (createClient's, an AgentRuntime's) and a TaskStore (serve's
// a2a.store): passed as an option it crosses as its URL, and the core opens the engine; called
// directly, its methods reach the same records.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { fromCore } = require("./decode.js")
const { shipped, isOwnStore } = require("./addon-objects.js")
const { taskStores, storeGet, storeSave } = require("./serve.js")

/** @type {WeakMap<object, { url: string, conversations: import("../binding").NativeUrlConversations }>} */
const engines = new WeakMap()

/**
 * The store URL behind one of these stores, undefined for anything else.
 * @param {unknown} store
 * @returns {string | undefined}
 */
function engineUrl(store) {
  return isOwnStore(store) ? engines.get(store)?.url : undefined
}

/**
 * What the stores share: the URL's engine, reached on first use.
 */
class EngineStore {
  /**
   * @param {string} url
   * @param {string} owner the class, for errors
   * @param {"sqlite" | "postgres" | "redis"} engine the engine its URLs name
   */
  constructor(url, owner, engine) {
    if (typeof url !== "string" || native.storeEngine(url) !== engine) {
      throw new TypeError(native.storeRefusal(engine, owner, typeof url === "string" ? JSON.stringify(native.redactStoreUrl(url)) : typeof url))
    }
    engines.set(this, { url, conversations: new native.NativeUrlConversations(url) })
    taskStores.set(this, native.NativeTaskStore.url(url))
  }

  /** The URL with its password hidden. */
  get url() {
    return native.redactStoreUrl(/** @type {{ url: string }} */ (engines.get(this)).url)
  }

  /**
   * A conversation's messages by id; else the Task of that id; undefined for neither.
   * @param {unknown} id
   * @returns {Promise<unknown>}
   */
  async get(id) {
    const own = /** @type {{ conversations: import("../binding").NativeUrlConversations }} */ (engines.get(this))
    const json = await own.conversations.get(String(id))
    if (json != null) return fromCore(json)
    return storeGet(this, id)
  }

  /**
   * `save(id, messages)` keeps a conversation (as a ConversationStore); `save(task)` a Task
   * (as a TaskStore).
   * @param {unknown} idOrTask
   * @param {unknown} [messages]
   * @returns {Promise<void>}
   */
  async save(idOrTask, messages) {
    if (arguments.length >= 2) {
      const own = /** @type {{ conversations: import("../binding").NativeUrlConversations }} */ (engines.get(this))
      await own.conversations.save(String(idOrTask), encode(messages))
      return
    }
    await storeSave(this, idOrTask)
  }

  /**
   * Delete a conversation and what its runs parked on (toolnexus-native).
   * @param {unknown} id
   * @returns {Promise<boolean>} whether there was one
   */
  async delete(id) {
    const own = /** @type {{ conversations: import("../binding").NativeUrlConversations }} */ (engines.get(this))
    return own.conversations.delete(String(id))
  }
}

/** State in one SQLite file (WAL), no server: `new SqliteStore("./state.db")` or a `sqlite:` URL. */
class SqliteStore extends EngineStore {
  /** @param {string} path a file path, or `sqlite:<path>` */
  constructor(path) {
    super(typeof path === "string" && native.storeEngine(path) !== "sqlite" ? `sqlite:${path}` : path, "SqliteStore", "sqlite")
  }
}

/** State on PostgreSQL: `new PostgresStore("postgres://user:pw@host/db")`. */
class PostgresStore extends EngineStore {
  /** @param {string} url */
  constructor(url) {
    super(url, "PostgresStore", "postgres")
  }
}

/** State on Redis: `new RedisStore("redis://host:6379/0")`. */
class RedisStore extends EngineStore {
  /** @param {string} url */
  constructor(url) {
    super(url, "RedisStore", "redis")
  }
}

for (const c of [SqliteStore, PostgresStore, RedisStore]) shipped.add(c.prototype)

/**
 * The store a store URL names, as one of the classes above; anything else as it is.
 * @param {unknown} store
 * @returns {unknown}
 */
function storeOfUrl(store) {
  if (typeof store !== "string") return store
  switch (native.storeEngine(store)) {
    case "sqlite":
      return new SqliteStore(store)
    case "postgres":
      return new PostgresStore(store)
    case "redis":
      return new RedisStore(store)
    default:
      return store
  }
}

module.exports = { engineUrl, storeOfUrl, SqliteStore, PostgresStore, RedisStore }
