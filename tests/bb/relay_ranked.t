#!/bin/bash
# relay_ranked.t: the ranked join, with real agents, one per network namespace: nine nodes that know their ranks
# and every node's host (--node-rank, --node-hosts) with --relay-fanout 2 form through the layout's relays (ranks
# 1-3, launcher/job/joblayout.h) without any REDIRECT: the coordinator holds only the relays' sessions (its census
# line says so) and the job runs and ends cleanly. A relay killed before its nodes join: they wait for it a bounded
# time, join the coordinator directly (logged), the relay's node comes back, and the job runs within the rendezvous
# timeout; the relay's place goes to a node that joins directly (re-planned: RELAY_START).
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 16

N=9 NS="pk$$"; NS=${NS:0:8}; NET=85; PORT=29741 HB=0.5 HBT=2.5 RDZV=60
netns_down "$NS" $N >/dev/null 2>&1
trap 'mn_kill_all; netns_down "$NS" $N; [ -z "${KEEP:-}" ] || cp -r "$T" "$KEEP"; _bb_cleanup' EXIT
netns_up "$NS" $N $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
HOSTS="198.18.$NET.[1-9]" # node rank r runs on host r + 1
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export OUTDIR=$T

mn_go_worker w.sh # records its rank for each generation, then waits for the file 'go'
LOGNAME_=plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log
COORD_LOG=log1/$LOGNAME_
reset() { mn_kill_all; rm -rf start.* go log[0-9]* rc.*; }
# nodes FIRST LAST: starts plaunch on hosts FIRST..LAST, host i with node rank i - 1
nodes() { local i; for i in $(seq "$1" "$2"); do mn_node "$i" "${tree[@]}" --node-rank $((i - 1)) ./w.sh; done; }
wait_log() { # wait_log FILE TEXT SECONDS
    local n=0
    until grep -aq -- "$2" "$1" 2>/dev/null; do [ $n -ge $(($3 * 20)) ] && return 1; sleep 0.05; n=$((n + 1)); done
}
ranks() { cat start.0.* 2>/dev/null | awk '{print $1}' | sort -n | tr '\n' ' '; }
census() { grep -ao 'census of generation 0: .*' "$COORD_LOG" | head -1; }
end_all() { touch go; for i in $(seq 1 $N); do mn_wait "$i" 30; echo "$wrc" >"rc.$i"; done; }
tree=(--nnodes $N --nproc-per-node 1 --relay-fanout 2 --node-hosts "$HOSTS" --heartbeat $HB --heartbeat-timeout $HBT
      --rdzv-timeout $RDZV --token "$TOKEN")

# 1. every node starts at once; each finds its relay from the layout
reset
nodes 1 $N
wait_for $N "start.0.*" 60; ok $? "nine ranked nodes in namespaces form a job through the layout's relays"
is "$(ranks)" "0 1 2 3 4 5 6 7 8 " "ranks 0-8, each once"
like "$(cat "$COORD_LOG")" "coordinator: ranked layout: relays are node ranks 1..3" "the coordinator plans the same layout"
is "$(census)" "census of generation 0: 3 sessions here (3 relays, 0 other nodes), 5 nodes behind relays, 0 fell back from their relay, 0 REDIRECTs sent" \
    "the coordinator holds only the three relays' sessions; the five other nodes are behind them; no REDIRECT"
is "$(grep -l 'relays for [12] nodes of the layout' log[2-4]/plaunch*.log 2>/dev/null | wc -l)" 3 \
    "ranks 1-3 relay from the start"
is "$(grep -l 'joins through its relay, rank [1-3]' log[5-9]/plaunch*.log 2>/dev/null | wc -l)" 5 \
    "ranks 4-8 go to their relay directly"
like "$(cat log5/plaunch*.log)" "joins through its relay, rank 1, at tcp://198.18.$NET.2:$((PORT + 1))" \
    "... rank 4 to rank 1's host at --master's port + 1"
is "$(grep -l 'sends this node to relay' log*/plaunch*.log 2>/dev/null | wc -l)" 0 "no node was redirected"
end_all
is "$(cat rc.* | sort -u | tr '\n' ' ')" "0 " "every node exits 0 (the relays' nodes got their BYE through the relays)"

# 2. relay rank 1 (host 2) is killed before its nodes (ranks 4 and 7) start: they fall back to the coordinator
reset
nodes 1 4
wait_log "$COORD_LOG" "joined for generation 0: 4 of 9" 30
kill -9 "$(cat pid.2)"; wait "$(cat pid.2)" 2>/dev/null
t0=$(date +%s)
nodes 5 $N
wait_log "log5/$LOGNAME_" "did not take it within" 30; ok $? "rank 4 gives up on its dead relay after a bounded wait"
like "$(cat log8/plaunch*.log)" "relay at tcp://198.18.$NET.2:$((PORT + 1)) \(the ranked layout's\) did not take it within 5.0 s: joining the coordinator directly" \
    "rank 7 too, and its log says where it goes"
nodes 2 2 # rank 1's node comes back (as a scheduler would restart it)
wait_for $N "start.0.*" $RDZV; ok $? "the job runs: every worker runs generation 0"
el=$(( $(date +%s) - t0 ))
ok $([ $el -lt $RDZV ]; echo $?) "... within the rendezvous timeout ($el s < $RDZV s)"
like "$(census)" "census of generation 0: 5 sessions here \(4 relays, 1 other node\), 3 nodes behind relays, 2 fell back from their relay" \
    "the coordinator counts the two nodes that fell back; the lost relay's place went to one of them (re-planned)"
like "$(cat "log5/$LOGNAME_" "log8/$LOGNAME_")" "relaying for up to [0-9]+ other nodes" \
    "... which the coordinator asked to relay (RELAY_START) when rank 1 was lost"
end_all
is "$(cat rc.* | sort -u | tr '\n' ' ')" "0 " "every node exits 0"
done_testing
