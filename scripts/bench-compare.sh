#!/usr/bin/env bash
# bench-compare.sh: Bananas against asynq, River, BullMQ, Sidekiq and Celery,
# side by side, with nothing outside this repository (make bench-compare).
#
# Starts throwaway servers on free ports: a redis-server that persists nothing
# (--save '' --appendonly no), one with appendonly yes + appendfsync everysec,
# one with appendfsync always, and a PostgreSQL cluster (initdb in a temporary
# directory, as the postgres user when run as root; fsync and
# synchronous_commit at their defaults, on). Then, RUNS times (default 3), the
# order reversed every other run, it runs each configuration:
#
#   bananas               go run ./examples/bench (default scenarios), the Redis that persists nothing
#   asynq, asynq-fast     bench/peers/asynq at its defaults and with -fast, same Redis
#   river, river-fast     bench/peers/river at its defaults and with -fast, the PostgreSQL
#   bananas-aof-everysec  the project's bench on the everysec Redis
#   bananas-aof-always    the project's bench on the always Redis
#   bullmq, bullmq-lean   bench/peers/bullmq (Node) at BullMQ's defaults and with
#                         removeOnComplete/removeOnFail, the Redis that persists nothing
#   sidekiq               bench/peers/sidekiq (Ruby): two Sidekiq processes of 32 threads, same Redis
#   celery                bench/peers/celery (Debian's /usr/bin/python3, or PYTHON): one worker,
#                         threads pool of 64, same Redis
#
# bananas and bullmq also time a 1,000-way gather (examples/bench -gather,
# FlowProducer with bench.js --gather) after their scenarios. Every harness
# reports, per scenario, client_cpu_us_per_job_<scenario> and
# redis_cpu_us_per_job_<scenario>; the table adds _life = enqueue + drain.
#
# What the peers need is installed when missing, as scripts/test-deps.sh does
# (apt-get as root or with passwordless sudo; BANANAS_NO_INSTALL=1 never
# installs): Node and npm, then `npm ci` in bench/peers/bullmq; Debian's
# ruby-sidekiq; Debian's python3-celery and python3-redis. Only the configured
# peers' needs are checked.
#
# and prints the medians, the ratios bananas/peer and each run's values. The
# result is written to bench/peers/last-compare.txt and between the compare
# markers of docs/PERFORMANCE.md (COMPARE_DOC=0: not to the doc).
#
#   bananas-base          with BASE=<git revision>: the project's bench built from that
#                         revision, on the Redis that persists nothing (before/after a change)
#
# N (default 50000) sizes the enqueue, batch and drain scenarios of every
# harness; CONFIGS (space-separated names from the list above) runs a subset.
# BASE=<rev> adds bananas-base to the configurations (unless CONFIGS names
# them) and the ratio bananas/bananas-base to the table:
#   BASE=main CONFIGS="bananas bananas-base asynq" make bench-compare
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
n=${N:-50000}
base=${BASE:-}
configs=(${CONFIGS:-bananas asynq asynq-fast river river-fast bullmq bullmq-lean sidekiq celery bananas-aof-everysec bananas-aof-always${base:+ bananas-base}})
python=${PYTHON:-/usr/bin/python3} # Debian's, where python3-celery is; not whatever python3 is first on PATH
command -v redis-server >/dev/null || { echo "bench-compare: redis-server is not on PATH (Debian: apt-get install redis-server)" >&2; exit 2; }

