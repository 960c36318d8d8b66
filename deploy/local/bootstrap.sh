#!/usr/bin/env bash
# Installs the project's npm dependencies when package-lock.json changed, and checks that the Node 24
# binary from the `node` devDependency is in place (npm runs our scripts with it).
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { printf '[bootstrap] %s\n' "$*"; }
fail() { printf '[bootstrap] FAILED at %s\n' "$*" >&2; exit 1; }

stamp=node_modules/.dap-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" || ! -x node_modules/.bin/node ]]; then
  say "installing npm dependencies (npm ci)..."
  npm ci --no-audit --no-fund >/tmp/dap-npm-ci.$$.log 2>&1 || { tail -30 /tmp/dap-npm-ci.$$.log >&2; fail "npm ci (log above)"; }
  rm -f /tmp/dap-npm-ci.$$.log
  echo "$want" >"$stamp"
fi
# The `node` package ships Node 24 through its install script (approved in package.json allowScripts).
# If an npm configured with ignore-scripts skipped it, run that one script explicitly.
if ! node_modules/.bin/node --version 2>/dev/null | grep -q '^v24\.'; then
  say "fetching the Node 24 binary (npm rebuild node)..."
  npm rebuild node --ignore-scripts=false >/dev/null 2>&1 || true
  node_modules/.bin/node --version 2>/dev/null | grep -q '^v24\.' || fail "installing Node 24 from the npm package 'node'"
fi
