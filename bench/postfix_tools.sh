#!/usr/bin/env bash
# Postfix's smtp-source and smtp-sink (Debian package postfix), without a Postfix daemon.
#   bench/postfix_tools.sh     -> three lines on stdout: smtp-source path, smtp-sink path, package version
# When the tools are missing it installs the package non-interactively (root needed): debconf
# answers "No configuration" (no main.cf, nothing to serve), and a policy-rc.d that denies every
# start is put in place for the install if the machine has none. Afterwards it checks that no
# Postfix master runs and nothing listens on port 25; a master found running is stopped, since
# only the two tools are wanted. Idempotent; progress goes to stderr.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
say() { echo "postfix_tools: $*" >&2; }

have_tools() { command -v smtp-source >/dev/null && command -v smtp-sink >/dev/null; }

install_postfix() {
  command -v apt-get >/dev/null || { say "apt-get not found: this script needs Debian or Ubuntu"; exit 1; }
  [[ $EUID -eq 0 ]] || { say "smtp-source is missing; installing postfix needs root: sudo $0"; exit 1; }
  local policy=/usr/sbin/policy-rc.d created=""
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# bench/postfix_tools.sh: no daemon starts during the install\nexit 101\n' > "$policy"
    chmod 755 "$policy" && created=$policy
  fi
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  say "installing postfix (apt-get install postfix, 'No configuration', daemon start denied)"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postfix >&2; then
    say "apt-get install failed; refreshing the package lists and retrying"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postfix >&2
  fi
  [[ -z $created ]] || rm -f "$created"
}

no_daemon() {  # stop a Postfix master if one runs; fail if something still listens on port 25
  local pidfile=/var/spool/postfix/pid/master.pid
  if [[ -s $pidfile ]] && kill -0 "$(tr -d ' ' < "$pidfile")" 2>/dev/null; then
    say "a Postfix master runs (pid $(tr -d ' ' < "$pidfile")): stopping it, only the tools are needed"
    postfix stop >&2 || true
  fi
  if command -v ss >/dev/null && ss -ltnH 'sport = :25' | grep -q .; then
    say "something listens on port 25:"; ss -ltnpH 'sport = :25' >&2; exit 1
  fi
}

have_tools || install_postfix
have_tools || { say "smtp-source/smtp-sink still not found after installing postfix"; exit 1; }
no_daemon
version="$(dpkg-query -W -f='${Version}' postfix 2>/dev/null || echo unknown)"
say "postfix $version: $(command -v smtp-source), $(command -v smtp-sink)"
command -v smtp-source
command -v smtp-sink
echo "$version"
