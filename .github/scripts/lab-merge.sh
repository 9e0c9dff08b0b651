#!/usr/bin/env bash
# The lab workflow's merge (lab.yml's `merge` job): the matrix jobs' run directories, downloaded side by side into
# results/, and their lab-status/*.env files become one proposal: the site is built from the merged results/ (so a
# run that breaks it is caught before the pull request), each run is compared with the newest comparable committed
# run, the verdicts on each run's machine are listed, and the pull request's title and body are written to $PR_DIR
# (title.txt, body.md, runs.txt), with a copy of the new runs under $PR_DIR/results/ for the job that opens it. The body is
# capped by lines and bytes, well under GitHub's 65,536 characters. Exits 1 when no matrix job wrote a run.
#
# Environment: OUT (the results directory, default results), STATUS_DIR (default lab-status), PR_DIR (default
# lab-pr), PROFILE (for the title), SITE_OUT (default target/site), XTASK (default `cargo xtask`), RUN_URL (the
# workflow run, for the body), PLANNED (the plan job's JSON array of the matrix jobs' matrices: a job that wrote no
# status is named as failed).
set -euo pipefail

: "${OUT:=results}" "${STATUS_DIR:=lab-status}" "${PR_DIR:=lab-pr}" "${PROFILE:=budget}" "${SITE_OUT:=target/site}"
read -r -a xtask <<<"${XTASK:-cargo xtask}"
max_lines=400
max_bytes=60000
mkdir -p "$PR_DIR"
body="$PR_DIR/body.md"
: >"$PR_DIR/runs.txt"

