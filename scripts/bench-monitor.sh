#!/bin/bash
# bench-monitor.sh: what the health monitor costs: a job of 8 workers that sleep for SECONDS, run with --monitor 1
# and with --monitor 0, alternating; the CPU time of plaunch itself and of its sampler process (plaunch __monitor),
# read from /proc just before the workers end, as % of one core over the job's run. Target: the difference
# <= 1 % of one core. On a GPU machine (nvidia-smi works) the workers are GPU workers (--gpus all) and NVML is
# sampled; elsewhere CPU workers (host metrics only).
# Usage: scripts/bench-monitor.sh [RUNS] [SECONDS]   (BENCH_CPU=1: 8 CPU workers even where there are GPUs)
set -uo pipefail
runs=${1:-3} secs=${2:-20}
cd "$(dirname "$0")/.." || exit 1
[ -x build/bin/plaunch ] || make -s all || exit 1
P=$PWD/build/bin/plaunch
tmp=$(mktemp -d /tmp/plaunch-bm.XXXXXX)
trap 'pkill -9 -f "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
if [ "${BENCH_CPU:-0}" != 1 ] && nvidia-smi -L >/dev/null 2>&1; then
    n=$(nvidia-smi -L | wc -l); workers=(--gpus all); what="$n GPU workers (NVML sampled)"
else
    workers=(--nproc-per-node 8); what="8 CPU workers (host metrics only)"
fi
printf '#!/bin/sh\nexec sleep %s\n' "$secs" >"$tmp/w.sh"
chmod +x "$tmp/w.sh"
# cpu_ns PID: nanoseconds on a CPU of every thread of PID (not its children's), from schedstat: exact, where
# utime/stime in /proc/PID/stat are sampled at clock ticks and read 0 for a process that runs 100 us a second
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
# one MONITOR: prints plaunch's and the sampler's CPU as % of one core over the run
one() {
    local mon=$1 pid sampler t0 ticks=0 s=0
    "$P" "${workers[@]}" --monitor "$mon" --quiet --tee none --log-dir "$tmp/log" "$tmp/w.sh" &
    pid=$!
    t0=$EPOCHREALTIME
    sleep $((secs - 1)) # the workers run for SECONDS; read just before they end
    sampler=$(pgrep -P "$pid" -f '__monitor' | head -1)
    ticks=$(cpu_ns "$pid")
    [ -n "$sampler" ] && s=$(cpu_ns "$sampler")
    local el
    el=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN {print a - b}')
    wait "$pid"
    awk -v t="$ticks" -v s="$s" -v e="$el" 'BEGIN {printf "%.3f", 100 * (t + s) / 1e9 / e}'
}
on="" off=""
for i in $(seq 1 "$runs"); do
    on="$on $(one 1)"
    off="$off $(one 0)"
done
avg() { echo "$1" | tr ' ' '\n' | grep -v '^$' | awk '{s += $1} END {printf "%.3f", NR ? s / NR : 0}'; }
a=$(avg "$on") b=$(avg "$off")
printf '%s, %s s each, %s runs: plaunch + sampler CPU, %% of one core\n' "$what" "$secs" "$runs"
printf '  --monitor 1: %s (runs:%s)\n  --monitor 0: %s (runs:%s)\n  monitor costs %s %% of one core (target <= 1)\n' \
    "$a" "$on" "$b" "$off" "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a - b}')"