# peer_deps installs what the configured peers need and is missing.
peer_deps() {
  local pkgs=() cfg as_root=""
  for cfg in "${configs[@]}"; do
    case $cfg in
      bullmq*) command -v node >/dev/null && command -v npm >/dev/null || pkgs+=(nodejs npm) ;;
      sidekiq) command -v sidekiq >/dev/null || pkgs+=(ruby-sidekiq) ;;
      celery) "$python" -c 'import celery, redis' 2>/dev/null || pkgs+=(python3-celery python3-redis) ;;
    esac
  done
  mapfile -t pkgs < <(printf '%s\n' ${pkgs[@]+"${pkgs[@]}"} | sort -u | sed '/^$/d')
  if [ ${#pkgs[@]} -gt 0 ]; then
    if [ "${BANANAS_NO_INSTALL:-}" != 1 ] && command -v apt-get >/dev/null; then
      if [ "$(id -u)" = 0 ]; then as_root=env; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then as_root=sudo; fi
    fi
    [ -n "$as_root" ] || { echo "bench-compare: ${pkgs[*]} missing, and this cannot install it; run: sudo apt-get install -y ${pkgs[*]}" >&2; exit 2; }
    echo "# installing ${pkgs[*]} (apt-get)" >&2
    $as_root DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null 2>&1 ||
      { $as_root apt-get update -qq && $as_root DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"; } ||
      { echo "bench-compare: installing ${pkgs[*]} failed; run: sudo apt-get install -y ${pkgs[*]}" >&2; exit 2; }
  fi
  case " ${configs[*]} " in
    *" bullmq"*)
      local b="$root/bench/peers/bullmq"
      if [ ! -d "$b/node_modules/bullmq" ] || [ "$b/package-lock.json" -nt "$b/node_modules/.package-lock.json" ]; then
        echo "# npm ci in bench/peers/bullmq" >&2
        (cd "$b" && npm ci --no-audit --no-fund --loglevel=error >&2)
      fi ;;
  esac
}
peer_deps

# shellcheck source=scripts/throwaway.sh
. "$(dirname "$0")/throwaway.sh"

# Built first, so that compiling never overlaps a measurement.
echo "# building the project's bench and the peer harnesses" >&2
(cd "$root" && go build -o "$dir/bananas" ./examples/bench)
# What the working tree is, read before this run writes its result file.
tree="$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . || echo ', with changes')"
if [ -n "$base" ]; then
  git -C "$root" rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "bench-compare: BASE=$base is not a revision of this repository" >&2; exit 2; }
  mkdir -p "$dir/base" && git -C "$root" archive "$base" | tar -x -C "$dir/base"
  (cd "$dir/base" && go build -o "$dir/bananas-base" ./examples/bench)
fi
(cd "$root/bench/peers/asynq" && go build -o "$dir/asynq" .)
(cd "$root/bench/peers/river" && go build -o "$dir/river" .)

plain=$(free_port); start_redis "$plain" "$dir/plain" --appendonly no
everysec=$(free_port); start_redis "$everysec" "$dir/everysec" --appendonly yes --appendfsync everysec
always=$(free_port); start_redis "$always" "$dir/always" --appendonly yes --appendfsync always
start_postgres
dsn=$pgdsn
pgsetting() { "$pgbin/psql" -At -h 127.0.0.1 -p "$pgport" -U postgres -c "show $1"; }

