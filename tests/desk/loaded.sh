#!/bin/sh
# The dispatch desk's plans under valgrind on a loaded machine (issue 18,
# item 9): one busy loop per core runs while the desk runs RUNS times in a
# row under memcheck (the plain command with share/rcip/rcip.supp) with the
# main plan, then once with tests/desk/slow-agent.jsonl. Every run must meet
# every expectation of its plan and exit 0.
#
# Usage: loaded.sh DESK CATALOG PLAN [RUNS]   (RUNS default 3)
set -eu

DESK=$1
CATALOG=$2
PLAN=$3
RUNS=${4:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d)
CORES=$(nproc 2>/dev/null || echo 2)

pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# The load: bounded in time even if this script is killed hard.
i=0
while [ "$i" -lt "$CORES" ]; do
    timeout 900 sh -c 'while :; do :; done' &
    pids="$pids $!"
    i=$((i + 1))
done

run=1
while [ "$run" -le "$RUNS" ]; do
    plans=$PLAN
    [ "$run" -eq "$RUNS" ] && plans="$PLAN $ROOT/tests/desk/slow-agent.jsonl"
    for plan in $plans; do
        start=$(date +%s)
        if ! valgrind -q --leak-check=full --error-exitcode=1 --suppressions="$ROOT/share/rcip/rcip.supp" \
            "$DESK" --catalog "$CATALOG" --plan "$plan" >"$TMP/out" 2>&1; then
            tail -n 40 "$TMP/out"
            echo "FAIL run $run of $RUNS, $(basename "$plan"), with $CORES busy loops"
            exit 1
        fi
        grep -q "steps went as the plan expected" "$TMP/out" || { tail -n 20 "$TMP/out"; echo "FAIL run $run: no summary"; exit 1; }
        echo "ok   run $run of $RUNS: $(basename "$plan") under valgrind with $CORES busy loops ($(($(date +%s) - start)) s)"
    done
    run=$((run + 1))
done
