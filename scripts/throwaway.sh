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
