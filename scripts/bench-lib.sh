# shellcheck shell=bash disable=SC2034  # globals here are read by the scripts that source this file
# Shared helpers for scripts/bench-*.sh: setup, a temp dir removed on exit, runs that leave no process behind, statistics.
# Source it from a bench script after `set -euo pipefail`; call bench_setup first.

BENCH_TMP=""   # scratch directory of this bench run, removed on exit
BENCH_PGID=""  # process group of the run in flight (empty when none)
BENCH_LEAKS=0  # runs after which processes were still alive (and got killed)
BENCH_T0=""    # $EPOCHREALTIME just before / after the last bench_run
BENCH_T1=""

# bench_setup: cd to the repo root, install the bench packages, build plaunch when missing, create $BENCH_TMP.
# BENCH_PLAUNCH=FILE benchmarks that binary instead of build/bin/plaunch (e.g. an older build, for a comparison).
bench_setup() {
    export LC_ALL=C                       # '.' as decimal point in $EPOCHREALTIME and printf
    local bin=${BENCH_PLAUNCH:-} v
    [ -z "$bin" ] || bin=$(realpath -- "$bin")
    cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
    REPO=$PWD
    # Where no package registry answers (the GPU machines), run with what is installed: peers that are missing are
    # left out of the table with a note (bench_keep_present), not a reason to abort.
    scripts/deps.sh --bench >&2 || echo "bench: could not install the bench packages; running with what is present" >&2
    if [ -z "$bin" ]; then
        bin=$REPO/build/bin/plaunch
        [ -x "$bin" ] || make -s
    fi
    if [ ! -x "$bin" ]; then
        echo "bench: $bin is not an executable" >&2
        exit 2
    fi
    # Options must come from the command lines below only, not from the caller's environment.
    for v in $(compgen -v PLAUNCH_) TORCHELASTIC_RESTART_COUNT; do unset "$v"; done
    set -m                                # each background run gets its own process group
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    BENCH_LOAD0=$(bench_load)
    BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/plaunch-bench.XXXXXX")
    export TMPDIR=$BENCH_TMP              # torchrun and Open MPI scratch files go away with it
    # Benchmark a snapshot, so that a rebuild during the run cannot mix two binaries into one table.
    cp "$bin" "$BENCH_TMP/plaunch"
    PLAUNCH=$BENCH_TMP/plaunch
    BENCH_PLAUNCH_DESC="$("$PLAUNCH" --version | awk '{ print $NF }'), $bin built $(date -r "$bin" '+%F %T %Z')"
    [ "$bin" != "$REPO/build/bin/plaunch" ] ||
        BENCH_PLAUNCH_DESC+=", tree at git $(git describe --always --dirty 2>/dev/null || echo '?')"
}

# bench_keep_present: drop from LAUNCHERS every peer (mpirun, torchrun) whose command is not on PATH, saying so.
bench_keep_present() {
    local keep=() name
    for name in "${LAUNCHERS[@]}"; do
        case $name in
        mpirun | torchrun)
            if ! command -v "$name" >/dev/null; then
                echo "bench: $name is not installed here: its rows are left out" >&2
                continue
            fi ;;
        esac
        keep+=("$name")
    done
    LAUNCHERS=("${keep[@]}")
}

# bench_has NAME: NAME is one of the launchers measured in this run.
bench_has() {
    local name
    for name in "${LAUNCHERS[@]}"; do [ "$name" = "$1" ] && return 0; done
    return 1
}

# bench_cleanup: stop the run in flight (its whole process group), kill strays, remove $BENCH_TMP.
bench_cleanup() {
    if [ -n "$BENCH_PGID" ]; then
        bench_stop_group "$BENCH_PGID"
        BENCH_PGID=""
    fi
    if [ -n "$BENCH_TMP" ]; then
        bench_kill_pids "$(pgrep -f -- "$BENCH_TMP/" || true)"
        rm -rf "$BENCH_TMP"
    fi
}

# bench_stop_group PGID: SIGTERM the group (launchers then stop their workers), SIGKILL whatever is left after 5 s.
bench_stop_group() {
    local pgid=$1 _
    disown "$pgid" 2>/dev/null || true   # no "[1]+ Terminated" job report
    kill -TERM -- "-$pgid" 2>/dev/null || return 0
    for _ in $(seq 50); do
        kill -0 -- "-$pgid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- "-$pgid" 2>/dev/null || true
}

# bench_kill_pids "PID...": SIGTERM, then SIGKILL after 1 s, each listed process (by id).
bench_kill_pids() {
    local pids=$1 p
    [ -n "$pids" ] || return 0
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 1
    for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
}

# bench_reap PGID: after a run, find processes it left behind (still in its group, or naming $BENCH_TMP), report and kill them.
bench_reap() {
    local pgid=$1 left
    left=$( { pgrep -g "$pgid" || true; pgrep -f -- "$BENCH_TMP/" || true; } | sort -u | tr '\n' ' ')
    left=${left% }
    [ -n "$left" ] || return 0
    BENCH_LEAKS=$((BENCH_LEAKS + 1))
    echo "bench: WARNING: the last run left processes behind; killing them:" >&2
    # shellcheck disable=SC2086
    ps -o pid,pgid,etime,args -p "${left// /,}" >&2 || true
    bench_kill_pids "$left"
}

