#!/usr/bin/env bash
# `npm run bench [-- flags]`: the performance benchmarks (deploy/bench/README.md), side by side with their baselines.
# Flags are passed to deploy/bench/run.ts (see deploy/bench/README.md): --quick, --reps N, --duration S,
# --only a,b, --no-pin, --no-profile, --out DIR.
#
# Uses the `test` stack profile (Redis, Kafka, MongoDB-wire): starts it when it is not running and stops it
# at the end only in that case. Installs nginx from apt when /usr/sbin/nginx is missing (the baseline proxy);
# nginx itself runs in the foreground under run.ts, with its own files in .local/bench/.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { printf '[bench] %s\n' "$*"; }
fail() { printf '[bench] FAILED at %s\n' "$*" >&2; exit 1; }

bash deploy/local/bootstrap.sh

if [[ ! -x /usr/sbin/nginx ]]; then
  say "installing nginx (apt) for the reverse-proxy baseline..."
  mkdir -p .cache/logs
  log=.cache/logs/apt-nginx.log
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends nginx-light >>"$log" 2>&1; then
    apt-get update >>"$log" 2>&1 || fail "apt-get update (see $log)"
    apt-get install -y --no-install-recommends nginx-light >>"$log" 2>&1 || fail "apt-get install nginx-light (see $log)"
  fi
  # The distro's own nginx service (port 80) is not needed; best effort, containers have no service manager.
  if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
    systemctl disable --now nginx >/dev/null 2>&1 || true
  elif command -v service >/dev/null && service nginx status >/dev/null 2>&1; then
    service nginx stop >/dev/null 2>&1 || true
  fi
  [[ -x /usr/sbin/nginx ]] || fail "nginx installed but /usr/sbin/nginx is missing (see $log)"
fi

source deploy/local/shared-test-stack.sh
test_stack_up
trap test_stack_release EXIT

node_modules/.bin/node --no-warnings deploy/bench/run.ts "$@"
