#!/bin/bash
# Log capture cost: two workers each writing BYTES of text lines, through plaunch (into workerlog.N) vs the same
# programs redirected to files by the shell; prints the wall-time ratio. See docs/benchmarks.md.
# Usage: scripts/bench-logs.sh [RUNS]   (rounds, default 5)
#   BENCH_LOG_BYTES=N       bytes per worker (default 268435456, 256 MiB)
#   BENCH_PLAUNCH_OLD=FILE  also measure another plaunch build in the same rounds (e.g. one built at 341d267)
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

RUNS=${1:-5}
BYTES=${BENCH_LOG_BYTES:-268435456}
OLD=${BENCH_PLAUNCH_OLD:-}
bench_positive_int RUNS "$RUNS"
bench_positive_int BENCH_LOG_BYTES "$BYTES"
if [ -n "$OLD" ] && { OLD=$(realpath -- "$OLD" 2>/dev/null) || true; [ ! -x "$OLD" ]; }; then
    echo "bench: BENCH_PLAUNCH_OLD=${BENCH_PLAUNCH_OLD} is not an executable" >&2
    exit 2
fi
bench_setup
ROWS=(files plaunch tee0)
if [ -n "$OLD" ]; then
    cp "$OLD" "$BENCH_TMP/plaunch-old"
    ROWS+=(old oldtee0)
fi

