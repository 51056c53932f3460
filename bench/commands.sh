#!/usr/bin/env bash
# Measure the README's two commands on this machine: cold (fresh clone, empty pip/uv/Maven
# caches) and warm (run again with everything up). Prints a table; appends nothing by itself.
# The Debian packages are not removed (that would need a new machine): note it with the figures.
#   bench/commands.sh [workdir]      (stop any running stack first: ports are shared)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-/tmp/mailserver-bench}"
rm -rf "$WORK" && mkdir -p "$WORK"
export UV_CACHE_DIR="$WORK/uv-cache" PIP_NO_CACHE_DIR=1 MAVEN_OPTS="-Dmaven.repo.local=$WORK/m2"

timed() {  # label, dir, command...
  local label=$1 dir=$2; shift 2
  local start=$SECONDS
  (cd "$dir" && "$@") > "$WORK/$label.log" 2>&1 || { echo "$label FAILED (see $WORK/$label.log)"; tail -20 "$WORK/$label.log"; exit 1; }
  echo "$label: $((SECONDS - start)) s"
}

git clone -q "$REPO" "$WORK/run" && git clone -q "$REPO" "$WORK/test"
timed run-cold "$WORK/run" make run
timed run-warm "$WORK/run" make run
(cd "$WORK/run" && .venv/bin/python -m include.stack status) | tee "$WORK/status.txt"
(cd "$WORK/run" && make stop >/dev/null)
# `make stop` stops everything it started: no process of the clone, no stack port listening.
left=$(pgrep -af "$WORK/run" | grep -v pgrep || true)
ports=$(ss -Hltn | awk '{print $4}' | grep -E ':(9042|7000|7199|9200|9000|5672|15672|25672|4369|5432|8080|2525|8000|1143)$' || true)
if [ -n "$left$ports" ]; then echo "make stop left behind: $left $ports"; exit 1; fi
echo "make stop: no process or port left"
rm -rf "$UV_CACHE_DIR" "$WORK/m2"
timed test-cold "$WORK/test" make test
timed test-warm "$WORK/test" make test
(cd "$WORK/test" && make stop >/dev/null)
grep -E "passed|failed" "$WORK/test-warm.log" | tail -1
