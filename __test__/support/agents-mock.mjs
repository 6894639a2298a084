// Test support for the agent runtime (SPEC §7D): the shared subagent fixtures read from
// __test__/fixtures (with their cross-file `$ref`s resolved), a scripted OpenAI-style `fetch`
// that plays a fixture's `mockLLM.scripts`, the fixture tools, a virtual clock, and the
// transition-trace view the fixtures are written against.
// (Not a test file: the name does not match the runner's test patterns.)

import fs from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"

export const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures")

// ---- fixtures ----

/** Follow a JSON pointer ("#/a/b") inside `doc`. */
function pointer(doc, frag) {
  let at = doc
  for (const raw of frag.replace(/^#?\/?/, "").split("/").filter(Boolean)) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~")
    if (at == null || !(key in at)) throw new Error(`fixture $ref: no ${key} in ${frag}`)
    at = at[key]
  }
  return at
}

/** Replace every `{ "$ref": "<file>#<pointer>" }` with the referenced value, relative to `file`. */
function resolveRefs(value, file, depth = 0) {
  if (depth > 16) throw new Error(`fixture $ref: too deep at ${file}`)
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, file, depth))
  if (value && typeof value === "object") {
    if (typeof value.$ref === "string") {
      const [rel, frag = ""] = value.$ref.split("#")
      const target = rel ? path.resolve(path.dirname(file), rel) : file
      const doc = JSON.parse(fs.readFileSync(target, "utf8"))
      return resolveRefs(pointer(doc, frag), target, depth + 1)
    }
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = resolveRefs(v, file, depth)
    return out
  }
  return value
}

/** One shared fixture, `$ref`s resolved. */
export function loadFixture(name) {
  const file = path.join(FIXTURES, name, "fixture.json")
  return resolveRefs(JSON.parse(fs.readFileSync(file, "utf8")), file)
}

// ---- async helpers ----

export function deferred() {
  let resolve
  let reject
  const promise = new Promise((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Let queued callbacks (promise chains, native completions) run: `rounds` macrotask turns. */
export async function flush(rounds = 20) {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r))
}

/**
 * Wait until `cond()` holds: macrotask turns first, then short sleeps. `limitMs` is only an upper
 * bound that turns a hang into a failure, never a measurement.
 */
export async function until(cond, what, limitMs = 30_000) {
  const deadline = Date.now() + limitMs
  for (let i = 0; ; i++) {
    if (cond()) return
    if (Date.now() > deadline) throw new Error(`never reached: ${what}`)
    await new Promise((r) => (i < 200 ? setImmediate(r) : setTimeout(r, 2)))
  }
}

// ---- the virtual clock (the runtime's `clock` seam) ----

export class VirtualClock {
  constructor(start = 1_000_000) {
    this.t = start
    this.timers = []
    this.seq = 0
  }

  now() {
    return this.t
  }

  setTimeout(fn, ms) {
    const timer = { at: this.t + Math.max(0, Number(ms) || 0), fn, seq: this.seq++, live: true }
    this.timers.push(timer)
    return () => {
      timer.live = false
    }
  }

  /** Advance once a timer is armed (the runtime may arm it after a hop). */
  async tick(ms) {
    await until(() => this.armed > 0, "a timer armed on the virtual clock")
    this.advance(ms)
  }

  /** Timers still armed. */
  get armed() {
    return this.timers.filter((x) => x.live).length
  }

  /** Move time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms) {
    const target = this.t + ms
    for (;;) {
      const due = this.timers.filter((x) => x.live && x.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0]
      if (!due) break
      due.live = false
      this.t = due.at
      due.fn()
    }
    this.timers = this.timers.filter((x) => x.live)
    this.t = target
  }
}

/**
 * Settle `promise` while driving the virtual clock: flush, and if it is still open advance the
 * clock by `stepMs`, up to `maxSteps` times.
 */
export async function driveClock(promise, clock, stepMs, maxSteps = 2_000) {
  let done = false
  let value
  let error
  let failed = false
  promise.then(
    (v) => {
      done = true
      value = v
    },
    (e) => {
      done = true
      failed = true
      error = e
    },
  )
  for (let i = 0; i < maxSteps && !done; i++) {
    await flush(10)
    if (!done) await new Promise((r) => setTimeout(r, 1))
    if (!done) clock.advance(stepMs)
  }
  await flush(5)
  if (!done) throw new Error(`still unsettled after ${maxSteps} clock steps`)
  if (failed) throw error
  return value
}

// ---- OpenAI-shaped replies ----

export function reply(message, usage) {
  const body = { id: "cmpl-agents", choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: message.tool_calls ? "tool_calls" : "stop" }] }
  if (usage) body.usage = usage
  return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } })
}