# One line per matrix job: what it ran and how it ended.
jobs="$(mktemp)"
marked=false
partial=false
for f in "$STATUS_DIR"/*.env; do
  [ -e "$f" ] || continue
  run_id="$(sed -n 's/^run_id=//p' "$f")"
  status="$(sed -n 's/^status=//p' "$f")"
  stopped="$(sed -n 's/^stopped=//p' "$f")"
  name="$(basename "$f" .env)"
  how="exit status $status"
  if [ -n "$stopped" ]; then how+=", stopped at its deadline (a partial run)"; fi
  # A deadline stop is a partial run, proposed as one; any other non-zero exit is a failure.
  if [ -n "$stopped" ]; then partial=true; elif [ "$status" != 0 ]; then marked=true; fi
  if [ -z "$run_id" ]; then
    echo "- \`$name\`: no run written ($how)" >>"$jobs"
    marked=true
    continue
  fi
  [ -d "$OUT/$run_id" ] || { echo "$f names $run_id, which is not under $OUT/" >&2; exit 1; }
  echo "$run_id" >>"$PR_DIR/runs.txt"
  mkdir -p "$PR_DIR/results"
  cp -r "$OUT/$run_id" "$PR_DIR/results/"
  echo "- \`$name\`: \`$OUT/$run_id/\`, $how" >>"$jobs"
done
# A planned job that left no status failed before the lab ran (or before its upload): it is named, and marks the run.
if [ -n "${PLANNED:-}" ]; then
  while IFS= read -r entry; do
    read -r -a planned_matrices <<<"$entry"
    name="$(IFS=-; echo "${planned_matrices[*]:-all}")"
    if [ ! -e "$STATUS_DIR/$name.env" ]; then
      echo "- \`$name\`: no status: the job failed before the lab ran, or before it uploaded (see the workflow run)" >>"$jobs"
      marked=true
    fi
  done < <(jq -r '.[]' <<<"$PLANNED")
fi
if [ ! -s "$PR_DIR/runs.txt" ]; then
  echo "::error::no matrix job wrote a run (nothing in $STATUS_DIR/ names one)"
  cat "$jobs" >&2
  exit 1
fi

# Every record that failed or failed its integrity check, as "file line N: bench / arm / variant rep N: reason".
failed="$(mktemp)"
while read -r run_id; do
  for f in "$OUT/$run_id"/*.jsonl; do
    [ -e "$f" ] || continue
    jq -rs --arg f "$f" '
      to_entries[]
      | .key as $i | .value
      | select(.status == "failed" or .integrity.status == "failed")
      | "- `\($f)` line \($i + 1): \(.bench) / \(.arm) / \(.variant.label) rep \(.rep): "
        + ([if .status == "failed" then "failed" else empty end,
            if .integrity.status == "failed" then "integrity failed" else empty end] | join(", "))
        + (if .reason then ": " + (.reason | gsub("[\r\n]+"; " ") | .[0:200]) else "" end)
    ' "$f" >>"$failed" || echo "- \`$f\`: jq could not read it" >>"$failed"
  done
done <"$PR_DIR/runs.txt"
if [ -s "$failed" ]; then marked=true; fi

# The site builds from the merged results/ (pages.yml publishes it once the pull request is merged).
"${xtask[@]}" site build --results "$OUT" --out "$SITE_OUT"

{
  if [ "$marked" = true ]; then
    echo "**This lab run has failures**: a matrix job exited non-zero or wrote no run, or records failed."
    echo
  elif [ "$partial" = true ]; then
    echo "**A partial run**: a matrix job reached its deadline; the records it wrote are here, the points it did not"
    echo "reach have none (a later run fills them in)."
    echo
  fi
  echo "Lab results from a \`$PROFILE\` run, one job per matrix on GitHub-hosted runners${RUN_URL:+ ([workflow run]($RUN_URL))}:"
  echo
  cat "$jobs"
  if [ -s "$failed" ]; then
    echo
    echo "Failed records ($(wc -l <"$failed"); each record's \`reason\` and \`log_tail\` say more):"
    echo
    head -n 40 "$failed"
    if [ "$(wc -l <"$failed")" -gt 40 ]; then echo "- ... and $(($(wc -l <"$failed") - 40)) more"; fi
  fi
  while read -r run_id; do
    echo
    echo "The verdicts on the machine of \`$run_id\`, its committed runs and this one pooled (\`cargo xtask lab verdicts --run $run_id\`):"
    echo
    echo '```'
    "${xtask[@]}" lab verdicts --brief --results "$OUT" --run "$run_id" 2>&1 | head -n 60 ||
      echo "(lab verdicts exited non-zero)"
    echo '```'
    echo
    echo "Against the newest comparable committed run (\`cargo xtask lab compare newest $run_id\`):"
    echo
    echo '```'
    "${xtask[@]}" lab compare newest "$OUT/$run_id" --fail-on-regression 10 2>&1 | head -n 60 ||
      echo "(lab compare exited non-zero: a regression beyond 10%, or no comparable run)"
    echo '```'
  done <"$PR_DIR/runs.txt"
  echo
  echo "Check each run's \`provenance.json\` (hardware, runner, versions, pins) before merging: a hosted runner is"
  echo "its own series, a different machine from the seeds'. Merging rebuilds and publishes the site."
} >"$body.full"

# Capped by lines, then bytes: the cut says so, and the full text is in the workflow's artifacts.
head -n "$max_lines" "$body.full" | head -c "$max_bytes" >"$body"
if ! cmp -s "$body" "$body.full"; then
  printf '\n\n(cut at %s lines or %s bytes: the full text is in the lab-pr artifact)\n' "$max_lines" "$max_bytes" >>"$body"
fi
runs="$(wc -l <"$PR_DIR/runs.txt")"
title="Lab results: $runs run(s), $PROFILE"
if [ "$marked" = true ]; then
  title="lab run with failures: $title"
elif [ "$partial" = true ]; then
  title="partial lab run (deadline): $title"
fi
echo "$title" >"$PR_DIR/title.txt"
echo "marked=$marked" >>"${GITHUB_OUTPUT:-/dev/null}"
rm -f "$jobs" "$failed"
echo "$title"
