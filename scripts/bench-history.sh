#!/usr/bin/env bash
# bench-history.sh: what the task history costs, and how fast it is searched.
# Starts a throwaway PostgreSQL (initdb in a temporary directory, as the
# postgres user when run as root: PostgreSQL refuses root) and, unless
# REDIS_URL is set, a throwaway redis-server, on free ports; runs
# the -history scenarios of examples/bench/addons (a module of its own, as
# history/postgres is) against them; stops both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/throwaway.sh
. "$(dirname "$0")/throwaway.sh"
start_postgres
if [ -z "${REDIS_URL:-}" ]; then
  rport=$(free_port)
  start_redis "$rport" "$dir/redis" --appendonly no
  export REDIS_URL="redis://127.0.0.1:$rport/0"
fi
HISTORY_URL="$pgdsn" go -C "$root/examples/bench/addons" run . -history "$@"
