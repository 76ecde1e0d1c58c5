#!/usr/bin/env bash
# bench-replica.sh: what runtime.WaitForReplicas costs an enqueue. Starts a
# throwaway redis-server and a replica of it on free ports, runs
# `go run ./examples/bench -replicated` against the master, and stops both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/throwaway.sh
. "$(dirname "$0")/throwaway.sh"
start() { # port dir [extra...]
  local port=$1 d=$2; shift 2
  mkdir -p "$d"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$d" --daemonize no \
    --logfile "$d/redis.log" "$@" &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.05; done
  echo "redis-server on $port did not start" >&2; cat "$d/redis.log" >&2; exit 1
}
master=$(free_port); start "$master" "$dir/master"
replica=$(free_port); start "$replica" "$dir/replica" --replicaof 127.0.0.1 "$master"
for _ in $(seq 200); do
  redis-cli -p "$replica" info replication | grep -q 'master_link_status:up' && break
  sleep 0.05
done
redis-cli -p "$replica" info replication | grep -q 'master_link_status:up' || { echo "the replica did not connect" >&2; exit 1; }
cd "$root"
REDIS_URL="redis://127.0.0.1:$master/0" go run ./examples/bench -replicated "$@"