# The worker: text lines through stdio, as a training script's logging would write them.
write_worker() {
    cat >"$BENCH_TMP/lines.c" <<'EOF'
/* bench-logs worker: writes argv[1] bytes of text lines to stdout through stdio. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    long long want = atoll(argv[1]), done = 0;
    const char *rank = getenv("RANK");
    static char buf[1 << 16];
    char line[160];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    for (long long i = 0; done < want; i++) {
        int n = snprintf(line, sizeof line, "rank %s step %lld loss %.6f lr %.6f throughput %lld samples/s\n",
                         rank ? rank : "0", i, 1.0 / (double)(i + 1), 0.001, 1000 + i % 977);
        if (done + n > want)
            n = (int)(want - done);
        fwrite(line, 1, (size_t)n, stdout);
        done += n;
    }
    return fflush(stdout) != 0;
}
EOF
    cc -O2 -o "$BENCH_TMP/lines" "$BENCH_TMP/lines.c"
}

# row_cmd ROW DIR: the command of ROW, writing under DIR (into the CMD array).
row_cmd() {
    local w=$BENCH_TMP/lines
    case $1 in
    files) CMD=(bash -c 'RANK=0 "$1" "$2" >"$3/a" & RANK=1 "$1" "$2" >"$3/b" & wait' files "$w" "$BYTES" "$2") ;;
    plaunch) CMD=("$PLAUNCH" --nproc-per-node 2 --tee none --quiet --log-dir "$2/logs" "$w" "$BYTES") ;;
    tee0) CMD=("$PLAUNCH" --nproc-per-node 2 --console-ranks 0 --quiet --log-dir "$2/logs" "$w" "$BYTES") ;;
    old) CMD=("$BENCH_TMP/plaunch-old" --nproc-per-node 2 --tee none --quiet --log-dir "$2/logs" "$w" "$BYTES") ;;
    oldtee0) CMD=("$BENCH_TMP/plaunch-old" --nproc-per-node 2 --tee 0 --quiet --log-dir "$2/logs" "$w" "$BYTES") ;;
    esac
}

# measure ROW RUN: one run in a fresh directory (files removed outside the timing); appends its wall ms.
measure() {
    local row=$1 dir=$BENCH_TMP/$1.$2 rc=0 got
    mkdir -p "$dir"
    row_cmd "$row" "$dir"
    sync
    bench_run "$BENCH_TMP/$row.out" "${CMD[@]}" || rc=$?
    [ "$rc" = 0 ] || bench_fail_run "$row" "$BENCH_TMP/$row.out" "$rc"
    # Every byte must be there: the files row as written, the plaunch rows after each log's marker line.
    if [ "$row" = files ]; then got=$(cat "$dir/a" "$dir/b" | wc -c); else got=$(tail -q -n +2 "$dir"/logs/workerlog.[01] | wc -c); fi
    if [ "$got" != $((2 * BYTES)) ]; then
        echo "bench: $row run $2 captured $got bytes, not $((2 * BYTES))" >&2
        bench_fail_run "$row" "$BENCH_TMP/$row.out" "$rc"
    fi
    bench_ms_between "$BENCH_T0" "$BENCH_T1" >>"$BENCH_TMP/$row.ms"
    rm -rf "$dir"
}

run_all() {
    local i j
    for row in "${ROWS[@]}"; do measure "$row" warmup; done
    for row in "${ROWS[@]}"; do : >"$BENCH_TMP/$row.ms"; done
    for ((i = 0; i < RUNS; i++)); do
        for ((j = 0; j < ${#ROWS[@]}; j++)); do
            measure "${ROWS[(i + j) % ${#ROWS[@]}]}" "$i"
        done
        printf '\rround %d/%d' $((i + 1)) "$RUNS" >&2
    done
    printf '\r%*s\r' 20 '' >&2
}

# cpu_pass: the launcher's own CPU time (task-clock of the plaunch process alone, not its workers), 3 runs per
# plaunch row after the timed rounds; load on the machine hardly changes it. Needs perf; skipped without it.
cpu_pass() {
    local row dir i
    command -v perf >/dev/null 2>&1 || return 0
    for row in "${ROWS[@]}"; do
        [ "$row" != files ] || continue
        : >"$BENCH_TMP/$row.cpu"
        for i in 1 2 3; do
            dir=$BENCH_TMP/$row.cpu$i
            mkdir -p "$dir"
            row_cmd "$row" "$dir"
            perf stat --no-inherit -x, -e task-clock -o "$dir/perf" "${CMD[@]}" >/dev/null 2>&1 ||
                bench_fail_run "$row (under perf)" "$dir/perf" 1
            awk -F, '/task-clock/ { printf "%.1f\n", $1 }' "$dir/perf" >>"$BENCH_TMP/$row.cpu"
            rm -rf "$dir"
        done
    done
}

report() {
    local row med min p90 floor ratio cpu label
    bench_header "bench-logs $RUNS runs: 2 workers x $BYTES bytes of lines"
    printf '%-34s %10s %10s %10s %10s %12s\n' "" "median ms" "min ms" "p90 ms" "x files" "own CPU ms"
    floor=$(bench_stats "$BENCH_TMP/files.ms" | cut -d' ' -f1)
    for row in "${ROWS[@]}"; do
        read -r med min p90 _ < <(bench_stats "$BENCH_TMP/$row.ms")
        case $row in
        files) label="files (shell redirection)" ;;
        plaunch) label="plaunch --tee none" ;;
        tee0) label="plaunch --tee 0 (console: a file)" ;;
        old) label="plaunch --tee none, OLD build" ;;
        oldtee0) label="plaunch --tee 0, OLD build" ;;
        esac
        cpu=-
        [ ! -s "$BENCH_TMP/$row.cpu" ] || cpu=$(bench_stats "$BENCH_TMP/$row.cpu" | cut -d' ' -f1)
        printf '%-34s %10s %10s %10s %10s %12s\n' "$label" "$med" "$min" "$p90" "$(bench_div "$med" "$floor")" "$cpu"
    done
    ratio=$(bench_div "$(bench_stats "$BENCH_TMP/plaunch.ms" | cut -d' ' -f1)" "$floor")
    echo "target: plaunch --tee none <= 1.14 x files: $(bench_verdict "$ratio <= 1.14") ($ratio)" \
        "   aim <= 1.05: $(bench_verdict "$ratio <= 1.05")"
}

write_worker
run_all
cpu_pass
report
