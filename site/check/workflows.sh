#!/usr/bin/env bash
# Lint .github/: actionlint, with shellcheck over every `run:` script, then zizmor (offline audits) over the
# workflows and dependabot.yml, failing on any finding above zizmor's low severity; then shellcheck over the
# scripts the workflows run. The pinned versions are what .ci/run installs:
#   actionlint: go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
#   its shell linter: apt-get install shellcheck
#   zizmor:     pip install zizmor==1.33.1 (into the virtualenv .ci/run makes under ~/.cache/streamlab)
set -euo pipefail
cd "$(dirname "$0")/../.."

missing() {
  echo "$1 is not installed; .ci/run installs it, or: $2" >&2
  exit 1
}

actionlint="$(command -v actionlint || true)"
if [ -z "$actionlint" ] && command -v go >/dev/null 2>&1; then
  gobin="$(go env GOBIN)"
  [ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
  if [ -x "$gobin/actionlint" ]; then actionlint="$gobin/actionlint"; fi
fi
[ -n "$actionlint" ] || missing actionlint "go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"
# Without shellcheck actionlint skips the scripts silently: a lint that cannot fail.
command -v shellcheck >/dev/null || missing shellcheck "apt-get install shellcheck"
zizmor="$(command -v zizmor || true)"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/streamlab/zizmor-1.33.1"
if [ -z "$zizmor" ] && [ -x "$venv/bin/zizmor" ]; then zizmor="$venv/bin/zizmor"; fi
[ -n "$zizmor" ] || missing zizmor "python3 -m venv $venv && $venv/bin/pip install zizmor==1.33.1"

"$actionlint" -no-color .github/workflows/*.yml
echo "actionlint: workflows ok ($("$actionlint" -version | head -n 1), $(shellcheck --version | sed -n 's/^version: /shellcheck /p'))"
"$zizmor" --offline --no-progress --min-severity medium .github/
echo "zizmor: nothing above low ($("$zizmor" --version))"
shellcheck .github/scripts/*.sh .ci/run site/check/*.sh
echo "shellcheck: the workflows' scripts ok"