run() { # config run: one harness run, its result lines relabelled with the config's name
  local cfg=$1 i=$2 port="" cmd gather=()
  case $cfg in
    bananas) port=$plain; cmd=("$dir/bananas" -n "$n"); gather=("$dir/bananas" -gather) ;;
    bananas-aof-everysec) port=$everysec; cmd=("$dir/bananas" -n "$n") ;;
    bananas-aof-always) port=$always; cmd=("$dir/bananas" -n "$n") ;;
    bananas-base)
      [ -x "$dir/bananas-base" ] || { echo "bench-compare: bananas-base needs BASE=<revision>" >&2; exit 2; }
      port=$plain; cmd=("$dir/bananas-base" -n "$n") ;;
    asynq) port=$plain; cmd=("$dir/asynq" -addr "127.0.0.1:$plain" -n "$n") ;;
    asynq-fast) port=$plain; cmd=("$dir/asynq" -addr "127.0.0.1:$plain" -n "$n" -fast) ;;
    river) cmd=("$dir/river" -dsn "$dsn" -n "$n") ;;
    river-fast) cmd=("$dir/river" -dsn "$dsn" -n "$n" -fast) ;;
    bullmq)
      port=$plain; cmd=(node "$root/bench/peers/bullmq/bench.js" --url "redis://127.0.0.1:$plain/0" -n "$n")
      gather=("${cmd[@]}" --gather) ;;
    bullmq-lean) port=$plain; cmd=(node "$root/bench/peers/bullmq/bench.js" --url "redis://127.0.0.1:$plain/0" -n "$n" --lean) ;;
    sidekiq) port=$plain; cmd=(ruby "$root/bench/peers/sidekiq/bench.rb" --url "redis://127.0.0.1:$plain/0" -n "$n") ;;
    celery) port=$plain; cmd=("$python" "$root/bench/peers/celery/bench.py" --url "redis://127.0.0.1:$plain/0" -n "$n") ;;
    *) echo "bench-compare: unknown configuration $cfg" >&2; exit 2 ;;
  esac
  [ -z "$port" ] || redis-cli -p "$port" flushall >/dev/null
  echo "# run $i: $cfg" >&2
  harness "$cfg" "$i" "${port:-$plain}" "${cmd[@]}"
  if [ ${#gather[@]} -gt 0 ]; then
    redis-cli -p "$port" flushall >/dev/null
    harness "$cfg" "$i" "$port" "${gather[@]}"
  fi
}

harness() { # config run port command...: runs it (15 minutes at most), appends its result lines
  local cfg=$1 i=$2 port=$3; shift 3
  if ! REDIS_URL="redis://127.0.0.1:$port/0" PYTHONDONTWRITEBYTECODE=1 timeout 900 "$@" >"$dir/out" 2>"$dir/err"; then
    echo "bench-compare: $cfg failed in run $i:" >&2; cat "$dir/err" >&2; exit 1
  fi
  cat "$dir/out" >>"$dir/out.$i.$cfg"; cat "$dir/err" >>"$dir/err.$i.$cfg"
  # Each run's median only: the _runN lines of a harness's own rounds are left out.
  sed -nE "/_run[0-9]+=/d; s/^[a-z-]+ ([a-z0-9_]+=[-0-9.eE+]+)\$/$i $cfg \1/p" "$dir/out" >>"$dir/results"
}

: >"$dir/results"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$runs"); do
  order=("${configs[@]}")
  if [ $((i % 2)) = 0 ]; then
    order=(); for ((k = ${#configs[@]} - 1; k >= 0; k--)); do order+=("${configs[k]}"); done
  fi
  for cfg in "${order[@]}"; do run "$cfg" "$i"; done
done

out="$root/bench/peers/last-compare.txt"
peers_versions() { # the versions of the non-Go peers that ran
  local v=()
  case " ${configs[*]} " in *" bullmq"*)
    v+=("BullMQ $(cd "$root/bench/peers/bullmq" && node -p "require('bullmq/package.json').version + ', ioredis ' + require('ioredis/package.json').version"), Node $(node --version)") ;; esac
  case " ${configs[*]} " in *" sidekiq "*)
    v+=("Sidekiq $(ruby -rsidekiq -e 'print Sidekiq::VERSION'), Ruby $(ruby -e 'print RUBY_VERSION')") ;; esac
  case " ${configs[*]} " in *" celery "*)
    v+=("Celery $("$python" -c 'import celery, kombu, sys; print(celery.__version__ + ", kombu " + kombu.__version__ + ", Python " + sys.version.split()[0])')") ;; esac
  [ ${#v[@]} -eq 0 ] || (IFS=';'; echo "${v[*]}." | sed 's/;/; /g')
}
{
  echo "Measured $(date -u +'%Y-%m-%d %H:%M UTC') on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end;"
  echo "$(redis-server --version | cut -d' ' -f1-3), PostgreSQL $(pgsetting server_version) (fsync=$(pgsetting fsync), synchronous_commit=$(pgsetting synchronous_commit)), $(go version | cut -d' ' -f3), data on $(df -T "$dir" | awk 'NR==2{print $2}');"
  echo "bananas, asynq, asynq-fast, bullmq, bullmq-lean, sidekiq, celery: a Redis that persists nothing (save '', appendonly no); bananas-aof-*: appendonly yes with appendfsync everysec / always."
  peers_versions
  echo "N=$n RUNS=$runs (medians of the runs; each run's values below the table).${base:+ bananas-base: the bench built from $base ($(git -C "$root" rev-parse --short "$base")), bananas from the working tree ($tree).}"
  echo
  python3 "$root/scripts/bench-table.py" "$dir/results" "${configs[@]}"
} >"$out"
cat "$out"
if [ "${COMPARE_DOC:-1}" != 0 ]; then
  python3 - "$root/docs/PERFORMANCE.md" "$out" <<'PY'
import sys
doc, section = sys.argv[1], open(sys.argv[2]).read()
text = open(doc).read()
begin, end = "<!-- compare:begin -->", "<!-- compare:end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(doc, "w").write(text[:a] + "\n" + section + text[b:])
PY
  echo "# written to bench/peers/last-compare.txt and docs/PERFORMANCE.md" >&2
fi
