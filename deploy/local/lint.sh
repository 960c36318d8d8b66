#!/usr/bin/env bash
# `npm run lint` (and npm test): ESLint with no warnings allowed and Prettier's check, side by side (each is
# mostly one core; together they finish in the time of the slower).
set -Euo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
NODE=node_modules/.bin/node
$NODE node_modules/eslint/bin/eslint.js --max-warnings 0 . &
eslint=$!
$NODE node_modules/prettier/bin/prettier.cjs --check --log-level warn .
prettier=$?
wait "$eslint"
eslint=$?
if ((eslint != 0 || prettier != 0)); then
  echo "[lint] failed: eslint exit $eslint, prettier exit $prettier (npm run format rewrites the layout)" >&2
  exit 1
fi
