#!/bin/sh
# test-deps.sh: make sure what `make test` needs is installed, before any test
# runs. The tests start their own redis-server processes, so redis-server must
# be on PATH; the task history's tests start their own PostgreSQL servers, so
# initdb and postgres must be on PATH or where Debian's package postgresql
# puts them (/usr/lib/postgresql/<version>/bin); the dashboard's tests drive a
# headless Chromium (the Debian package chromium). On Debian/Ubuntu each is
# installed when this runs as root or with passwordless sudo; otherwise this
# stops at once with the command to run, instead of a wall of failing tests.
# BANANAS_NO_INSTALL=1 never installs; BANANAS_SKIP_BROWSER=1 skips the
# browser tests and so needs no Chromium.
set -eu

have() { command -v "$1" >/dev/null 2>&1; }
have_initdb() {
  have initdb && return 0
  for f in /usr/lib/postgresql/*/bin/initdb; do [ -x "$f" ] && return 0; done
  return 1
}

missing=""
have redis-server || missing="redis-server"
have_initdb || missing="$missing postgresql"
if [ "${BANANAS_SKIP_BROWSER:-}" != "1" ] && ! have chromium && ! have chromium-browser && ! have google-chrome; then
  missing="$missing chromium"
fi
missing=$(echo $missing)
[ -z "$missing" ] && exit 0

how="sudo apt-get install -y $missing   (Debian/Ubuntu; elsewhere install Redis >= 7.0 so that redis-server is on PATH, PostgreSQL >= 13 so that initdb is on PATH, and Chromium or Chrome; or set BANANAS_SKIP_BROWSER=1 to skip the browser tests)"

as_root=""
if [ "${BANANAS_NO_INSTALL:-}" != "1" ] && have apt-get; then
  if [ "$(id -u)" = "0" ]; then
    as_root=" "
  elif have sudo && sudo -n true 2>/dev/null; then
    as_root="sudo"
  fi
fi

if [ -z "$as_root" ]; then
  echo "make test: $missing not on PATH, and this cannot install it; run:" >&2
  echo "  $how" >&2
  exit 2
fi

echo "make test: installing $missing (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
$as_root apt-get install -y -qq $missing >/dev/null 2>&1 ||
  { $as_root apt-get update -qq && $as_root apt-get install -y -qq $missing; }
# The redis-server package also starts a server on port 6379, and the
# postgresql package a cluster on port 5432; the tests never use either.
for cmd in $missing; do
  case $cmd in
    postgresql) have_initdb || { echo "make test: installing postgresql failed; run: $how" >&2; exit 2; } ;;
    chromium) have chromium || have chromium-browser || { echo "make test: installing chromium failed; run: $how" >&2; exit 2; } ;;
    *) have "$cmd" || { echo "make test: installing $cmd failed; run: $how" >&2; exit 2; } ;;
  esac
done
