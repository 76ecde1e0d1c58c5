#!/usr/bin/env bash
# bench-replica.sh: what runtime.WaitForReplicas costs an enqueue. Starts a
# throwaway redis-server and a replica of it on free ports, runs
# `go run ./examples/bench -replicated` against the master, and stops both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/throwaway.sh
. "$(dirname "$0")/throwaway.sh"
master=$(free_port); start_redis "$master" "$dir/master" --appendonly no
replica=$(free_port); start_redis "$replica" "$dir/replica" --appendonly no --replicaof 127.0.0.1 "$master"
for _ in $(seq 200); do
  redis-cli -p "$replica" info replication | grep -q 'master_link_status:up' && break
  sleep 0.05
done
redis-cli -p "$replica" info replication | grep -q 'master_link_status:up' || { echo "the replica did not connect" >&2; exit 1; }
cd "$root"
REDIS_URL="redis://127.0.0.1:$master/0" go run ./examples/bench -replicated "$@"
