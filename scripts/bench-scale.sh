#!/bin/bash
# bench-scale.sh: the coordinator against N-1 simulated agents (tests/agentsim, pl_agentsim: a ZeroMQ socket, a
# TLS 1.3 PSK session and the real wire messages each) plus node 0, a real plaunch that hosts the coordinator and
# runs one nccl_id worker (rank 0 publishes the ids). Per N, one line:
#   N=<n> formed_s=<first JOIN to last ASSIGN> ids_s=<to last NCCL id delivered> hb_cpu_pct=<coordinator CPU at
#   steady heartbeats, % of one core> coord_rss_mib=<its peak RSS> coord_form_cpu_s=<coordinator CPU from the start
#   to the last barrier> coord_us_per_node=<that per node, in microseconds>
# then the ratios between successive N, and a '#' line per N with what else was measured and the checks.
# Usage: scripts/bench-scale.sh [--heartbeat S] [--heartbeat-timeout S] [--hb-window S] [--relay-fanout F]
#                               [--elastic] [--perf DIR] [N...]
#   default N: 1024 4096 16384; heartbeats at plaunch's defaults; --hb-window: seconds of steady heartbeats the
#   CPU is sampled over (default 10, after 2 s of settling); --relay-fanout: the tree (default auto: relays from
#   513 nodes on, run by the simulator's agents that can relay; off: every agent talks to the coordinator);
#   --perf DIR: perf record of the coordinator per N. The join is ranked by default, as under Slurm, Kubernetes or
#   --node-rank: every node knows its rank and every node's host (--node-hosts), the layout's relays relay from the
#   start and the other agents go to their relay directly; --elastic: no rank known, the coordinator asks the first
#   agents to relay and REDIRECTs the others (the path of elastic newcomers).
# Never fails on a missed target; exits 1 only when a run could not be made at all.
set -euo pipefail
. "$(dirname "$0")/bench-lib.sh"

hb="" hbt="" window=10 perf_dir="" fanout=auto elastic=0
sizes=()
while [ $# -gt 0 ]; do
    case $1 in
    --heartbeat) hb=$2; shift 2 ;;
    --heartbeat-timeout) hbt=$2; shift 2 ;;
    --hb-window) window=$2; shift 2 ;;
    --relay-fanout) fanout=$2; shift 2 ;;
    --perf) perf_dir=$(realpath -m -- "$2"); shift 2 ;;
    --elastic) elastic=1; shift ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) bench_positive_int N "$1"; sizes+=("$1"); shift ;;
    esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(1024 4096 16384)
bench_setup
[ -x build/tests/tools/pl_agentsim ] && [ -x build/tests/tools/pl_connfloor ] && [ -x build/bin/nccl_id ] ||
    make -s all build/tests/tools/pl_agentsim build/tests/tools/pl_connfloor
cp build/tests/tools/pl_agentsim "$BENCH_TMP/"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

hb_opts=()
tree_opts=(--relay-fanout "$fanout")
[ -z "$hb" ] || hb_opts+=(--heartbeat "$hb")
[ -z "$hbt" ] || hb_opts+=(--heartbeat-timeout "$hbt")

# s_hosts N: every node's host by rank, as pl_agentsim places them: node 0 at 127.0.0.1, agent i at 127.1.0.0 + i
s_hosts() {
    local full=$((($1 - 1) / 256)) rem=$((($1 - 1) % 256)) h=127.0.0.1
    [ $full = 0 ] || h+=",127.1.[0-$((full - 1))].[0-255]"
    [ $rem = 0 ] || h+=",127.1.$full.[0-$((rem - 1))]"
    echo "$h"
}

# s_scale_run N PORT DIR: node 0 in the background, the simulator in front; the simulator's output is the result.
s_scale_run() {
    local n=$1 port=$2 d=$3 pid rc=0 node0_mode=() sim_mode=()
    if [ "$elastic" = 1 ]; then sim_mode=(--elastic); else node0_mode=(--node-hosts "$(s_hosts "$n")"); fi
    PLAUNCH_TOKEN=$("$PLAUNCH" token)
    export PLAUNCH_TOKEN PLAUNCH_TIMEOUT_MS=600000
    "$PLAUNCH" --nnodes "$n" --node-rank 0 --master "127.0.0.1:$port" --nproc-per-node 1 --rdzv-timeout 600 \
        "${hb_opts[@]}" "${tree_opts[@]}" "${node0_mode[@]}" --quiet --tee none --log-dir "$d/log" "$REPO/build/bin/nccl_id" \
        >"$d/node0.out" 2>&1 &
    pid=$!
    if [ -n "$perf_dir" ]; then
        perf record -F 499 -g -p "$pid" -o "$perf_dir/perf.$n.data" >/dev/null 2>&1 &
    fi
    "$BENCH_TMP/pl_agentsim" --master "127.0.0.1:$port" --agents $((n - 1)) --coord-pid "$pid" "${hb_opts[@]}" \
        "${tree_opts[@]}" "${sim_mode[@]}" --settle 2 --hb-window "$window" --deadline 600 || rc=$?
    wait "$pid" || true
    return "$rc"
}

