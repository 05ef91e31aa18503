#!/usr/bin/env bash
# Run the Beam conformance suite against a runner's job server, as any CI can call it.
#
#   TARGET_NAME=my-runner ENDPOINT=grpc://localhost:8099 examples/ci/conformance.sh
#
# Settings (environment variables):
#   TARGET_NAME     the runner's column name in results and matrix (required)
#   ENDPOINT        grpc://HOST:PORT of a job server that is already running, or
#   JOB_SERVER_CMD  a command starting one, with {port} where its port goes (the suite stops it)
#   EXPECTATIONS    the runner's known failures (default conformance/expectations/$TARGET_NAME.yaml;
#                   without that file every case must pass: make it with `beam-conformance baseline`)
#   PREVIOUS        results to compare with (a results file or a directory of them, e.g. the main
#                   branch's last run): writes diff.md and diff.json, and a regression fails the script
#   OUT_DIR         where results, JUnit XML, the matrix and the diff go (default conformance-reports)
#   ENVIRONMENT_TYPE, WORKER_POOL_HOST
#                   SDK workers: LOOPBACK (default) or EXTERNAL with the address of this machine as the
#                   job server sees it (a job server in a container; see the kit's docs/testing-your-runner.md)
#   WORKERS         pytest-xdist workers (default auto)
#   PYTEST_ARGS     more pytest arguments, e.g. '-m "not streaming" --case-timeout 120'
#   BEAM_CONFORMANCE  the beam-conformance command (default: beam-conformance on PATH)
#
# Exit status: the suite's (1 on a regression against the expectations or an unexpected pass,
# 3 if the job server cannot be reached), else 1 if the diff against PREVIOUS has a regression.
set -uo pipefail

: "${TARGET_NAME:?set TARGET_NAME to the column name of the runner}"
OUT_DIR=${OUT_DIR:-conformance-reports}
BEAM_CONFORMANCE=${BEAM_CONFORMANCE:-beam-conformance}
EXPECTATIONS=${EXPECTATIONS:-conformance/expectations/$TARGET_NAME.yaml}
if [ -n "${ENDPOINT:-}" ]; then
    target=("$ENDPOINT")
    server=()
elif [ -n "${JOB_SERVER_CMD:-}" ]; then
    target=(grpc)
    server=(--job-server-cmd "$JOB_SERVER_CMD")
else
    echo "conformance.sh: set ENDPOINT (grpc://HOST:PORT) or JOB_SERVER_CMD" >&2
    exit 2
fi
if [ ! -f "$EXPECTATIONS" ]; then
    echo "conformance.sh: no $EXPECTATIONS: every case must pass. After a first run," \
         "'$BEAM_CONFORMANCE baseline $OUT_DIR/results-<name>.json -o $EXPECTATIONS' records its failures." >&2
    EXPECTATIONS=none
fi
workers=()
[ -n "${ENVIRONMENT_TYPE:-}" ] && workers+=(--environment-type "$ENVIRONMENT_TYPE")
[ -n "${WORKER_POOL_HOST:-}" ] && workers+=(--worker-pool-host "$WORKER_POOL_HOST")
extra=()
[ -n "${PYTEST_ARGS:-}" ] && eval "extra=($PYTEST_ARGS)"
previous=()
[ -n "${PREVIOUS:-}" ] && [ -e "$PREVIOUS" ] && previous=(--previous "$PREVIOUS")

mkdir -p "$OUT_DIR"
# results-<name>.json, junit-<name>.xml and capability-matrix.{html,md,json,yaml} in OUT_DIR
"$BEAM_CONFORMANCE" run --target "${target[0]}" --workers "${WORKERS:-auto}" \
    --results-dir "$OUT_DIR" --out "$OUT_DIR" "${previous[@]}" -- \
    --target-name "$TARGET_NAME" --expectations "$EXPECTATIONS" "${server[@]}" "${workers[@]}" "${extra[@]}"
suite=$?

diff=0
results="$OUT_DIR/results-${TARGET_NAME//[^A-Za-z0-9_.-]/-}.json"   # the file name the suite gives it
if [ -n "${PREVIOUS:-}" ] && [ -e "$PREVIOUS" ] && [ -f "$results" ]; then
    "$BEAM_CONFORMANCE" diff "$PREVIOUS" "$results" --markdown "$OUT_DIR/diff.md" --json "$OUT_DIR/diff.json" >/dev/null
    diff=$?
    echo "conformance.sh: diff against $PREVIOUS in $OUT_DIR/diff.md (exit $diff)"
elif [ -n "${PREVIOUS:-}" ]; then
    echo "conformance.sh: no previous results at $PREVIOUS: nothing to compare" >&2
fi
echo "conformance.sh: matrix $OUT_DIR/capability-matrix.html, JUnit XML in $OUT_DIR (suite exit $suite)"
[ "$suite" -ne 0 ] && exit "$suite"
exit "$diff"
