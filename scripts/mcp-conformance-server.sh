#!/usr/bin/env bash
# The MCP project's own conformance suite (npm @modelcontextprotocol/conformance, installed by
# scripts/peers.sh) against scripts/mcp-conformance-server.mjs, a server written only on the
# public API: every server scenario the suite lists, in one run of the harness. A scenario that
# fails, or a check that warns, fails the run. The harness needs Node 22: its path is the first
# argument; the server runs on the Node on PATH.
#   bash scripts/mcp-conformance-server.sh <node 22> [scenario]
set -euo pipefail
cd "$(dirname "$0")/.."
node22="$1"
shift
suite="${TOOLNEXUS_PEERS_DIR:?run eval \"\$(scripts/peers.sh)\" first}/js-mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
out="$(mktemp -d)"
node scripts/mcp-conformance-server.mjs > "$out/url" 2> "$out/server.err" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 1 100); do
  [ -s "$out/url" ] && break
  kill -0 "$server" 2>/dev/null || { echo "mcp-conformance-server.sh: the server did not start:" >&2; cat "$out/server.err" >&2; exit 1; }
  sleep 0.1
done
url="$(head -n1 "$out/url")"
[ -n "$url" ] || { echo "mcp-conformance-server.sh: the server printed no URL" >&2; exit 1; }
if [ "$#" -gt 0 ]; then which=(--scenario "$1"); else which=(--suite all); fi
status=0
"$node22" "$suite" server --url "$url" "${which[@]}" > "$out/report" 2>&1 || status=$?
sed -n '/=== SUMMARY ===/,$p' "$out/report"
# The harness prints a failed scenario with ✗ and a warning check with WARNING.
if [ "$status" -ne 0 ] || grep -q '✗' "$out/report" || grep -q 'WARNING' "$out/report"; then
  echo "mcp conformance (server): failures or warnings; the harness said:" >&2
  grep -B2 -A8 'WARNING\|FAILURE\|✗' "$out/report" | tail -120 >&2 || true
  exit 1
fi
scenarios="$(grep -c '^[✓✗] ' "$out/report" || true)"
echo "mcp conformance (server): all $scenarios scenarios pass"
