#!/usr/bin/env bash
# Soak run (not part of `npm test`): the whole system for 10 minutes at 80 % of the professional plan's
# limit (800 requests/min) across a mix of endpoints, sampling every process's RSS and the Kafka consumer
# lag every 10 s; prints a summary table and exits 1 if memory or lag grew, or if requests failed.
#
#   bash deploy/local/soak.sh                      (SOAK_SECONDS=600 SOAK_PER_MINUTE=800 by default)
#   SOAK_SECONDS=120 bash deploy/local/soak.sh     a short run
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
bash deploy/local/bootstrap.sh
source deploy/local/shared-test-stack.sh
test_stack_up
trap test_stack_release EXIT
node_modules/.bin/node --no-warnings test/faults/soak.ts
