// Names the generated binding.d.ts uses without declaring them: the Rust side's aliases.
declare global {
  /**
   * A JS function in the core's calling convention: called with a value's JSON (or its pieces,
   * see `fromCore`), a reply id, and `true` when the value is one it may change in place; it
   * answers with JSON text at once, or with `undefined` and later through `reply`/`replyError`.
   */
  type JsonFn = (json: string | string[], id: number, inPlace?: boolean) => string | undefined
  /** The same convention, as the binding names it. */
  type JsFn = JsonFn
  /** The shared form of an addon object (a store, a compactor, a clock), as an options document names it. */
  interface Shared {
    readonly shared: unique symbol
  }
}
export {}
