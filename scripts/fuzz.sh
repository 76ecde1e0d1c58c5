#!/usr/bin/env bash
# fuzz.sh: run every fuzz target of the module for FUZZTIME each (default
# 10s), one after the other, and stop at the first that fails. go test writes
# the failing input under the package's testdata/fuzz/<Target>/: commit it
# with the fix, and make test runs it from then on as part of the seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
n=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for target in $targets; do
    echo "== $pkg $target ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
      echo "FAIL: $pkg $target; the failing input is in $dir/testdata/fuzz/$target/" >&2
      exit 1
    fi
    n=$((n + 1))
  done
done
echo "ok: $n fuzz targets, $fuzztime each"
