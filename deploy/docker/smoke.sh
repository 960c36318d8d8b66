#!/usr/bin/env bash
# The images' file layout, checked without Docker: for every deployable, the steps of its Dockerfile
# (workspaces.ts prepare → npm ci --omit=dev --ignore-scripts -w @dap/<name> on the manifests alone → slim → the
# sources on top) into $TMPDIR/dap-image-smoke/<name> (outside the repository, where jest would see
# duplicate packages), then every process started from its own tree against the
# test stack (`bash deploy/local/stack.sh up test`) until /readyz answers 200, then stopped.
# It proves the pruned production install has everything each process loads, DuckDB's and onnxruntime's
# native binaries included. Not part of `npm test` (it installs from the npm registry): run it after a
# dependency change. Usage: bash deploy/docker/smoke.sh [name...]
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
NODE=$ROOT/node_modules/.bin/node
OUT=${TMPDIR:-/tmp}/dap-image-smoke
say() { printf '[smoke] %s\n' "$*"; }
fail() { printf '[smoke] FAILED at %s\n' "$*" >&2; exit 1; }

[[ -f .local/test/stack.env ]] || fail "finding the test stack (run: bash deploy/local/stack.sh up test)"
set -a; source .local/test/stack.env; set +a

declare -A DIRS=([accounts]=services/accounts [sources]=services/sources [analytics]=services/analytics [models]=services/models [webhooks]=services/webhooks [gateway]=gateway)
declare -A PORTS=()
# Ports the kernel hands out now, so a run never collides with another stack on this machine.
free_port() { "$NODE" -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
for n in "${!DIRS[@]}"; do PORTS[$n]=$(free_port); done
NAMES=("${@:-accounts sources analytics models webhooks gateway}")
read -r -a NAMES <<<"${NAMES[*]}"

for name in "${NAMES[@]}"; do
  dir=${DIRS[$name]:-} ; [[ -n $dir ]] || fail "unknown deployable $name"
  say "$name: prepare, npm ci --omit=dev --ignore-scripts -w @dap/$name, slim"
  rm -rf "$OUT/$name" && mkdir -p "$OUT/$name"
  "$NODE" --no-warnings deploy/docker/workspaces.ts prepare "$dir" "$OUT/$name/out" >/dev/null
  mkdir -p "$OUT/$name/app" && cp -r "$OUT/$name/out/manifests/." "$OUT/$name/app/"
  (cd "$OUT/$name/app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund -w "@dap/$name" >"$OUT/$name/npm.log" 2>&1) || { tail -20 "$OUT/$name/npm.log" >&2; fail "$name: npm ci"; }
  "$NODE" --no-warnings deploy/docker/workspaces.ts slim "$OUT/$name/app/node_modules" >/dev/null
  cp -r "$OUT/$name/out/app/." "$OUT/$name/app/"
  say "$name: node_modules $(du -sh "$OUT/$name/app/node_modules" | cut -f1)"
done

export HOST=127.0.0.1 NODE_ENV=production LOG_LEVEL=warn KAFKA_TOPIC_PREFIX="smoke$$." \
  INTERNAL_SECRET=$(openssl rand -hex 32) WEBHOOK_SECRET_KEY=$(openssl rand -base64 32) SOURCE_CREDENTIALS_KEY=$(openssl rand -base64 32) \
  DATASET_DIR="$OUT/datasets" ALLOW_PRIVATE_TARGETS=false
for n in accounts sources analytics models webhooks; do export "${n^^}_URL=http://127.0.0.1:${PORTS[$n]}"; done
mkdir -p "$DATASET_DIR"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
for name in "${NAMES[@]}"; do
  entry=${DIRS[$name]}/src/main.ts
  (cd "$OUT/$name/app" && PORT=${PORTS[$name]} MONGO_DB="smoke$$_$name" exec "$NODE" --no-warnings "$entry" >"$OUT/$name/run.log" 2>&1) &
  pids+=($!)
done
for name in "${NAMES[@]}"; do
  for _ in $(seq 1 120); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${PORTS[$name]}/readyz" || true)
    [[ $code == 200 ]] && break
    sleep 0.5
  done
  [[ $code == 200 ]] || { tail -20 "$OUT/$name/run.log" >&2; fail "$name: /readyz answered ${code:-nothing} (log above)"; }
  say "$name: ready from its pruned tree"
done
say "all ready: ${NAMES[*]}"
