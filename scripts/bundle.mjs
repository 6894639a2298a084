#!/usr/bin/env node
// The JS side in one file: lib/ bundled by esbuild into dist/toolnexus.js, which index.js loads.
// One file instead of twenty: each module Node loads costs a resolution, a read and a compile at
// startup. lib/agents stays lazy inside the bundle (its code runs on first use). The bundle is
// CommonJS and readable (not minified). The loader stays its own file (it finds the addon next
// to itself), required as `../loader.js` from lib/ and from dist/ alike.
import { build } from "esbuild"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = dirname(dirname(fileURLToPath(import.meta.url)))

await build({
  entryPoints: [join(root, "lib", "index.js")],
  outfile: join(root, "dist", "toolnexus.js"),
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["../loader.js", "@opentelemetry/api"],
  legalComments: "none",
  // Classes and functions keep the names they have in lib/ (`new FileTaskStore(dir).constructor.name`
  // is "FileTaskStore", not the "FileTaskStore2" esbuild gives a name two modules share).
  keepNames: true,
  logLevel: "warning",
})
