# throwaway.sh: what the bench scripts that start throwaway servers share.
# Sourced, not run. It makes $dir (a temporary directory) and $pids (the
# servers started), and on exit stops those servers and removes $dir.
dir=$(mktemp -d)
pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap stop EXIT

# free_port prints a port in 10000-22999 that nothing listens on: below the
# kernel's ephemeral range, so no outgoing connection takes it meanwhile.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((10000 + RANDOM % 13000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "no free port" >&2; exit 1
}

# start_redis port dir [redis-server options...] starts a redis-server on
# port that saves no snapshots (and keeps no AOF unless the options say so),
# its files in dir, and waits until it answers. Call it directly, not in
# $(...), so that $pids keeps the server.
start_redis() {
  local port=$1 d=$2; shift 2
  mkdir -p "$d"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --dir "$d" --daemonize no \
    --logfile "$d/redis.log" "$@" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.05; done
  echo "redis-server on $port did not start" >&2; cat "$d/redis.log" >&2; exit 1
}

# start_postgres starts a PostgreSQL cluster in $dir/pg (initdb as the
# postgres user when run as root: PostgreSQL refuses root) on a free port,
# fsync on, and waits until it answers. It sets $pgbin (the binaries),
# $pgport and $pgdsn.
start_postgres() {
  pgbin=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1)")")
  [ -x "$pgbin/initdb" ] || { echo "no initdb; install PostgreSQL (Debian: apt-get install postgresql)" >&2; exit 2; }
  chmod 755 "$dir" # PostgreSQL, run as its own user, must reach it
  local as_pg=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir"
    as_pg=(runuser -u postgres --)
  fi
  "${as_pg[@]}" "$pgbin/initdb" -D "$dir/pg" -U postgres --auth=trust --no-sync >/dev/null
  pgport=$(free_port)
  "${as_pg[@]}" "$pgbin/postgres" -D "$dir/pg" -p "$pgport" -k "$dir" -c listen_addresses=127.0.0.1 \
    >"$dir/pg.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" && break; sleep 0.1; done
  "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" || { echo "PostgreSQL did not start" >&2; cat "$dir/pg.log" >&2; exit 1; }
  pgdsn="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"
}
