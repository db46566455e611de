#!/bin/bash
# bench-restart-nodes.sh: the multi-node restart: three namespace nodes (--nnodes 2:3, default heartbeats), node 3
# lost in two ways: its agent killed (the kernel closes its connection: lost after the reconnect grace) and its
# link cut (a silent host: lost by the heartbeat timeout); then a fixed two-node job with a hot spare (--nnodes 2
# --spares 1; node 3 stands by), the agent of active node 2 killed: the spare takes its rank, the world stays 2.
# Prints, for each, detection time (fault -> the coordinator logs the loss), restart time (loss -> every worker
# of generation 1 running) and their sum, and the spare's total against the elastic shrink's (same fault, same
# run). Targets: kill <= 0.5 s, cut <= 3 s, spare <= 0.5 s. Needs root (namespaces).
# Usage: scripts/bench-restart-nodes.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
[ "$(id -u)" = 0 ] || { echo "bench-restart-nodes: needs root for network namespaces" >&2; exit 0; }
[ -x build/bin/plaunch ] || make -s
. scripts/netns.sh
. scripts/bench-lib.sh
PLOG="plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log" # a multi-node job's launcher log on this host
P=$PWD/build/bin/plaunch
NS="pr$$"; NS=${NS:0:8}; NET=77; PORT=29477
tmp=$(mktemp -d /tmp/plaunch-brn.XXXXXX)
cleanup() { # without -e: netns_down's last step fails when the namespace took the link with it
    set +e
    for f in "$tmp"/pid.*; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
    netns_down "$NS" 3
    rm -rf "$tmp"
}
trap cleanup EXIT
netns_up "$NS" 3 $NET
export PLAUNCH_TOKEN OUTDIR=$tmp
PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
bench_gen_worker "$tmp/w.sh"

# log_time FILE REGEX: epoch seconds of the first log line matching REGEX
log_time() { date -d "$(grep -m1 -E "$2" "$1" | cut -d' ' -f1)" +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# run FAULT: one run of the job, node 3 lost by FAULT (kill or cut); appends to det.FAULT, rst.FAULT, tot.FAULT
run() {
    rm -rf "$tmp"/log* "$tmp"/start.*
    local shape=(--nnodes 2:3) want=3 victim=3 i
    [ "$1" = spare ] && shape=(--nnodes 2 --spares 1) want=2 victim=2
    for i in 1 2 3; do
        ip netns exec "$NS$i" "$P" "${shape[@]}" --master "$(netns_addr "$NS" 1):$PORT" --log-dir "$tmp/log$i" \
            --quiet --tee none "$tmp/w.sh" >/dev/null 2>&1 &
        echo $! >"$tmp/pid.$i"
        # the spare: node 3 joins once nodes 1 and 2 run, and stands by
        [ "$1" = spare ] && [ $i = 2 ] && for _ in $(seq 1 200); do
            [ "$(ls "$tmp"/start.0.* 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.05; done
    done
    for _ in $(seq 1 200); do [ "$(ls "$tmp"/start.0.* 2>/dev/null | wc -l)" = $want ] && break; sleep 0.05; done
    [ "$1" = spare ] && for _ in $(seq 1 200); do
        grep -q "standing by as a spare" "$tmp/log3/$PLOG" 2>/dev/null && break; sleep 0.05; done
    t0=$EPOCHREALTIME
    if [ "$1" = cut ]; then netns_link_down "$NS" 3; else kill -9 "$(cat "$tmp/pid.$victim")"; fi
    for _ in $(seq 1 200); do [ "$(ls "$tmp"/start.1.* 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.05; done
    for i in 1 2 3; do [ $i = $victim ] || wait "$(cat "$tmp/pid.$i")" 2>/dev/null || true; done
    netns_link_up "$NS" 3
    kill -9 "$(cat "$tmp/pid.$victim")" 2>/dev/null || true
    lost=$(log_time "$tmp/log1/$PLOG" "lost:")
    up=$(cat "$tmp"/start.1.* | sort -n | tail -1)
    echo "$lost - $t0" | bc -l >>"$tmp/det.$1"
    echo "$up - $lost" | bc -l >>"$tmp/rst.$1"
    echo "$up - $t0" | bc -l >>"$tmp/tot.$1"
    rm -f "$tmp"/pid.*
}

for fault in kill cut spare; do
    : >"$tmp/det.$fault"; : >"$tmp/rst.$fault"; : >"$tmp/tot.$fault"
    for _ in $(seq 1 "$runs"); do run $fault; done
done
# report FAULT WHAT TARGET
report() {
    local d s t
    d=$(median <"$tmp/det.$1"); s=$(median <"$tmp/rst.$1"); t=$(median <"$tmp/tot.$1")
    printf 'node 3 %-32s %d runs, medians: detection %.3f s, restart %.3f s, total %.3f s (target <= %s s: %s)\n' \
        "$2" "$runs" "$d" "$s" "$t" "$3" "$(echo "$t <= $3" | bc -l | sed 's/1/PASS/;s/0/MISS/')"
}
report kill "agent killed (connection closes):" 0.5
report cut "link cut (silent host):" 3
d=$(median <"$tmp/tot.spare"); e=$(median <"$tmp/tot.kill")
printf 'node 2 %-32s %d runs, medians: detection %.3f s, restart %.3f s, total %.3f s (target <= 0.5 s: %s)\n' \
    "agent killed, a spare takes its rank:" "$runs" "$(median <"$tmp/det.spare")" "$(median <"$tmp/rst.spare")" "$d" \
    "$(echo "$d <= 0.5" | bc -l | sed 's/1/PASS/;s/0/MISS/')"
printf 'spare swap vs elastic shrink (same fault): %.3f s vs %.3f s = %.2fx; the spare keeps world size 2, the shrink goes from 3 nodes to 2\n' \
    "$d" "$e" "$(echo "$d / $e" | bc -l)"
