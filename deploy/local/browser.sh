#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests (playwright-core drives it; no browser download).
# Idempotent: does nothing when /usr/bin/chromium exists; `apt-get update` only if the first install fails.
set -Eeuo pipefail
say() { printf '[browser] %s\n' "$*"; }
fail() { printf '[browser] FAILED at %s\n' "$*" >&2; exit 1; }

[[ -x /usr/bin/chromium ]] && exit 0
command -v apt-get >/dev/null 2>&1 || fail "installing chromium: apt-get is not available; install Chromium at /usr/bin/chromium"
SUDO=()
if [[ $(id -u) != 0 ]]; then
  command -v sudo >/dev/null 2>&1 || fail "installing chromium: not root and no sudo"
  SUDO=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
apt_install() { "${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium fonts-liberation >"$log" 2>&1; }
say "installing Debian's chromium (apt-get install chromium)..."
if ! apt_install; then
  say "install failed; refreshing the package lists (apt-get update) and retrying..."
  "${SUDO[@]}" apt-get update -q >"$log" 2>&1 || { tail -20 "$log" >&2; fail "apt-get update"; }
  apt_install || { tail -30 "$log" >&2; fail "apt-get install chromium (log above)"; }
fi
[[ -x /usr/bin/chromium ]] || fail "chromium installed but /usr/bin/chromium is missing"
say "chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}') installed"
