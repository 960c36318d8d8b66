#!/usr/bin/env bash
# `npm test`: dependencies, a fresh test stack on its own ports, the type check, then every jest test.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
bash deploy/local/bootstrap.sh
NODE=node_modules/.bin/node

# TEST_STACK=auto|local|containers (auto by default): pinned images through testcontainers where a Docker
# engine answers, else the local stack's processes (deploy/local/test-stack.ts decides; README, "Tests").
mode=$($NODE --no-warnings deploy/local/test-stack.ts mode)
echo "[test] stack: $mode"

source deploy/local/shared-test-stack.sh
if [[ $mode == local ]]; then test_stack_up; fi
trap test_stack_release EXIT

echo "[test] type check (tsc --noEmit)..."
$NODE node_modules/typescript/bin/tsc -p tsconfig.json --noEmit
$NODE node_modules/typescript/bin/tsc -p gateway/dashboard/tsconfig.json --noEmit

echo "[test] lint (eslint, prettier --check)..."
bash deploy/local/lint.sh

# The browser tests drive Debian's Chromium (installed here if missing).
bash deploy/local/browser.sh

echo "[test] jest..."
if [[ $mode == containers ]]; then
  $NODE --no-warnings deploy/local/test-stack.ts run-containers -- $NODE --no-warnings node_modules/jest/bin/jest.js --ci "$@"
else
  $NODE --no-warnings node_modules/jest/bin/jest.js --ci "$@"
fi
