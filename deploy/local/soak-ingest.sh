#!/usr/bin/env bash
# Soak test for bounded memory in ingestion: a 1 GiB CSV pulled from a URL by the sources service (its own
# process), or streamed to it as an upload (mode upload: POST /v1/sources/upload, the CSV generated as it is
# sent), must load with the service's peak RSS under 400 MB.
#
#   bash deploy/local/soak-ingest.sh [size MiB, default 1024] [RSS budget MB, default 400] [url|upload, default url]
#
# Uses the test stack (started if needed, never stopped: others may share it). Needs ~3x the size in free
# space under $TMPDIR. Takes about a minute for 1 GiB on two cores.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
bash deploy/local/bootstrap.sh
if ! bash deploy/local/stack.sh status test >/dev/null 2>&1; then
  bash deploy/local/stack.sh up test
fi
exec node_modules/.bin/node --no-warnings deploy/bench/services/sources/soak-ingest.ts "${1:-1024}" "${2:-400}" "${3:-url}"
