#!/usr/bin/env bash
# compare-doc.sh PEER_DIR: run the shared peer comparison (asynq and `make bench`
# on one throwaway redis-server) and write its table, with the date and the
# machine, into docs/PERFORMANCE.md between the compare markers.
set -euo pipefail
peer=${1:?usage: compare-doc.sh PEER_DIR (the folder holding compare.sh)}
root=$(cd "$(dirname "$0")/../.." && pwd)
doc="$root/docs/PERFORMANCE.md"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$peer/compare.sh" "$root" >"$out"
{
  echo "Measured $(date -u +'%Y-%m-%d %H:%M UTC') on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(redis-server --version | cut -d' ' -f1-3), $(go version | cut -d' ' -f3):"
  echo
  echo '```'
  cat "$out"
  echo '```'
} >"$out.section"
python3 - "$doc" "$out.section" <<'PY'
import sys
doc, section = sys.argv[1], open(sys.argv[2]).read()
text = open(doc).read()
begin, end = "<!-- compare:begin -->", "<!-- compare:end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(doc, "w").write(text[:a] + "\n" + section + text[b:])
PY
rm -f "$out.section"
cat "$out"
