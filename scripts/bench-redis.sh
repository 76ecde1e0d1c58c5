#!/usr/bin/env bash
# bench-redis.sh: runs examples/bench with the given flags against a real
# redis-server: REDIS_URL when it is set, else a throwaway one on a free
# port (stopped after). For the scenarios whose figures are Redis's own —
# its CPU a second, lateness at 10,000 ticks a second — which the embedded
# server, a Lua interpreter in Go, cannot stand for. Without redis-server on
# PATH they run on the embedded server, and say so.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/throwaway.sh
. "$(dirname "$0")/throwaway.sh"
if [ -z "${REDIS_URL:-}" ]; then
  if command -v redis-server >/dev/null; then
    rport=$(free_port)
    start_redis "$rport" "$dir/redis" --appendonly no
    export REDIS_URL="redis://127.0.0.1:$rport/0"
  else
    echo "# redis-server not on PATH (Debian: apt-get install redis-server): $* runs on the embedded server"
  fi
fi
cd "$root" && go run ./examples/bench "$@"
