#!/bin/bash
# What /metrics costs a restart: 4 workers, rank 1 fails in generation 0; ms from its exit to the first generation-1
# worker running, with no --metrics-port (the floor), with it and no scraper, and with 8 clients scraping /metrics
# as fast as they can (each a new connection per scrape: tests/bb/metrics_attack.py scrape), interleaved; prints
# the ratios to the floor.
# Usage: scripts/bench-metrics.sh [RUNS]   (RUNS per configuration, default 10; see docs/benchmarks.md)
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

RUNS=${1:-10}
NPROC=4
SCRAPERS=8
CONFIGS=(off idle scraped)

write_worker() {
    mkfifo "$BENCH_TMP/idle.fifo"
    cat >"$BENCH_TMP/worker.sh" <<'W'
#!/bin/bash
# bench-metrics worker: rank 1 of generation 0 fails once the bench says go; generation-1 workers stamp and exit.
dir=$1
idle=$dir/../idle.fifo    # never written: `read -t` on it is a sleep without a fork
gen=${PLAUNCH_GENERATION:-0}
if [ "$gen" != 0 ]; then
    echo "$EPOCHREALTIME" >"$dir/start.$RANK"
    exit 0
fi
if [ "$RANK" = 1 ]; then
    for _ in $(seq 1 300); do [ -e "$dir/go" ] && break; read -r -t 0.02 <>"$idle" || true; done
    echo "$EPOCHREALTIME" >"$dir/fail"
    exit 1
fi
read -r -t 30 <>"$idle" || true                # busy training until the launcher stops us
exit 0
W
    chmod +x "$BENCH_TMP/worker.sh"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# measure CONFIG RUN: one job; appends failure -> first generation-1 start (ms) to CONFIG's data file.
measure() {
    local cfg=$1 dir=$BENCH_TMP/$1.$2 rc=0 port spid="" i
    mkdir -p "$dir"
    CMD=("$PLAUNCH" --nproc-per-node "$NPROC" --max-restarts 1 --tee none --quiet --log-dir "$dir/logs")
    if [ "$cfg" != off ]; then
        port=$(free_port)
        CMD+=(--metrics-port "$port")
    fi
    CMD+=("$BENCH_TMP/worker.sh" "$dir")
    BENCH_T0=$EPOCHREALTIME
    "${CMD[@]}" </dev/null >"$dir/out.log" 2>&1 &
    BENCH_PGID=$!
    if [ "$cfg" != off ]; then # the server is up before the failure, in every configuration that has one
        for i in $(seq 1 200); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.02; done
    fi
    if [ "$cfg" = scraped ]; then
        python3 "$REPO/tests/bb/metrics_attack.py" scrape 127.0.0.1 "$port" "$SCRAPERS" 60 "$dir/stop" >"$dir/scrapes" &
        spid=$!
        sleep 0.5 # the scrapers are at full speed when the worker fails
    fi
    touch "$dir/go"
    wait "$BENCH_PGID" || rc=$?
    BENCH_T1=$EPOCHREALTIME
    if [ -n "$spid" ]; then # the scrapers end before the leftover check, which would count them
        touch "$dir/stop"
        wait "$spid" || true
        awk '{ print $2, $4 }' "$dir/scrapes" >>"$BENCH_TMP/scrapes" 2>/dev/null || echo "0 0" >>"$BENCH_TMP/scrapes"
    fi
    bench_reap "$BENCH_PGID"
    BENCH_PGID=""
    bench_restart_ms "$cfg" "$dir" "$2" "$NPROC" "$rc"
    rm -rf "$dir"
}

run_all() {
    local i j
    for cfg in "${CONFIGS[@]}"; do measure "$cfg" warmup; done
    for cfg in "${CONFIGS[@]}"; do : >"$BENCH_TMP/$cfg.restart"; done
    : >"$BENCH_TMP/scrapes"
    for ((i = 0; i < RUNS; i++)); do
        for ((j = 0; j < ${#CONFIGS[@]}; j++)); do measure "${CONFIGS[(i + j) % ${#CONFIGS[@]}]}" "$i"; done
        printf '\rround %d/%d' $((i + 1)) "$RUNS" >&2
    done
    printf '\r%*s\r' 20 '' >&2
}

report() {
    local cfg med min max p90
    declare -A MED
    bench_header "bench-metrics: $NPROC workers, rank 1 fails in generation 0; its exit -> first generation-1 worker running; $RUNS interleaved runs per configuration"
    printf '%-9s %10s %10s %10s %10s\n' config "median ms" "min ms" "p90 ms" "max ms"
    for cfg in "${CONFIGS[@]}"; do
        read -r med min p90 max < <(bench_stats "$BENCH_TMP/$cfg.restart")
        MED[$cfg]=$med
        printf '%-9s %10.1f %10.1f %10.1f %10.1f\n' "$cfg" "$med" "$min" "$p90" "$max"
    done
    echo
    echo "off: no --metrics-port; idle: --metrics-port, nobody scrapes; scraped: $SCRAPERS clients scrape /metrics in a loop"
    awk '{ s += $1; e += $2 } END { printf "scrapes answered during the scraped runs: %d (%d refused or failed)\n", s, e }' \
        "$BENCH_TMP/scrapes"
    printf 'idle/off     median %sx\n' "$(bench_div "${MED[idle]}" "${MED[off]}")"
    printf 'scraped/off  median %sx\n' "$(bench_div "${MED[scraped]}" "${MED[off]}")"
    echo
    printf 'target: scraped median restart <= 2 x off + 5 ms   %7.1f ms   %s\n' "${MED[scraped]}" \
        "$(bench_verdict "${MED[scraped]} <= 2 * ${MED[off]} + 5")"
    [ "$BENCH_LEAKS" = 0 ] || echo "WARNING: $BENCH_LEAKS runs left processes behind (killed; see above)"
}

main() {
    bench_positive_int RUNS "$RUNS"
    bench_setup
    write_worker
    run_all
    report
}

main
