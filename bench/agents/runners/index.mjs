// The runners of the agents bench: name -> the module that builds it, its variant, and which
// package it loads ("ours" = this repository's index.js; "reference" = the reference TypeScript
// package, from BENCH_REF_PKG or bench/agents/ref/node_modules/toolnexus when installed).

export const RUNNERS = {
  floor: { file: "floor.mjs", pkg: "ours", what: "plain `createClient`: nested `client.run` per `task` call, all 100 at once (Promise.all)" },
  runtime: { file: "runtime.mjs", variant: "t16", pkg: "ours", what: "`agents.agent(...).run`, coordinator `maxConcurrent`/`maxChildren` 100, `maxConcurrentTurns` 16" },
  "runtime-t8": { file: "runtime.mjs", variant: "t8", pkg: "ours", what: "the same, `maxConcurrentTurns` at its default (8)" },
  "runtime-defaults": { file: "runtime.mjs", variant: "defaults", pkg: "ours", what: "every cap at its default: 8 running children at a time (the rest queue), 8 turns" },
  reference: { file: "runtime.mjs", variant: "t16", pkg: "reference", what: "the reference TypeScript package's own runtime, as `runtime`" },
}
