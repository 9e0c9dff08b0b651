#!/usr/bin/env bash
# Runs the workflows' jobs on this machine with nektos/act, as far as anything here can run them: lab.yml (plan, one
# matrix's run job stopped at a short deadline, merge, propose) and pages.yml (build, deploy). Every pinned action
# comes from ../shared/actions (act's --local-repository), those that need GitHub's services or lack their bundle from
# the stand-ins in .github/rehearsal/ (its README lists each and why). Jobs run on the host (-self-hosted), from a
# fresh clone of this checkout's HEAD (act copies it into its own workspace), so nothing here writes into the working
# tree. act's cache server stays off (the caches are stand-ins): no server binds anything but what the lab binds.
#
# Usage: .github/scripts/rehearse.sh [lab|pages|all]   (default all)
# Environment: ACT (the act binary; default act on PATH, else $(go env GOPATH)/bin/act; install it with
# `go install github.com/nektos/act@v0.2.89`), SHARED_ACTIONS (default ../shared/actions), REHEARSAL_DIR (default a
# new temporary directory; artifacts, the pull request it would open, the logs), DEADLINE_S (the run job's deadline,
# default 300: the build in act's workspace, then a few tasks), MATRICES (default kafka_sink), REHEARSAL_TARGET_DIR (the jobs' cargo target directory, default
# ~/.cache/streamlab/rehearsal-target: its own, since act's workspace is another checkout and cargo's artifacts of
# two checkouts in one directory overwrite each other). act's per-job workspaces are removed at the end.
set -euo pipefail

what="${1:-all}"
repo="$(git rev-parse --show-toplevel)"
shared="$(cd "${SHARED_ACTIONS:-$repo/../shared/actions}" && pwd)"
act_bin="${ACT:-$(command -v act || echo "$(go env GOPATH)/bin/act")}"
[ -x "$act_bin" ] || { echo "no act: go install github.com/nektos/act@v0.2.89 (or set ACT)" >&2; exit 2; }
dir="${REHEARSAL_DIR:-$(mktemp -d /tmp/rehearsal-XXXXXX)}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
clone="$dir/clone"
rm -rf "$clone"
git clone -q "$repo" "$clone"

# Every pinned action from the stored copies; the stand-ins for those that cannot run here.
maps=()
while read -r action; do
  local_dir="$shared/$action"
  case "${action%@*}" in
    actions/upload-artifact | actions/download-artifact | actions/upload-pages-artifact | actions/deploy-pages | \
      actions/create-github-app-token | peter-evans/create-pull-request | actions/setup-node | Swatinem/rust-cache | \
      actions/cache)
      # The stand-in's folder is the action's name without its owner (actions/cache -> cache).
      name="${action%@*}"
      local_dir="$clone/.github/rehearsal/${name#*/}"
      ;;
  esac
  maps+=(--local-repository "$action=$local_dir")
done < <(grep -rhoE 'uses: [A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?@[0-9a-f]{40}' "$clone/.github/workflows" |
  sed -E 's/^uses: ([^/]+\/[^/@]+)(\/[^@]+)?@/\1@/' | sort -u)

# The jobs' `sudo` steps change the machine they run on (apt-get, purging MySQL, rm -rf of the runner's spare
# directories): on this host they are skipped and listed, never run. What they install is what .ci/run installs.
mkdir -p "$dir/bin"
cat >"$dir/bin/sudo" <<'SUDO'
#!/bin/sh
echo "rehearsal: not run on the host: sudo $*" | tee -a "$REHEARSAL_DIR/skipped-on-host.txt" >&2
SUDO
# gh: the pull request the propose job opens is written down and numbered; a workflow it dispatches is written down.
cat >"$dir/bin/gh" <<'GH'
#!/bin/sh
echo "gh $*" >>"$REHEARSAL_DIR/gh.log"
case "$1 $2" in "pr create") echo "https://github.com/rehearsal/streamlab/pull/1" ;; esac
GH
# rustup: the jobs install Rust 1.95 and make it the default, which would change the host's default toolchain (the
# host's own 1.95 runs them instead); anything else goes to the real rustup.
cat >"$dir/bin/rustup" <<RUSTUP
#!/bin/sh
case "\$1" in
  toolchain | default) echo "rehearsal: not run on the host: rustup \$*" | tee -a "\$REHEARSAL_DIR/skipped-on-host.txt" >&2 ;;
  *) exec "$(command -v rustup)" "\$@" ;;
esac
RUSTUP
chmod +x "$dir/bin/sudo" "$dir/bin/gh" "$dir/bin/rustup"
# GitHub's repository, for the propose job's push: a bare copy of this checkout's, which gains its branch.
rm -rf "$dir/origin.git"
git clone -q --bare "$repo" "$dir/origin.git"

common=(
  -P ubuntu-24.04=-self-hosted --action-offline-mode --no-cache-server
  --env "REHEARSAL_DIR=$dir" --env "PATH=$dir/bin:$PATH" --env "LAB_REMOTE=$dir/origin.git"
  --env "CARGO_TARGET_DIR=${REHEARSAL_TARGET_DIR:-$HOME/.cache/streamlab/rehearsal-target}"
  --var "LAB_DEADLINE_S=${DEADLINE_S:-300}"
  "${maps[@]}"
)

# act copies the checkout into ~/.cache/act/<hash>/ for each job: those it adds are removed when this exits.
act_home="$HOME/.cache/act"
mkdir -p "$act_home"
before="$(ls "$act_home")"
# shellcheck disable=SC2317,SC2329 # called by the trap (0.9 and 0.11 name it differently)
cleanup() {
  for d in "$act_home"/*; do
    [ -e "$d" ] || continue
    grep -qxF "$(basename "$d")" <<<"$before" || rm -rf "$d"
  done
}
trap cleanup EXIT

status=0
cd "$clone"
if [ "$what" = lab ] || [ "$what" = all ]; then
  "$act_bin" workflow_dispatch -W .github/workflows/lab.yml "${common[@]}" \
    --input profile=quick --input "matrices=${MATRICES:-kafka_sink}" --input env=native 2>&1 |
    tee "$dir/lab.log" || status=$?
fi
if [ "$what" = pages ] || [ "$what" = all ]; then
  "$act_bin" workflow_dispatch -W .github/workflows/pages.yml "${common[@]}" 2>&1 | tee "$dir/pages.log" || status=$?
fi
echo "rehearsal: logs, artifacts and the pull request it would open under $dir"
exit "$status"
