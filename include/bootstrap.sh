#!/usr/bin/env bash
# Bootstrap a fresh machine for this project (idempotent; a second run only checks):
#   1. Debian packages: JDK 17, Maven, RabbitMQ, PostgreSQL, Chromium for the browser tests (installed
#      when missing; Playwright drives this one, it never downloads its own);
#   2. the Python 3.11 virtualenv .venv from the lock file requirements.txt, plus this package;
#   3. the JVM artifacts (Cassandra, OpenSearch, S3Proxy, Spark connector) from Maven Central.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3.11}"
UV_VERSION="0.9.5"
APT_PACKAGES=(openjdk-17-jdk-headless maven rabbitmq-server postgresql chromium)

log() { printf '[bootstrap] %s\n' "$*"; }

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  # policy-rc.d may forbid starting the system services; we never use them (the stack runs
  # private instances on loopback), so a refused service start is fine.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v "$PYTHON" >/dev/null || PYTHON=python3
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || { echo "Python 3.11 is required (found $("$PYTHON" --version))" >&2; exit 1; }

stamp_value="$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [[ ! -x .venv/bin/python ]] || [[ "$(cat .venv/.bootstrap-stamp 2>/dev/null)" != "$stamp_value" ]]; then
  log "creating the Python environment in .venv (from requirements.txt)"
  [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q "uv==$UV_VERSION"
  .venv/bin/uv pip install -q --python .venv/bin/python -r requirements.txt
  .venv/bin/uv pip install -q --python .venv/bin/python --no-deps -e .
  echo "$stamp_value" > .venv/.bootstrap-stamp
fi

.venv/bin/python -m include.stack fetch
log "ready"
