#!/usr/bin/env bash
# The lab workflow's proposal (lab.yml's `propose` job): the merge job's new runs, and nothing else, on one new branch
# off the remote's main, for a pull request a person merges. Results are additive: the branch adds results/<run-id>/
# for each run in $PR_DIR/runs.txt and changes no other file; a run main already holds is refused; nothing is pushed
# to main or over an existing branch. So a merge can never revert an edit made on main since (a `lab migrate`, a
# withdrawn run), and a run nobody merged never rides in with the next one. Prints the branch and writes
# `branch=<name>` to $GITHUB_OUTPUT.
#
# Usage: lab-propose.sh REMOTE   (a remote name or URL: main is read from it, the branch pushed to it)
# Environment: PR_DIR (default lab-pr: runs.txt, title.txt and results/<run-id>/ as lab-merge.sh writes them),
# BRANCH_PREFIX (default lab/run-), GITHUB_OUTPUT (optional).
set -euo pipefail

remote="${1:?usage: lab-propose.sh REMOTE}"
: "${PR_DIR:=lab-pr}" "${BRANCH_PREFIX:=lab/run-}"
fail() {
  echo "::error::$1" >&2
  exit 1
}

mapfile -t runs <"$PR_DIR/runs.txt"
[ "${#runs[@]}" -gt 0 ] || fail "$PR_DIR/runs.txt names no run"
for run in "${runs[@]}"; do
  [[ "$run" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || fail "$PR_DIR/runs.txt: \"$run\" is not a run id"
  [ -d "$PR_DIR/results/$run" ] || fail "$PR_DIR/results/$run is missing: lab-merge.sh copies each run it lists there"
done
branch="$BRANCH_PREFIX${runs[0]}"
if git ls-remote --exit-code --heads "$remote" "refs/heads/$branch" >/dev/null; then
  fail "the branch $branch exists already: a proposal never replaces another"
fi

git fetch -q "$remote" main
base="$(git rev-parse FETCH_HEAD)"
work="$(mktemp -d)"
# shellcheck disable=SC2317,SC2329 # called by the trap (0.9 and 0.11 name it differently)
cleanup() {
  git worktree remove --force "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add -q --detach "$work" "$base"
for run in "${runs[@]}"; do
  [ ! -e "$work/results/$run" ] || fail "results/$run is on main already: a run is added once and never replaced"
  mkdir -p "$work/results"
  cp -r "$PR_DIR/results/$run" "$work/results/$run"
  git -C "$work" add -- "results/$run"
done

# Every change is a file added under one of the new runs' directories.
while IFS=$'\t' read -r status path; do
  owned=false
  for run in "${runs[@]}"; do
    case "$path" in "results/$run/"*) owned=true ;; esac
  done
  if [ "$status" != A ] || [ "$owned" != true ]; then
    fail "the proposal would change $path ($status): it only adds its runs"
  fi
done < <(git -C "$work" diff --cached --name-status --no-renames "$base")

git -C "$work" -c user.name="streamlab lab" -c user.email="lab@streamlab.invalid" \
  commit -q -m "results: $(head -n 1 "$PR_DIR/title.txt")"
git -C "$work" push -q "$remote" "HEAD:refs/heads/$branch"
echo "branch=$branch" >>"${GITHUB_OUTPUT:-/dev/null}"
echo "$branch"
