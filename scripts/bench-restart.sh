#!/bin/bash
# Restart latency: 4 workers, rank 1 fails in generation 0; ms from its exit to the first generation-1 worker running (plaunch vs torchrun).
# Usage: scripts/bench-restart.sh [RUNS]   (RUNS per launcher, default 10; see docs/benchmarks.md)
#   BENCH_OTHER=FILE adds a second plaunch to the same rounds (an older build, for a side-by-side comparison).
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

RUNS=${1:-10}
NPROC=4
LAUNCHERS=(plaunch torchrun)
[ -z "${BENCH_OTHER:-}" ] || LAUNCHERS+=(other)   # BENCH_OTHER=FILE: a second plaunch (an older build) in the same rounds

# write_worker: the worker both launchers run as `worker.sh RUNDIR`; it only uses bash builtins around its timestamps.
write_worker() {
    mkfifo "$BENCH_TMP/idle.fifo"
    cat >"$BENCH_TMP/worker.sh" <<'EOF'
#!/bin/bash
# bench-restart worker: rank 1 of generation 0 fails; every generation-1 worker stamps its start time and exits 0.
dir=$1
idle=$dir/../idle.fifo    # never written: `read -t` on it is a sleep without a fork
gen=${PLAUNCH_GENERATION:-${TORCHELASTIC_RESTART_COUNT:-0}}
if [ "$gen" != 0 ]; then
    echo "$EPOCHREALTIME" >"$dir/start.$RANK"
    exit 0
fi
if [ "$RANK" = 1 ]; then
    read -r -t 0.3 <>"$idle" || true           # let the other ranks come up first
    echo "$EPOCHREALTIME" >"$dir/fail"
    exit 1
fi
read -r -t 30 <>"$idle" || true                # busy training until the launcher stops us
exit 0
EOF
    chmod +x "$BENCH_TMP/worker.sh"
}

# launcher_cmd NAME RUNDIR: the command line NAME uses to run the job (into the CMD array).
launcher_cmd() {
    case $1 in
    plaunch | other)
        local bin=$PLAUNCH
        [ "$1" = plaunch ] || bin=$BENCH_TMP/plaunch-other
        CMD=("$bin" --nproc-per-node "$NPROC" --max-restarts 1 --tee none --quiet --log-dir "$2/logs"
            "$BENCH_TMP/worker.sh" "$2") ;;
    torchrun)
        # -r 2 -t 2: torch 1.13's default redirect/tee settings crash before starting any worker.
        CMD=(torchrun --standalone --nproc_per_node "$NPROC" --monitor_interval 0.1 --max_restarts 1 --no_python
            -r 2 -t 2 "$BENCH_TMP/worker.sh" "$2") ;;
    esac
}

# measure NAME RUN: run the job once in a fresh directory; append failure -> first generation-1 start (ms) to NAME's data file.
measure() {
    local name=$1 dir=$BENCH_TMP/$1.$2 rc=0
    mkdir -p "$dir"
    launcher_cmd "$name" "$dir"
    bench_run "$dir/out.log" "${CMD[@]}" || rc=$?
    bench_restart_ms "$name" "$dir" "$2" "$NPROC" "$rc"
    rm -rf "$dir"
}

# run_all: one warm-up round, then RUNS rounds; each round runs both launchers, alternating which goes first.
run_all() {
    local i j name
    for name in "${LAUNCHERS[@]}"; do measure "$name" warmup; done
    for name in "${LAUNCHERS[@]}"; do : >"$BENCH_TMP/$name.restart"; done
    for ((i = 0; i < RUNS; i++)); do
        for ((j = 0; j < ${#LAUNCHERS[@]}; j++)); do
            measure "${LAUNCHERS[(i + j) % ${#LAUNCHERS[@]}]}" "$i"
        done
        printf '\rround %d/%d' $((i + 1)) "$RUNS" >&2
    done
    printf '\r%*s\r' 20 '' >&2
}

# report: the table, the ratio and the target.
report() {
    local name med min max
    declare -A MED
    bench_header "bench-restart: $NPROC workers, rank 1 fails in generation 0; its exit -> first generation-1 worker running; $RUNS interleaved runs per launcher"
    printf '%-9s %10s %10s %10s\n' launcher "median ms" "min ms" "max ms"
    for name in "${LAUNCHERS[@]}"; do
        read -r med min _ max < <(bench_stats "$BENCH_TMP/$name.restart")
        MED[$name]=$med
        printf '%-9s %10.1f %10.1f %10.1f\n' "$name" "$med" "$min" "$max"
    done
    echo
    ! bench_has torchrun || printf 'plaunch/torchrun  median %sx\n' "$(bench_div "${MED[plaunch]}" "${MED[torchrun]}")"
    [ -z "${MED[other]:-}" ] || printf 'plaunch/other     median %sx   (other: %s)\n' \
        "$(bench_div "${MED[plaunch]}" "${MED[other]}")" "$BENCH_OTHER"
    echo
    printf 'target: plaunch median restart <= 50 ms   %7.1f ms   %s\n' "${MED[plaunch]}" "$(bench_verdict "${MED[plaunch]} <= 50")"
    [ "$BENCH_LEAKS" = 0 ] || echo "WARNING: $BENCH_LEAKS runs left processes behind (killed; see above)"
}

main() {
    bench_positive_int RUNS "$RUNS"
    bench_setup
    bench_keep_present
    [ -z "${BENCH_OTHER:-}" ] || cp "$BENCH_OTHER" "$BENCH_TMP/plaunch-other"
    write_worker
    run_all
    report
}

main