# bench_run LOG CMD...: run CMD in its own process group (stdin /dev/null, output to LOG) and wait for it.
# Sets BENCH_T0/BENCH_T1 ($EPOCHREALTIME around start..exit); returns CMD's exit status.
bench_run() {
    local log=$1 rc=0
    shift
    BENCH_T0=$EPOCHREALTIME
    "$@" </dev/null >"$log" 2>&1 &
    BENCH_PGID=$!
    wait "$BENCH_PGID" || rc=$?
    BENCH_T1=$EPOCHREALTIME
    bench_reap "$BENCH_PGID"
    BENCH_PGID=""
    return "$rc"
}

# bench_us EPOCHREALTIME: the same instant in integer microseconds.
bench_us() {
    local t=${1//[.,]/}
    echo $((10#$t))
}

# bench_ms_between T0 T1: milliseconds from T0 to T1 (both $EPOCHREALTIME values), 3 decimals.
bench_ms_between() {
    local d=$(( $(bench_us "$2") - $(bench_us "$1") ))
    awk -v d="$d" 'BEGIN { printf "%.3f\n", d / 1000 }'
}

# bench_stats FILE: one number per line in, "median min p90 max" out (p90: nearest rank).
bench_stats() {
    sort -g "$1" | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "nan nan nan nan"; exit }
            med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            r = int(0.9 * NR); if (r < 0.9 * NR) r++
            printf "%.3f %.3f %.3f %.3f\n", med, v[1], v[r], v[NR]
        }'
}

# bench_div A B: A / B to 3 significant decimals ("-" when B is 0).
bench_div() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "-"; else printf "%.3f\n", a / b }'
}

# bench_verdict CONDITION: PASS when the awk CONDITION holds, else MISS.
bench_verdict() {
    awk "BEGIN { print ($1) ? \"PASS\" : \"MISS\" }"
}

# bench_machine: one line describing this box (cores, OS, kernel).
bench_machine() {
    local os
    os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown OS}")
    echo "$(nproc) cores, $os, Linux $(uname -r)"
}

# bench_header TITLE: the first lines of a report: what ran, on which box, under which load, which plaunch.
bench_header() {
    echo "$1"
    echo "machine: $(bench_machine); 1-min load average $BENCH_LOAD0 at start, $(bench_load) at end"
    echo "plaunch: $BENCH_PLAUNCH_DESC"
    echo
}

# bench_load: the 1-minute load average now (other work on the box shows up as noise in the numbers).
bench_load() {
    cut -d ' ' -f 1 /proc/loadavg
}

# bench_positive_int NAME VALUE: exit 2 unless VALUE is a positive integer.
bench_positive_int() {
    if ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
        echo "bench: $1 must be a positive integer, not '$2'" >&2
        exit 2
    fi
}

# bench_restart_ms NAME DIR RUN NPROC RC: after a restart bench's run in DIR (its worker stamps DIR/fail when
# rank 1 fails and DIR/start.RANK when each generation-1 worker starts): fails the bench unless the run exited 0
# with every stamp, else appends ms from the failure to the first generation-1 start to $BENCH_TMP/NAME.restart.
bench_restart_ms() {
    local name=$1 dir=$2 run=$3 nproc=$4 rc=$5 n first
    [ "$rc" = 0 ] || bench_fail_run "$name" "$dir/out.log" "$rc"
    n=$(find "$dir" -maxdepth 1 -name 'start.*' | wc -l)
    if [ ! -s "$dir/fail" ] || [ "$n" != "$nproc" ]; then
        echo "bench: $name run $run: expected a fail stamp and $nproc generation-1 stamps, found $n" >&2
        bench_fail_run "$name" "$dir/out.log" "$rc"
    fi
    first=$(cat "$dir"/start.* | sort -g | head -n 1)
    bench_ms_between "$(cat "$dir/fail")" "$first" >>"$BENCH_TMP/$name.restart"
}

# bench_fail_run NAME LOG RC: report a launcher run that failed, with the end of its output, and exit 1.
bench_fail_run() {
    echo "bench: $1 failed (exit $3); last lines of its output:" >&2
    tail -n 20 "$2" >&2 || true
    exit 1
}

# bench_gen_worker FILE: writes the multi-node benches' worker: first thing it stamps $EPOCHREALTIME into
# $OUTDIR/start.GENERATION.NODE_RANK; generation 0 then runs (sleeps) until stopped, later ones exit 0.
bench_gen_worker() {
    cat >"$1" <<'W'
#!/bin/bash
echo "$EPOCHREALTIME" > "$OUTDIR/start.$PLAUNCH_GENERATION.$PLAUNCH_NODE_RANK"
[ "$PLAUNCH_GENERATION" -ge 1 ] && exit 0
sleep 300
W
    chmod +x "$1"
}
