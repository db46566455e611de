#!/bin/bash
# Launch overhead: 8 x /bin/true under plaunch, mpirun and torchrun, interleaved; median/min/p90 wall ms and peak RSS.
# Usage: scripts/bench-launch.sh [RUNS]   (RUNS per launcher, default 20; see docs/benchmarks.md)
#   BENCH_OTHER=FILE adds a second plaunch to the same rounds (a `make STATIC=0` build, or an older build).
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

RUNS=${1:-20}
NPROC=8
LAUNCHERS=(plaunch mpirun torchrun floor)   # floor: xargs starting the same workers, no launcher logic; a reference
[ -z "${BENCH_OTHER:-}" ] || LAUNCHERS+=(other)

# launcher_cmd NAME: the command line NAME uses to start $NPROC x /bin/true (into the CMD array).
launcher_cmd() {
    case $1 in
    floor)
        seq "$NPROC" >"$BENCH_TMP/ranks"
        CMD=(xargs -P "$NPROC" -n 1 -a "$BENCH_TMP/ranks" /bin/true) ;;
    other)
        CMD=("$BENCH_TMP/plaunch-other" --nproc-per-node "$NPROC" --tee none --quiet --log-dir "$BENCH_TMP/plaunch-logs" /bin/true) ;;
    plaunch)
        CMD=("$PLAUNCH" --nproc-per-node "$NPROC" --tee none --quiet --log-dir "$BENCH_TMP/plaunch-logs" /bin/true) ;;
    mpirun)
        CMD=(mpirun)
        [ "$(id -u)" = 0 ] && CMD+=(--allow-run-as-root)
        CMD+=(--oversubscribe -np "$NPROC" /bin/true) ;;
    torchrun)
        # -r 2 -t 2: torch 1.13's default redirect/tee settings crash before starting any worker.
        CMD=(torchrun --standalone --nproc_per_node "$NPROC" --no_python -r 2 -t 2 /bin/true) ;;
    esac
}

# measure NAME: one wall-time run (bare) and one peak-RSS run (under GNU time) of launcher NAME; appends to its data files.
measure() {
    local name=$1 log=$BENCH_TMP/$1.log rc=0
    launcher_cmd "$name"
    bench_run "$log" "${CMD[@]}" || rc=$?
    [ "$rc" = 0 ] || bench_fail_run "$name" "$log" "$rc"
    bench_ms_between "$BENCH_T0" "$BENCH_T1" >>"$BENCH_TMP/$name.wall"
    [ -x /usr/bin/time ] || return 0   # no GNU time here: the RSS column stays empty
    bench_run "$log" /usr/bin/time -f %M -o "$BENCH_TMP/$name.rss1" "${CMD[@]}" || rc=$?
    [ "$rc" = 0 ] || bench_fail_run "$name (under /usr/bin/time)" "$log" "$rc"
    tail -n 1 "$BENCH_TMP/$name.rss1" >>"$BENCH_TMP/$name.rss"
}

# run_all: one warm-up round, then RUNS rounds; each round runs every launcher once, starting one further along each time.
run_all() {
    local i j name
    for name in "${LAUNCHERS[@]}"; do measure "$name"; done
    for name in "${LAUNCHERS[@]}"; do : >"$BENCH_TMP/$name.wall"; : >"$BENCH_TMP/$name.rss"; done
    for ((i = 0; i < RUNS; i++)); do
        for ((j = 0; j < ${#LAUNCHERS[@]}; j++)); do
            measure "${LAUNCHERS[(i + j) % ${#LAUNCHERS[@]}]}"
        done
        printf '\rround %d/%d' $((i + 1)) "$RUNS" >&2
    done
    printf '\r%*s\r' 20 '' >&2
}

# report: the table, the ratios and the targets.
report() {
    local name med min p90 rss
    declare -A MED RSS
    bench_header "bench-launch: $NPROC x /bin/true, $RUNS interleaved runs per launcher"
    printf '%-12s %10s %10s %10s %14s\n' launcher "median ms" "min ms" "p90 ms" "peak RSS MiB"
    for name in "${LAUNCHERS[@]}"; do
        read -r med min p90 _ < <(bench_stats "$BENCH_TMP/$name.wall")
        rss=$(sort -n "$BENCH_TMP/$name.rss" | tail -n 1 | awk '{ printf "%.1f", $1 / 1024 }')
        MED[$name]=$med
        RSS[$name]=$rss
        [ "$name" = floor ] && name="(xargs -P$NPROC)"
        printf '%-12s %10.1f %10.1f %10.1f %14s\n' "$name" "$med" "$min" "$p90" "$rss"
    done
    echo
    for name in mpirun torchrun; do
        bench_has "$name" || continue
        printf 'plaunch/%-9s wall %7sx   peak RSS %7sx\n' "$name" \
            "$(bench_div "${MED[plaunch]}" "${MED[$name]}")" "$(bench_div "${RSS[plaunch]}" "${RSS[$name]}")"
    done
    [ -z "${MED[other]:-}" ] || printf 'plaunch/other     wall %7sx   peak RSS %7sx   (other: %s)\n' \
        "$(bench_div "${MED[plaunch]}" "${MED[other]}")" "$(bench_div "${RSS[plaunch]}" "${RSS[other]}")" "$BENCH_OTHER"
    printf 'plaunch above the xargs floor: %.1f ms\n' "$(awk -v a="${MED[plaunch]}" -v b="${MED[floor]}" 'BEGIN { print a - b }')"
    echo
    local ratio
    if bench_has mpirun; then
        ratio=$(bench_div "${MED[plaunch]}" "${MED[mpirun]}")
        printf 'target: plaunch median wall <= 0.1 x mpirun  %8sx   %s\n' "$ratio" "$(bench_verdict "$ratio <= 0.1")"
    fi
    [ -z "${RSS[plaunch]}" ] ||
        printf 'target: plaunch peak RSS <= 8 MiB            %6s MiB   %s\n' "${RSS[plaunch]}" "$(bench_verdict "${RSS[plaunch]} <= 8")"
    [ "$BENCH_LEAKS" = 0 ] || echo "WARNING: $BENCH_LEAKS runs left processes behind (killed; see above)"
}

main() {
    bench_positive_int RUNS "$RUNS"
    bench_setup
    bench_keep_present
    [ -z "${BENCH_OTHER:-}" ] || cp "$BENCH_OTHER" "$BENCH_TMP/plaunch-other"
    run_all
    report
}

main
