#!/usr/bin/env bash
# Installs the project's npm dependencies when package-lock.json changed, checks that the Node 24 binary from
# the `node` devDependency is in place (npm runs our scripts with it), and makes what is generated from the
# sources (the client types, the dashboard) when its sources changed.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
say() { printf '[bootstrap] %s\n' "$*"; }
fail() { printf '[bootstrap] FAILED at %s\n' "$*" >&2; exit 1; }

# `npm ci`: exactly what the lock file pins (it carries every platform's optional packages), or a clear failure
# when package.json and the lock disagree.
manifest_hash() { cat package-lock.json package.json {libs,services}/*/package.json gateway/package.json 2>/dev/null | sha256sum | cut -d' ' -f1; }
stamp=node_modules/.dap-manifests.sha256
if [[ ! -f $stamp || $(cat "$stamp") != "$(manifest_hash)" || ! -x node_modules/.bin/node ]]; then
  say "installing npm dependencies (npm ci)..."
  log=$(mktemp)
  npm ci --no-audit --no-fund >"$log" 2>&1 || { tail -30 "$log" >&2; fail "npm ci (log above; after changing a package.json, run npm install to update the lock)"; }
  rm -f "$log"
  manifest_hash >"$stamp"
fi
# The `node` package ships Node 24 through its install script (approved in package.json allowScripts).
# If an npm configured with ignore-scripts skipped it, run that one script explicitly.
if ! node_modules/.bin/node --version 2>/dev/null | grep -q '^v24\.'; then
  say "fetching the Node 24 binary (npm rebuild node)..."
  npm rebuild node --ignore-scripts=false >/dev/null 2>&1 || true
  node_modules/.bin/node --version 2>/dev/null | grep -q '^v24\.' || fail "installing Node 24 from the npm package 'node'"
fi

# The client types (libs/sdk/src/generated/openapi.d.ts, which the SDK, the dashboard and the type check use) are
# generated from the OpenAPI document, not committed: made again whenever a source the document is built from
# (the libs, the gateway's document builder and its examples) or the lock file changed.
client_hash() {
  { find libs/*/src libs/sdk/scripts gateway/src/openapi -path libs/sdk/src/generated -prune -o -type f -name '*.ts' ! -name '*.test.ts' -print | LC_ALL=C sort | xargs sha256sum; sha256sum package-lock.json; } | sha256sum | cut -d' ' -f1
}
client_stamp=libs/sdk/src/generated/.sources.sha256
if [[ ! -f libs/sdk/src/generated/openapi.d.ts || ! -f $client_stamp || $(cat "$client_stamp") != "$(client_hash)" ]]; then
  say "generating the client types (npm run generate:client)..."
  log=$(mktemp)
  node_modules/.bin/node --no-warnings libs/sdk/scripts/generate-client.ts >"$log" 2>&1 || { tail -30 "$log" >&2; fail "generating the client types (log above)"; }
  rm -f "$log"
  client_hash >"$client_stamp"
fi

# The dashboard (gateway/dashboard: Vite + React) is built into gateway/dashboard/dist, which the gateway
# serves at `/`, whenever its sources, the contracts it bundles lists from, or the lock file changed. The stamp
# lives in dist/ so a clean tree rebuilds.
dashboard_hash() {
  { (cd gateway/dashboard && find . -path ./dist -prune -o -path ./node_modules -prune -o -type f -print | LC_ALL=C sort | xargs sha256sum); find libs/contracts/src -type f | LC_ALL=C sort | xargs sha256sum; sha256sum package-lock.json; } | sha256sum | cut -d' ' -f1
}
dashboard_stamp=gateway/dashboard/dist/.sources.sha256
if [[ ! -f $dashboard_stamp || $(cat "$dashboard_stamp") != "$(dashboard_hash)" ]]; then
  say "building the dashboard (vite build gateway/dashboard)..."
  log=$(mktemp)
  node_modules/.bin/node node_modules/vite/bin/vite.js build gateway/dashboard >"$log" 2>&1 || { tail -30 "$log" >&2; fail "building the dashboard (log above)"; }
  rm -f "$log"
  dashboard_hash >"$dashboard_stamp"
fi
