#!/usr/bin/env bash
# Fault and security runs (test/faults/README.md), one command:
#
#   bash deploy/local/faults.sh            everything below, then a summary table
#   bash deploy/local/faults.sh --quick    only what `npm test` runs too
#
# What runs where:
#   npm test (fast, on the shared test stack):
#     test/faults/kill.int.test.ts         SIGKILL of every process once under load; no write or event lost
#     test/faults/shutdown.int.test.ts     SIGTERM of every process: in-flight request finishes, exit 0 < 10 s
#     test/security/*.int.test.ts          bad input on every route, tenancy, scopes, secrets in responses/logs
#     test/conformance/openapi.int.test.ts responses vs /v1/openapi.json (fast-check + ajv)
#   this script only (minutes; stops infrastructure, so on a PRIVATE Redis/Kafka/Mongo of its own,
#   started from the same jars as deploy/local/stack.sh; the dev and test profiles are never touched):
#     test/faults/infra.fault.ts           Kafka stopped 30 s, Redis stopped 10 s, MongoDB stopped 10 s
#     the kill test again with 3 rounds    (FAULT_KILL_ROUNDS=3), and the conformance test with more runs
#
# Tunables: FAULT_RATE (requests/s, default 6–8), FAULT_KILL_ROUNDS, FAULT_KAFKA_DOWN_MS, FAULT_MONGO_DOWN_MS,
# FAULT_REDIS_DOWN_MS, CONFORMANCE_RUNS, CONFORMANCE_SEED.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
NODE=node_modules/.bin/node
JEST=(node_modules/jest/bin/jest.js --ci --runInBand)
QUICK=0
[[ ${1:-} == --quick ]] && QUICK=1

bash deploy/local/bootstrap.sh
# The shared test stack serves the process-level tests; infrastructure faults use a private stack.
source deploy/local/shared-test-stack.sh
test_stack_up
bash deploy/local/stack.sh install >/dev/null

REPORT_DIR="$ROOT/.local/faults"
mkdir -p "$REPORT_DIR"
export FAULTS_REPORT="$REPORT_DIR/report-$(date +%Y%m%d-%H%M%S).jsonl"
: >"$FAULTS_REPORT"

# Private stack processes of a crashed earlier run: stop them by their recorded pids (only ours: the pid's
# command line must name that run's folder).
cleanup_private() {
  local f pid dir marker
  for f in "$REPORT_DIR"/stack-*/pids/*.pid; do
    [[ -f $f ]] || continue
    pid=$(<"$f")
    dir=$(dirname "$(dirname "$f")")
    marker=$dir
    # Redis rewrites its title to "redis-server 127.0.0.1:<port>"; the run recorded that port.
    [[ $f == */redis.pid && -f ${f%.pid}.marker ]] && marker="redis-server $(<"${f%.pid}.marker")"
    if [[ $pid =~ ^[0-9]+$ ]] && grep -qaF -- "$marker" "/proc/$pid/cmdline" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -f -- "$f"
  done
}
cleanup() {
  cleanup_private
  test_stack_release
}
trap cleanup EXIT
cleanup_private

status=0
run() {
  echo "[faults] $*"
  "$NODE" --no-warnings "${JEST[@]}" "$@" || status=1
}

run test/faults/kill.int.test.ts test/faults/shutdown.int.test.ts test/security test/conformance
if [[ $QUICK == 0 ]]; then
  FAULT_KILL_ROUNDS=${FAULT_KILL_ROUNDS:-3} run test/faults/kill.int.test.ts
  run --testMatch '<rootDir>/test/faults/**/*.fault.ts'
  CONFORMANCE_RUNS=${CONFORMANCE_RUNS:-40} CONFORMANCE_SEED=${CONFORMANCE_SEED:-$RANDOM} run test/conformance
fi

echo
echo "[faults] summary ($FAULTS_REPORT)"
"$NODE" --no-warnings -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
if (!lines.length) { console.log("(no figures recorded)"); process.exit(0); }
const cols = [...new Set(lines.flatMap((l) => Object.keys(l)))];
const width = cols.map((c) => Math.max(c.length, ...lines.map((l) => String(l[c] ?? "").length)));
const row = (vals) => vals.map((v, i) => String(v).padEnd(width[i])).join("  ");
console.log(row(cols));
console.log(row(width.map((w) => "-".repeat(w))));
for (const l of lines) console.log(row(cols.map((c) => l[c] ?? "")));
' "$FAULTS_REPORT"
exit $status
