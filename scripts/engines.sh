#!/usr/bin/env bash
# Real database engines for the store tests: PostgreSQL and Redis from Debian's packages,
# started on loopback ports in a temporary directory.
#
#   eval "$(scripts/engines.sh start)"   # installs what is missing, starts both, prints the
#                                        # TOOLNEXUS_TEST_POSTGRES / TOOLNEXUS_TEST_REDIS exports
#   scripts/engines.sh stop "$TOOLNEXUS_ENGINES_DIR"
#
# Everything it says besides the exports goes to stderr. PostgreSQL refuses to run as root, so
# as root the cluster belongs to the `postgres` user the package creates.
set -euo pipefail

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

case "${1:-}" in
start)
  pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
  if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/postgres" ] || ! command -v redis-server >/dev/null; then
    echo "installing postgresql and redis-server from Debian's packages" >&2
    if [ "$(id -u)" = 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
    DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -q --no-install-recommends postgresql redis-server >&2 \
      || { DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" update -q >&2 && DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -q --no-install-recommends postgresql redis-server >&2; }
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
  fi
  dir="$(mktemp -d /tmp/toolnexus-engines.XXXXXX)"
  chmod 755 "$dir"
  as=()
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$dir/pg" && chown postgres: "$dir/pg"
    as=(runuser -u postgres --)
  fi
  pg_port="$(free_port)"
  "${as[@]}" "$pg_bin/initdb" -D "$dir/pg/data" -U toolnexus --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  "${as[@]}" "$pg_bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/log" -w -t 60 \
    -o "-h 127.0.0.1 -p $pg_port -k $dir/pg -c fsync=off -c max_connections=200" start >&2
  redis_port="$(free_port)"
  redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$dir" --save "" --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
  for _ in $(seq 1 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "export TOOLNEXUS_ENGINES_DIR=$dir"
  echo "export TOOLNEXUS_ENGINES_PG_BIN=$pg_bin"
  echo "export TOOLNEXUS_TEST_POSTGRES=postgres://toolnexus@127.0.0.1:$pg_port/postgres"
  echo "export TOOLNEXUS_TEST_REDIS=redis://127.0.0.1:$redis_port/0"
  ;;
stop)
  dir="${2:?the directory start printed}"
  pg_bin="${TOOLNEXUS_ENGINES_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)}"
  as=()
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$pg_bin/pg_ctl" -D "$dir/pg/data" -m immediate stop >/dev/null 2>&1 || true
  [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start | stop <dir>" >&2
  exit 2
  ;;
esac
