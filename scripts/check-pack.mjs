#!/usr/bin/env node
// `prepack` of the root package. The root package ships JavaScript and types only: the addon
// reaches users through `optionalDependencies` on one package per platform. A root tarball
// without them, each pinned to this exact version, installs everywhere and loads nowhere, so
// packing one is refused. `npm publish` writes them first (`prepublishOnly`: napi pre-publish);
// `npm run pack:local` stages a root tarball and the host's platform tarball to try locally.
import { optionalDependencies, readRoot } from "./targets.mjs"

const pkg = readRoot(process.cwd())
const want = optionalDependencies(pkg)
const have = pkg.optionalDependencies ?? {}
const wrong = Object.entries(want)
  .filter(([name, version]) => have[name] !== version)
  .map(([name, version]) => `  ${name}: ${have[name] === undefined ? "missing" : JSON.stringify(have[name])}, wanted ${version}`)
if (wrong.length) {
  console.error(
    [
      `Refusing to pack ${pkg.name}@${pkg.version}: this package carries no native addon of its own, and its`,
      "optionalDependencies do not pin every platform package at its version, so the tarball would install",
      "and then fail to load:",
      ...wrong,
      "`npm publish` writes them (prepublishOnly: napi pre-publish, after the platform packages are staged",
      "with npm run artifacts). To build tarballs to try out locally: npm run pack:local.",
    ].join("\n"),
  )
  process.exit(1)
}
