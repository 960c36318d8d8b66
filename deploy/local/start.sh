#!/usr/bin/env bash
# `npm start`: dependencies, the dev stack (Redis, Kafka, MongoDB-wire), every service, a dev API key.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
bash deploy/local/bootstrap.sh
bash deploy/local/stack.sh up dev
exec node_modules/.bin/node --no-warnings deploy/local/start.ts
