#!/usr/bin/env bash
# The MCP project's own conformance suite (npm @modelcontextprotocol/conformance, installed by
# scripts/peers.sh) against scripts/mcp-conformance-client.mjs, a client written only on the public
# API. Every client scenario the suite lists runs, one at a time (the suite's own `--suite` runs
# them all at once, and on two busy cores its timing checks, such as SSE reconnection within the
# server's `retry`, then judge the machine rather than the client). Any scenario that fails, or
# warns, fails the run. The harness needs Node 22: its path is the first argument.
#   bash scripts/mcp-conformance.sh <node 22> [scenario...]
set -euo pipefail
cd "$(dirname "$0")/.."
node22="$1"
shift
suite="${TOOLNEXUS_PEERS_DIR:?run eval \"\$(scripts/peers.sh)\" first}/js-mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ "$#" -gt 0 ]; then
  scenarios=("$@")
else
  mapfile -t scenarios < <("$node22" "$suite" list --client | sed -n 's/^ *- \([^ ]*\).*/\1/p')
fi
[ "${#scenarios[@]}" -gt 0 ] || { echo "mcp-conformance.sh: the suite listed no client scenarios" >&2; exit 1; }
failed=()
for s in "${scenarios[@]}"; do
  if out="$("$node22" "$suite" client --command "node scripts/mcp-conformance-client.mjs" --scenario "$s" 2>&1)"; then
    echo "ok   $s: $(grep -m1 '^Passed:' <<<"$out" || true)"
  else
    echo "FAIL $s"
    sed 's/^/     /' <<<"$out" | tail -40
    failed+=("$s")
  fi
done
echo "mcp conformance (client): $((${#scenarios[@]} - ${#failed[@]})) of ${#scenarios[@]} scenarios pass"
[ "${#failed[@]}" -eq 0 ]
