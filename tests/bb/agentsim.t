#!/bin/bash
# agentsim.t: the real coordinator with 511 simulated agents (tests/agentsim, pl_agentsim: a ZeroMQ socket, a TLS
# PSK session and the real wire messages each) and a real plaunch as node 0, in a network namespace of the test's
# own (loopback only): every agent gets a distinct node rank and its own contiguous rank range, which with node 0's
# rank cover the world; every agent holds the ids node 0's worker printed; an agent that falls silent is lost
# within the heartbeat timeout: the coordinator names it, every other agent gets STOP(NODE_LOST), node 0 exits 125.
# The same through the fan-out tree (--relay-fanout 16: 31 relays, run by the simulator's agents that can relay with
# the real agent's link and relay code): the same checks, most agents behind a relay, and a silent agent behind a
# relay is lost within the heartbeat timeout as its relay reports it (--elastic: no agent knows its rank, the
# coordinator asks the first to join to relay and REDIRECTs the others). And the ranked join at 2,048 nodes: agent i
# is node rank i + 1, the layout's 44 relays relay from the start and every other agent goes to its relay directly:
# the coordinator holds no more sessions than the relays (<= fan-out + relays).
# And the descriptor limit: a coordinator raises its own to what the job needs, and says why when it cannot.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
have_nccl || { echo "1..0 # SKIP no libnccl.so.2 on this machine (node 0's worker needs ncclGetUniqueId)"; exit 0; }
SIM="$PLAUNCH_BUILD/tests/tools/pl_agentsim"
[ -x "$SIM" ] || { echo "Bail out! $SIM is not built (make unit)"; exit 1; }
plan 29

