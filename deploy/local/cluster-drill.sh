#!/usr/bin/env bash
# Fault drill against `npm run cluster` (deploy/local/cluster-drill.ts): steady load through nginx while a
# Kafka broker, one replica of each service and one gateway are killed and Redis fails over; prints a JSON
# report. The cluster is left degraded afterwards: `bash deploy/local/cluster.sh down` then `up` again.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
[[ -s $ROOT/.local/cluster/ready.env ]] || { echo "[drill] the cluster is not up: npm run cluster" >&2; exit 1; }
exec "$ROOT/node_modules/.bin/node" --no-warnings "$ROOT/deploy/local/cluster-drill.ts"
