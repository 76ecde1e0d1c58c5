#!/usr/bin/env bash
# bench-history.sh: what the task history costs, and how fast it is searched.
# Starts a throwaway PostgreSQL (initdb in a temporary directory, as the
# postgres user when run as root: PostgreSQL refuses root) and, unless
# REDIS_URL is set, a throwaway redis-server, on free ports; runs
# `go run ./examples/bench -history` against them; stops both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bindir=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1)")")
[ -x "$bindir/initdb" ] || { echo "bench-history: no initdb; install PostgreSQL (Debian: apt-get install postgresql)" >&2; exit 2; }
# shellcheck source=scripts/throwaway.sh
. "$(dirname "$0")/throwaway.sh"
chmod 755 "$dir" # PostgreSQL, run as its own user, must reach it
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$dir"
  as_pg=(runuser -u postgres --)
fi
"${as_pg[@]}" "$bindir/initdb" -D "$dir/pg" -U postgres --auth=trust --no-sync >/dev/null
pgport=$(free_port)
"${as_pg[@]}" "$bindir/postgres" -D "$dir/pg" -p "$pgport" -k "$dir" -c listen_addresses=127.0.0.1 \
  >"$dir/pg.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do "$bindir/pg_isready" -q -h 127.0.0.1 -p "$pgport" && break; sleep 0.1; done
"$bindir/pg_isready" -q -h 127.0.0.1 -p "$pgport" || { echo "PostgreSQL did not start" >&2; cat "$dir/pg.log" >&2; exit 1; }
if [ -z "${REDIS_URL:-}" ]; then
  rport=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize no --logfile "$dir/redis.log" &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done
  export REDIS_URL="redis://127.0.0.1:$rport/0"
fi
cd "$root"
HISTORY_URL="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable" go run ./examples/bench -history "$@"