let callSeq = 0
export function toolCalls(calls) {
  return {
    content: null,
    tool_calls: calls.map((c) => ({ id: `call_${++callSeq}`, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) } })),
  }
}

const contentOf = (m) => (typeof m?.content === "string" ? m.content : m?.content == null ? "" : JSON.stringify(m.content))

/** Rejects when `signal` aborts (the mock's side of the cancellation contract). */
function onAbort(signal) {
  return new Promise((_, reject) => {
    if (!signal) return
    const fire = () => reject(signal.reason ?? new Error("aborted"))
    if (signal.aborted) fire()
    else signal.addEventListener("abort", fire, { once: true })
  })
}

// ---- the scripted mock LLM ----

function matches(entry, toolMsgs) {
  if (entry.always) return true
  if ("whenToolMsgs" in entry) {
    const w = entry.whenToolMsgs
    if (typeof w === "number") return toolMsgs.length === w
    const m = /^>=\s*(\d+)$/.exec(String(w))
    if (!m) throw new Error(`mockLLM: unknown whenToolMsgs ${JSON.stringify(w)}`)
    return toolMsgs.length >= Number(m[1])
  }
  if ("whenNoToolMsgContains" in entry) return !toolMsgs.some((t) => contentOf(t).includes(entry.whenNoToolMsgContains))
  if ("whenToolMsgContains" in entry) return toolMsgs.some((t) => contentOf(t).includes(entry.whenToolMsgContains))
  throw new Error(`mockLLM: entry without a condition: ${JSON.stringify(entry)}`)
}

/** Fill the `<...>` placeholders of a script's text from the request messages. */
export function fillTemplate(text, messages) {
  const toolMsgs = messages.filter((m) => m.role === "tool")
  const lastUser = [...messages].reverse().find((m) => m.role === "user")
  return text.replace(/<([^<>]+)>/g, (_, what) => {
    switch (what) {
      case "first tool msg content":
        return contentOf(toolMsgs[0])
      case "last tool msg content":
        return contentOf(toolMsgs.at(-1))
      case "join all tool msg contents with ' + '":
        return toolMsgs.map(contentOf).join(" + ")
      case "count of numbered inbox items in last user msg":
        return String(contentOf(lastUser).match(/^\d+\./gm)?.length ?? 0)
      default:
        throw new Error(`mockLLM: unknown template <${what}>`)
    }
  })
}

/**
 * A `fetch` that answers from `mockLLM.scripts`, keyed by the request's `model`.
 * Options: `rendezvous: { model, size, graceMs }` holds the first `size` calls to `model` until
 * they are all in flight (or `graceMs` of real time passed), so a concurrency high-water mark
 * does not depend on scheduling luck; `override(model, body, ctx)` answers before the script.
 * The returned object records every call and exposes `release()` for `blocksUntil` entries.
 */
export function scriptedLLM(mockLLM, opts = {}) {
  const scripts = mockLLM.scripts ?? {}
  const usage = mockLLM.usagePerCall
  const state = {
    calls: [],
    inFlight: 0,
    maxInFlight: 0,
    inFlightByModel: {},
    maxInFlightByModel: {},
    blocked: 0,
    aborted: 0,
    released: deferred(),
    blockedStarted: deferred(),
    release() {
      state.released.resolve()
    },
    /** Make later `blocksUntil` calls block again. */
    reblock() {
      state.released = deferred()
      state.blockedStarted = deferred()
    },
    countFor(model) {
      return state.calls.filter((c) => c.model === model).length
    },
  }
  const rv = opts.rendezvous
  const waiting = []
  let rvSeen = 0

  state.fetch = async (url, init) => {
    const body = JSON.parse(String(init?.body))
    const model = body.model
    const messages = body.messages ?? []
    const signal = init?.signal ?? undefined
    state.calls.push({ model, messages, url })
    state.inFlight++
    state.inFlightByModel[model] = (state.inFlightByModel[model] ?? 0) + 1
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
    state.maxInFlightByModel[model] = Math.max(state.maxInFlightByModel[model] ?? 0, state.inFlightByModel[model])
    try {
      if (rv && model === rv.model && rvSeen < rv.size) {
        rvSeen++
        const gate = deferred()
        waiting.push(gate)
        const timer = setTimeout(() => gate.resolve(), rv.graceMs ?? 2_000)
        timer.unref?.()
        if (waiting.length >= rv.size) for (const g of waiting) g.resolve()
        await gate.promise
        clearTimeout(timer)
      }
      if (opts.override) {
        const r = await opts.override(model, body, { signal, state })
        if (r !== undefined) return r
      }
      const script = scripts[model]
      if (!Array.isArray(script)) throw new Error(`mockLLM: no script for model ${model}`)
      const toolMsgs = messages.filter((m) => m.role === "tool")
      const entry = script.find((e) => matches(e, toolMsgs))
      if (!entry) throw new Error(`mockLLM: no entry of ${model} matches`)
      if (entry.blocksUntil) {
        if (entry.blocksUntil !== "released-or-aborted") throw new Error(`mockLLM: unknown blocksUntil ${entry.blocksUntil}`)
        state.blocked++
        state.blockedStarted.resolve()
        try {
          await Promise.race([state.released.promise, onAbort(signal)])
        } catch (e) {
          state.aborted++
          throw e
        } finally {
          state.blocked--
        }
      }
      const message = entry.toolCalls ? toolCalls(entry.toolCalls) : { content: fillTemplate(entry.text ?? "", messages) }
      return reply(message, usage)
    } finally {
      state.inFlight--
      state.inFlightByModel[model]--
    }
  }
  return state
}