[ -z "$perf_dir" ] || mkdir -p "$perf_dir"
# The floor under any rendezvous here: one ZeroMQ connection with one round trip, both ends in one process
floor_us=$(build/tests/tools/pl_connfloor 2000 $((28500 + $$ % 400)) | sed -n 's/.* us_per_conn=\([0-9]*\).*/\1/p')
bench_header "bench-scale: the coordinator with N-1 simulated agents and node 0 (heartbeats ${hb:-0.5 (default)} s, timeout ${hbt:-2.5 (default)} s, --relay-fanout $fanout, $([ "$elastic" = 1 ] && echo "elastic: REDIRECTs" || echo "ranked join"))"
port=$((29000 + $$ % 500))
prev=() first=() results=()
for n in "${sizes[@]}"; do
    d=$BENCH_TMP/n$n
    mkdir -p "$d"
    rc=0
    bench_run "$d/sim.out" s_scale_run "$n" "$port" "$d" || rc=$?
    port=$((port + 1))
    line=$(grep '^agentsim ' "$d/sim.out" || true)
    if [ -z "$line" ]; then
        echo "N=$n: no result (exit $rc); last lines:"
        tail -n 5 "$d/sim.out" | sed 's/^/#   /'
        continue
    fi
    val() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
    cur=("$n" "$(val formed_s)" "$(val ids_s)" "$(val hb_cpu_pct)" "$(val coord_rss_mib)" "$(val coord_form_cpu_s)")
    per_node=$(awk -v c="${cur[5]}" -v n="$n" 'BEGIN { printf "%.0f", c * 1e6 / n }')
    echo "N=$n formed_s=${cur[1]} ids_s=${cur[2]} hb_cpu_pct=${cur[3]} coord_rss_mib=${cur[4]}" \
        "coord_form_cpu_s=${cur[5]} coord_us_per_node=$per_node"
    failed=$(grep -c '^check FAILED' "$d/sim.out" || true)
    echo "# N=$n barrier_s=$(val barrier_s) sim_cpu_s=$(val sim_cpu_s)" \
        "sim_procs=$(val procs) sessions=$(val sessions) relays=$(val relays) via_relays=$(val via_relays)" \
        "checks: $([ "$failed" = 0 ] && echo "all passed" ||
            echo "$failed FAILED: $(grep '^check FAILED' "$d/sim.out" | head -2 | tr '\n' ';')")"
    if [ "$failed" != 0 ]; then # why: the simulator's first complaints, the coordinator's first errors
        { grep -m 5 '^pl_agentsim' "$d/sim.out" || true
          grep -h -m 5 ' error \| warn  closed' "$d"/log/plaunch*.log 2>/dev/null || true; } | cut -c1-200 | sed 's/^/#   /'
    fi
    conns=$((n - 1)); [ "$(val relays)" != 0 ] && conns=$((conns + $(val via_relays)))
    echo "# N=$n floor: $conns ZeroMQ connections (one per agent, to its relay or the coordinator, and one more per" \
        "agent REDIRECTed; $(val relays) of them at the coordinator when ranked) at" \
        "${floor_us:-?} us of CPU each (pl_connfloor, this run) = $(bench_div "$((conns * ${floor_us:-0}))" 2000000) s" \
        "on 2 cores, before any TLS or message"
    if [ ${#prev[@]} -gt 0 ]; then
        results+=("ratio N=$n/N=${prev[0]}: formed $(bench_div "${cur[1]}" "${prev[1]}")x ids $(bench_div "${cur[2]}" \
            "${prev[2]}")x hb_cpu $(bench_div "${cur[3]}" "${prev[3]}")x coord_rss $(bench_div "${cur[4]}" \
            "${prev[4]}")x coord_form_cpu $(bench_div "${cur[5]}" "${prev[5]}")x")
    fi
    prev=("${cur[@]}")
    [ ${#first[@]} -gt 0 ] || first=("${cur[@]}")
done
for r in "${results[@]}"; do echo "$r"; done
if [ ${#results[@]} -gt 1 ]; then
    echo "ratio N=${prev[0]}/N=${first[0]}: formed $(bench_div "${prev[1]}" "${first[1]}")x ids $(bench_div \
        "${prev[2]}" "${first[2]}")x hb_cpu $(bench_div "${prev[3]}" "${first[3]}")x coord_rss $(bench_div \
        "${prev[4]}" "${first[4]}")x coord_form_cpu $(bench_div "${prev[5]}" "${first[5]}")x"
fi
echo "targets at 16384: formed and ids <= 5 s, hb_cpu_pct <= 20 (ranked: <= 5), coord_rss_mib <= 256, 16384 vs 1024" \
    "<= 20x; ranked: coord_form_cpu_s <= 1.0 (5.63 s, 0.34 ms per node, before the ranked join), 16384 vs 4096 <= 4.5x"
echo "load average at end: $(bench_load)"
