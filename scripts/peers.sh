#!/usr/bin/env bash
# The official A2A and MCP SDKs our interop tests talk to, installed once into a folder of their own
# (default .peers/ at the repository root, gitignored; TOOLNEXUS_PEERS_DIR to put it elsewhere):
#   js-v1   @a2a-js/sdk 1.3.0 (A2A v1.0) + express     js-v03  @a2a-js/sdk 0.3.14 (A2A v0.3) + express
#   py-v1   a2a-sdk 1.3.0 + uvicorn (pip --target)     py-v03  a2a-sdk 0.3.26 + uvicorn
#   py-mcp  mcp 2.3.0, the Python MCP SDK (its client caps one SSE event at 1 MiB)
#   js-mcp2 @modelcontextprotocol/server 2.4.0 (the TypeScript MCP SDK v2: a server of protocol
#           2026-07-28 only, `legacy: "reject"`) + @modelcontextprotocol/node + zod
#   js-mcp-conformance  @modelcontextprotocol/conformance 0.1.16, the MCP project's own suite (its
#           harness runs on Node 22: .ci/run)
#   js-mcp-inspector  @modelcontextprotocol/inspector 0.15.0, the MCP Inspector (its CLI reads a
#           served toolkit's prompts and resources)
# Prints the export that tells the tests where they are:  eval "$(scripts/peers.sh)"
# A folder already complete is kept (its stamp names what it holds). Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TOOLNEXUS_PEERS_DIR:-$PWD/.peers}"
mkdir -p "$dir"

have() { [ -f "$dir/$1/.installed" ] && [ "$(cat "$dir/$1/.installed")" = "$2" ]; }
done_() { echo "$2" > "$dir/$1/.installed"; }

npm_peer() { # name, packages...
  local name="$1"; shift
  have "$name" "$*" && return 0
  echo "peers: installing $name ($*)" >&2
  rm -rf "${dir:?}/$name" && mkdir -p "$dir/$name"
  echo '{"private":true}' > "$dir/$name/package.json"
  npm install --silent --no-audit --no-fund --prefix "$dir/$name" "$@" >&2
  done_ "$name" "$*"
}

py_peer() { # name, requirements...
  local name="$1"; shift
  have "$name" "$*" && return 0
  echo "peers: installing $name ($*)" >&2
  if ! python3 -m pip --version >/dev/null 2>&1; then
    if command -v apt-get >/dev/null; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip) >&2
    fi
  fi
  rm -rf "${dir:?}/$name" && mkdir -p "$dir/$name"
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
    python3 -m pip install --quiet --target "$dir/$name" "$@" >&2 ||
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1 \
      python3 -m pip install --quiet --target "$dir/$name" "$@" >&2
  done_ "$name" "$*"
}

npm_peer js-v1 @a2a-js/sdk@1.3.0 express@5.3.0
npm_peer js-v03 @a2a-js/sdk@0.3.14 express@5.3.0
py_peer py-v1 "a2a-sdk[http-server]==1.3.0" uvicorn==0.55.0
py_peer py-v03 "a2a-sdk[http-server]==0.3.26" uvicorn==0.55.0
py_peer py-mcp "mcp==2.3.0"
npm_peer js-mcp2 @modelcontextprotocol/server@2.4.0 @modelcontextprotocol/node@2.1.2 zod@4.6.7
npm_peer js-mcp-conformance @modelcontextprotocol/conformance@0.1.16
npm_peer js-mcp-inspector @modelcontextprotocol/inspector@0.15.0
echo "export TOOLNEXUS_PEERS_DIR=$dir"
