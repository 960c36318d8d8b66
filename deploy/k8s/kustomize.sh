#!/usr/bin/env bash
# The real kustomize, pinned, built from the Go module proxy into .cache/ on first use (about a minute),
# then reused: `bash deploy/k8s/kustomize.sh build deploy/k8s/overlays/example | kubectl apply -f -`.
# `bash deploy/k8s/kustomize.sh path` only ensures the binary and prints its path.
# v5.7.1 is the newest release that builds with Go 1.26 (v5.8 needs Go 1.27); GOTOOLCHAIN=local keeps
# `go` from fetching another toolchain.
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
VERSION=v5.7.1
DIR="$ROOT/.cache/kustomize/$VERSION"
BIN="$DIR/kustomize"
fail() { printf '[kustomize] FAILED at %s\n' "$*" >&2; exit 1; }

if [[ ! -x $BIN ]]; then
  command -v go >/dev/null || fail "finding Go (needed once, to build kustomize $VERSION)"
  printf '[kustomize] building sigs.k8s.io/kustomize/kustomize/v5@%s (once)...\n' "$VERSION" >&2
  mkdir -p "$DIR"
  log=$(mktemp)
  # The module sources go to a temporary GOPATH, removed afterwards: only the binary is kept (the jest
  # runs crawl the repository, .cache/ included).
  gopath=$(mktemp -d)
  if ! GOTOOLCHAIN=local GOFLAGS=-modcacherw GOPATH="$gopath" GOBIN="$DIR" \
      go install "sigs.k8s.io/kustomize/kustomize/v5@$VERSION" >"$log" 2>&1; then
    tail -20 "$log" >&2
    rm -rf "$log" "$gopath"
    fail "go install sigs.k8s.io/kustomize/kustomize/v5@$VERSION (log above)"
  fi
  rm -rf "$log" "$gopath"
fi

case "${1:-}" in
  path) echo "$BIN" ;;
  build) shift; exec "$BIN" build "$@" ;;
  *) echo "usage: bash deploy/k8s/kustomize.sh path | build <dir>" >&2; exit 2 ;;
esac
