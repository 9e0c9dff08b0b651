#!/usr/bin/env bash
# One lab job's step (lab.yml runs it once per matrix): `cargo xtask lab run`, stopped with SIGINT at a deadline
# set well before the job's own limit. On SIGINT the lab stops its services and exits 130; the records it wrote
# are kept, so a run cut off by the deadline is a partial result, not a lost one (a GitHub job timeout kills the
# process tree about 10 s after its SIGINT, and what happens to later steps is not dependable).
#
# Writes run_id, status (the lab's exit status) and stopped (deadline or empty) to $GITHUB_OUTPUT and to
# $STATUS_DIR/<matrices>.env for the merge job. Exits 0 whenever the lab wrote a run directory, whatever its status
# (the merge job reports it, and the workflow fails on it at the end); 1 when it wrote none.
#
# Environment: MATRICES (space-separated, empty for all), PROFILE (budget, quick, standard or seed), BUDGET (with
# PROFILE=budget, e.g. 45m), LAB_ENV (auto, native or docker), DEADLINE_S (seconds before SIGINT), OUT (the results
# directory, default results), STATUS_DIR (default lab-status), LAB_ARGS (more `lab run` arguments, one per
# line), XTASK (the command that runs xtask, default `cargo xtask`).
set -euo pipefail

: "${PROFILE:=budget}" "${BUDGET:=45m}" "${LAB_ENV:=auto}" "${OUT:=results}" "${STATUS_DIR:=lab-status}"
: "${DEADLINE_S:?DEADLINE_S must give the seconds before the lab is sent SIGINT, e.g. 18000 for 300 minutes}"
case "$DEADLINE_S" in '' | *[!0-9]*)
  echo "DEADLINE_S=$DEADLINE_S: expected a whole number of seconds, e.g. 18000" >&2
  exit 2
  ;;
esac
read -r -a xtask <<<"${XTASK:-cargo xtask}"

args=(lab run --env "$LAB_ENV" --out "$OUT")
case "$PROFILE" in
  budget) args+=(--budget "$BUDGET") ;;
  quick | standard | seed) args+=(--profile "$PROFILE") ;;
  *)
    echo "PROFILE=$PROFILE: expected budget, quick, standard or seed" >&2
    exit 2
    ;;
esac
read -r -a matrices <<<"${MATRICES:-}"
for m in "${matrices[@]}"; do args+=(--matrix "$m"); done
if [ -n "${LAB_ARGS:-}" ]; then
  mapfile -t extra <<<"$LAB_ARGS"
  args+=("${extra[@]}")
fi

mkdir -p "$OUT" "$STATUS_DIR"
runs() { find "$OUT" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort; }
before="$(runs)"
started=$SECONDS
status=0
# --preserve-status: the lab's own exit status (130 after SIGINT), not timeout's 124. --foreground: SIGINT goes to the
# lab alone, once (without it timeout signals the lab and then its process group, and a second SIGINT means "exit
# now"); the lab stops its own services and tasks.
timeout --foreground --signal=INT --kill-after=120 --preserve-status "$DEADLINE_S" "${xtask[@]}" "${args[@]}" || status=$?
stopped=""
killed=""
# At the deadline the lab exits 130 after its SIGINT; one still stopping 120 s later is killed (137): a deadline stop
# too, not a failure of its own.
if [ $((SECONDS - started)) -ge "$DEADLINE_S" ]; then
  case "$status" in
    130) stopped=deadline ;;
    137) stopped=deadline killed=yes ;;
  esac
fi
run_id="$(comm -13 <(echo "$before") <(runs) | tail -n 1)"

name="$(IFS=-; echo "${matrices[*]:-all}")"
{
  echo "run_id=$run_id"
  echo "status=$status"
  echo "stopped=$stopped"
} | tee "$STATUS_DIR/$name.env" >>"${GITHUB_OUTPUT:-/dev/null}"

if [ -z "$run_id" ]; then
  echo "::error::the lab wrote no run under $OUT/ (lab run exited with status $status)"
  exit 1
fi
if [ -n "$killed" ]; then
  echo "::warning::the lab reached its ${DEADLINE_S} s deadline and was still stopping 120 s after its SIGINT, so it was killed; $OUT/$run_id keeps what it recorded (status $status)"
elif [ -n "$stopped" ]; then
  echo "::warning::the lab reached its ${DEADLINE_S} s deadline and was stopped; $OUT/$run_id keeps what it recorded (status $status)"
elif [ "$status" -ne 0 ]; then
  echo "::error::lab run exited with status $status; $OUT/$run_id is still kept and proposed, marked as a run with failures"
fi