N=512 PORT=29611 HB=0.5 HBT=4
NS="pa$$"; NS=${NS:0:10}
in_ns() { ip netns exec "$NS" "$@"; }
ns_down() { local p; for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$NS" 2>/dev/null; return 0; }
trap 'ns_down; _bb_cleanup' EXIT
ip netns add "$NS" && ip -n "$NS" link set lo up || { echo "Bail out! cannot create a network namespace"; exit 1; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export PLAUNCH_TIMEOUT_MS=180000 # node 0's worker waits for the whole world at its barrier: a loaded 2-core machine
NODE0_OPTS=()
# node0 NAME: the real plaunch (the coordinator and one nccl_id worker) in the background; its pid in $T/NAME.pid
node0() {
    in_ns "$PLAUNCH" --nnodes $N --node-rank 0 --relay-fanout "${FANOUT:-auto}" "${NODE0_OPTS[@]}" --master 127.0.0.1:$PORT --nproc-per-node 1 --rdzv-timeout 240 \
        --heartbeat $HB --heartbeat-timeout $HBT --quiet --log-dir "$T/$1" "$PLAUNCH_BUILD/bin/nccl_id" \
        >"$T/$1.out" 2>"$T/$1.err" &
    echo $! >"$T/$1.pid"
}
# wait_pid PID SECONDS: sets $wrc to its exit status, 124 when it still runs after SECONDS (then it is killed)
wait_pid() {
    local n=0
    while alive "$1" && [ $n -lt $(($2 * 10)) ]; do sleep 0.1; n=$((n + 1)); done
    if alive "$1"; then kill_reap "$1"; wrc=124; else wait "$1"; wrc=$?; fi
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# scenario NAME SIM-ARGS...: node 0 and the simulator; $src: the simulator's status, $wrc node 0's, $out what the
# simulator printed, $line its results line
scenario() {
    local name=$1
    shift
    node0 "$name"
    timeout -k 5 300 ip netns exec "$NS" "$SIM" --master 127.0.0.1:$PORT --agents $((N - 1)) --heartbeat $HB \
        --heartbeat-timeout $HBT --deadline 240 --relay-fanout "${FANOUT:-auto}" "$@" >"$T/sim.$name" \
        2>"$T/sim.$name.err"
    src=$?
    wait_pid "$(cat "$T/$name.pid")" 60
    out=$(cat "$T/sim.$name")
    line=$(grep '^agentsim agents=' <<<"$out")
    echo "# $line"
    [ "$src" = 0 ] || { grep -h 'FAILED' "$T/sim.$name" | head -5; head -8 "$T/sim.$name.err"; } | sed 's/^/# sim: /' >&2
}

# 1. the rendezvous: ranks, ids, barrier, heartbeats, the end
scenario a --settle 0 --hb-window 1
is "$src" 0 "511 simulated agents and node 0 form a job of $N nodes; every check of the simulator passes"
is "$wrc" 0 "node 0 (the coordinator and its worker) ends with status 0"
is "$(field world "$line")" $N "every agent's ASSIGN says a world of $N ranks"
like "$out" "check ok: 511 of 511 agents assigned, each a distinct node rank and its own contiguous range of 1 ranks" \
    "511 distinct node ranks, one contiguous range of ranks each, no two overlapping"
r0=$(grep -h ' world ' "$T/a/workerlog.0" 2>/dev/null | head -1)
is "$(awk '{print $2}' <<<"$r0")" "0/$N" "node 0's worker holds rank 0: with the agents' $((N - 1)) disjoint ranks, the world"
for key in world pipeline; do
    mine=$(grep -h " $key " "$T/a/workerlog.0" 2>/dev/null | head -1 | awk '{print $4}')
    theirs=$(sed -n "s/^agentsim id $key //p" <<<"$out")
    ok $([ ${#mine} = 256 ] && [ "$mine" = "$theirs" ]; echo $?) "id '$key': every agent holds the bytes node 0's worker got"
done
like "$out" "check ok: 511 of 511 agents got the coordinator's BYE" "every agent gets the coordinator's BYE at the end"

# 2. the last agent falls silent once the job runs: lost within the heartbeat timeout
scenario b --silent 1
is "$src" 0 "one agent of $((N - 1)) falls silent: every check of the simulator passes"
like "$out" "check ok: 510 of 510 live agents got STOP\(NODE_LOST\) after 1 went silent" \
    "every live agent gets STOP(NODE_LOST)"
det=$(field lost_detect_s "$line")
ok $(awk -v d="${det:--1}" -v t=$HBT -v h=$HB 'BEGIN { exit !(d >= t - h && d <= t + 3) }'; echo $?) \
    "... ${det:-?} s after it fell silent: the heartbeat timeout ($HBT s), not before, not much after"
is "$wrc" 125 "node 0 ends with status 125: a node lost in a fixed-size job"
log=$(cat "$T/b/$PLOG" 2>/dev/null)
like "$log" "node [0-9]+ \(sim-0*510, [0-9.]+\) lost: no message for [0-9.]+ s \(--heartbeat-timeout $HBT\)" \
    "the coordinator's log names the silent agent and why it was lost"
is "$(grep -Eo 'node [0-9]+ \([^)]*\) lost: ' <<<"$log" | sort -u | wc -l)" 1 "... and no other node"

# 3. the fan-out tree: 31 relays of up to 22 agents each
FANOUT=16
scenario c --settle 0 --hb-window 1 --elastic
is "$src $wrc" "0 0" "through 31 relays: every check of the simulator passes, node 0 ends with status 0"
like "$out" "check ok: 511 of 511 agents assigned, each a distinct node rank and its own contiguous range of 1 ranks" \
    "... 511 distinct node ranks, one contiguous range of ranks each"
is "$(field relays "$line")" 31 "31 agents relay (the coordinator asked the first to join)"
ok $([ "$(field via_relays "$line")" -ge 450 ]; echo $?) "$(field via_relays "$line") agents were sent to a relay"
mine=$(grep -h " world " "$T/c/workerlog.0" 2>/dev/null | head -1 | awk '{print $4}')
ok $([ ${#mine} = 256 ] && [ "$mine" = "$(sed -n 's/^agentsim id world //p' <<<"$out")" ]; echo $?) \
    "id 'world': every agent, behind a relay or not, holds node 0's bytes"
like "$(cat "$T/c/$PLOG")" "coordinator: 512 nodes form a tree: 31 relays of about 16 nodes each" \
    "the coordinator's log says it forms a tree"

# 4. the last agent (behind a relay) falls silent: its relay reports it after the heartbeat timeout
scenario d --silent 1 --elastic
det=$(field lost_detect_s "$line")
is "$src $wrc" "0 125" "a silent agent behind a relay: every live agent gets STOP(NODE_LOST); node 0 ends with 125"
ok $(awk -v d="${det:--1}" -v t=$HBT -v h=$HB 'BEGIN { exit !(d >= t - h && d <= t + 3) }'; echo $?) \
    "... ${det:-?} s after it fell silent: the heartbeat timeout ($HBT s), as its relay saw it"
like "$(cat "$T/d/$PLOG" 2>/dev/null)" "node [0-9]+ \(sim-0*510, [0-9.]+\) lost: no message for [0-9.]+ s \(--heartbeat-timeout $HBT\) \(its relay, sim-[0-9]+, says\)" \
    "the coordinator's log names the silent agent and its relay"
FANOUT=auto

# 5. the ranked join: 2,048 nodes that know their ranks and hosts (--node-hosts: node 0, then agent i at 127.1.0.0 + i)
N=2048 NODE0_OPTS=(--node-hosts "127.0.0.1,127.1.[0-6].[0-255],127.1.7.[0-254]")
scenario e --settle 0 --hb-window 1
NODE0_OPTS=() N=512
is "$src $wrc" "0 0" "2,048 ranked nodes: every check of the simulator passes, node 0 ends with status 0"
is "$(field relays "$line") $(field via_relays "$line")" "44 0" "44 agents relay (ranks 1-44, from the start); none was redirected"
census=$(grep -ao 'census of generation 0: .*' "$T/e/$PLOG" | head -1)
echo "# $census"
is "$census" "census of generation 0: 44 sessions here (44 relays, 0 other nodes), 2003 nodes behind relays, 0 fell back from their relay, 0 REDIRECTs sent" \
    "the coordinator holds the 44 relays' sessions only (<= fan-out 46 + 44 relays); 2,003 nodes are behind them"
is "$(grep -v 'census of generation' "$T/e/$PLOG" | grep -c 'REDIRECT')" 0 "... and its log shows no REDIRECT"

# 6. a descriptor limit below what 512 nodes need (512 + 2 x 256 + 256): raised as root; explained without
# CAP_SYS_RESOURCE. Nobody joins: --rdzv-timeout 1 ends each run.
fdrun() { # fdrun NAME [setpriv...]: node 0 under a hard limit of 1100 descriptors
    local name=$1
    shift
    (ulimit -n 1100 && ulimit -Hn 1100 && timeout -k 5 60 ip netns exec "$NS" "$@" "$PLAUNCH" --nnodes $N \
        --node-rank 0 --master 127.0.0.1:$PORT --nproc-per-node 1 --rdzv-timeout 1 --quiet --log-dir "$T/$name" \
        /bin/true) >/dev/null 2>&1
    cat "$T/$name/$PLOG" 2>/dev/null
}
# CAP_SYS_RESOURCE is bit 24 of the effective set (a container may lack it even as root)
if [ $(( 0x$(awk '/^CapEff/ {print $2}' /proc/self/status) >> 24 & 1 )) = 1 ]; then
    like "$(fdrun fd-root)" "coordinator: descriptor limit raised from 1100 to 1280 for $N nodes" \
        "with CAP_SYS_RESOURCE: the coordinator raises its descriptor limit past the hard limit to what $N nodes need"
    nocap=(setpriv --bounding-set -sys_resource)
else
    ok 0 "# SKIP no CAP_SYS_RESOURCE here: a limit cannot be raised past the hard one"
    nocap=()
fi
like "$(fdrun fd-nocap "${nocap[@]}")" "coordinator: $N nodes need about 1280 descriptors, \
but the limit is 1100 \(hard limit 1100, which this process may not raise\): nodes past about 588 will be refused; \
raise it with ulimit -n" "without CAP_SYS_RESOURCE: the log says how many nodes it can take and how to raise the limit"
done_testing
