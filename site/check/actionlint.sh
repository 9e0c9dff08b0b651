#!/usr/bin/env bash
# Lint .github/workflows with actionlint (it runs shellcheck on `run:` scripts when shellcheck is installed).
# Install: go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12   (optional: apt-get install shellcheck)
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="$(command -v actionlint || true)"
if [ -z "$bin" ] && command -v go >/dev/null 2>&1; then
  gobin="$(go env GOBIN)"
  [ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
  if [ -x "$gobin/actionlint" ]; then bin="$gobin/actionlint"; fi
fi
if [ -z "$bin" ]; then
  echo "actionlint is not installed; install it with:" >&2
  echo "  go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12" >&2
  exit 1
fi

"$bin" -no-color .github/workflows/*.yml
echo "actionlint: workflows ok ($("$bin" -version | head -n 1))"