// ---- fixture tools and registry ----

/** Build the fixture's `tools` block as real tools, interpreting each `behavior` sentence. */
export function fixtureTools(block, { defineTool, pending }, counters = {}) {
  const out = {}
  for (const [name, spec] of Object.entries(block ?? {})) {
    const b = String(spec.behavior)
    let run
    const ret = /^returns "(.*)"$/.exec(b)
    const gated = /^without ctx\.answer → pending\(\{ kind: "([^"]+)", prompt: "([^"]+)" \}\); with ctx\.answer\.ok → returns "([^"]+)"$/.exec(b)
    if (ret) {
      run = (args) => ret[1].replace(/<([^<>]+)>/g, (_, k) => String(args?.[k]))
    } else if (gated) {
      run = (_args, ctx) => (ctx?.answer?.ok ? gated[3] : pending({ kind: gated[1], prompt: gated[2] }))
    } else {
      throw new Error(`fixture tool ${name}: unknown behavior ${b}`)
    }
    counters[name] = 0
    out[name] = defineTool({
      name,
      description: `fixture tool ${name}`,
      inputSchema: spec.inputSchema,
      run: (args, ctx) => {
        counters[name]++
        return run(args, ctx)
      },
    })
  }
  return out
}

/** A fixture `waitFor` behaviour as a function. */
export function fixtureWaitFor(spec) {
  const b = String(spec?.behavior ?? "")
  if (b.startsWith("auto-approve")) return async (request) => ({ id: request.id, ok: true })
  throw new Error(`fixture waitFor: unknown behavior ${b}`)
}

/** The fixture registry as `AgentDef`s, with optional per-agent overrides merged in. */
export function fixtureRegistry(fx, tools, overrides = {}) {
  const reg = {}
  for (const [name, def] of Object.entries(fx.registry)) {
    const d = { name, does: def.does, model: def.model }
    if (def.team) d.team = [...def.team]
    if (def.tools) d.tools = def.tools.map((t) => tools[t])
    if (def.waitFor) d.waitFor = fixtureWaitFor(def.waitFor)
    if (def.budget) d.budget = { ...def.budget }
    reg[name] = d
  }
  for (const [name, over] of Object.entries(overrides)) {
    reg[name] = { ...(reg[name] ?? { name }), ...over, budget: { ...(reg[name]?.budget ?? {}), ...(over.budget ?? {}) } }
  }
  return reg
}

// ---- the transition trace ----

const STATES = ["idle", "running", "suspended", "closed"]
const ARROW = new RegExp(`^(${STATES.join("|")})→(${STATES.join("|")})(?:\\s|$)`)

/** The `from→to` transitions traced for handle `id`, in order. */
export function transitionsOf(trace, id) {
  const out = []
  for (const line of trace) {
    if (!line.startsWith(`${id}: `)) continue
    const m = ARROW.exec(line.slice(id.length + 2))
    if (m) out.push(`${m[1]}→${m[2]}`)
  }
  return out
}

/** Whether an actual transition satisfies a fixture entry ("idle→running", or "→closed" for any source). */
export function transitionMatches(actual, expected) {
  return expected.startsWith("→") ? actual.endsWith(expected) : actual === expected
}
