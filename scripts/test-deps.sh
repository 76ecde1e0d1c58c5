#!/bin/sh
# test-deps.sh: make sure what `make test` needs is installed, before any test
# runs. The tests start their own redis-server processes, so redis-server must
# be on PATH. On Debian/Ubuntu it is installed when this runs as root or with
# passwordless sudo; otherwise this stops at once with the command to run,
# instead of a wall of failing tests. BANANAS_NO_INSTALL=1 never installs.
set -eu

if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi

need="redis-server"
how="sudo apt-get install -y redis-server   (Debian/Ubuntu; elsewhere install Redis >= 7.0 so that redis-server is on PATH)"

as_root=""
if [ "${BANANAS_NO_INSTALL:-}" != "1" ] && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    as_root=" "
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo"
  fi
fi

if [ -z "$as_root" ]; then
  echo "make test: $need is not on PATH, and this cannot install it; run:" >&2
  echo "  $how" >&2
  exit 2
fi

echo "make test: installing $need (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
$as_root apt-get install -y -qq redis-server >/dev/null 2>&1 ||
  { $as_root apt-get update -qq && $as_root apt-get install -y -qq redis-server; }
# The package also starts a server on port 6379; the tests never use it.
command -v redis-server >/dev/null 2>&1 || { echo "make test: installing $need failed; run: $how" >&2; exit 2; }
