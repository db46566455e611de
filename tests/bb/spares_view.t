#!/bin/bash
# spares_view.t: the hot spares in the one goodput model, as users read it: three nodes for a two-node world with
# --spares 1; the spare standing by shows in status.json, `plaunch status` and /metrics (plaunch_spares); the
# agent of an active node killed, the spare takes its node rank, and then status.json and `plaunch status LOG_DIR`
# (live and after the job) show the swap, goodput.jsonl's node-loss incident names the replacement (replaced_by),
# and the coordinator node's /metrics counts it (plaunch_spare_swaps_total 1), `promtool check metrics` clean; a
# node whose workers fail two generations in a row, swapped out, stands by in the state swapped_out.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
command -v promtool >/dev/null || apt-get install -y prometheus >/dev/null 2>&1
command -v promtool >/dev/null || { echo "1..0 # SKIP promtool is not installed and apt-get cannot install it"; exit 0; }
plan 16

mn_up 90 3 pv 29490
MPORT=9490 # in node 1's own namespace: no other process there
export OUTDIR=$T

# generations before LAST_GEN (default 1) run until stopped, FAIL_NODE's fail in those before FAIL_UNTIL once the
# spare is there; generation LAST_GEN waits for $OUTDIR/go and ends well
cat >w.sh <<'W'
#!/bin/bash
echo "node=$NODEID node_rank=$PLAUNCH_NODE_RANK" > "$OUTDIR/start.$PLAUNCH_GENERATION.$NODEID"
if [ "$NODEID" = "${FAIL_NODE:-}" ] && [ "$PLAUNCH_GENERATION" -lt "${FAIL_UNTIL:-0}" ]; then
    for i in $(seq 300); do [ -e "$OUTDIR/spare" ] && break; sleep 0.1; done
    exit 1
fi
[ "$PLAUNCH_GENERATION" -lt "${LAST_GEN:-1}" ] && exec sleep 300
for i in $(seq 1200); do [ -e "$OUTDIR/go" ] && exit 0; sleep 0.1; done
exit 1
W
chmod +x w.sh
node() { local i=$1; shift; NODEID=$i mn_node "$i" --nnodes 2 --spares 1 --nproc-per-node 1 "$@" ./w.sh; }
wait_log() { # wait_log FILE TEXT [SECONDS]
    local n=0
    until grep -aq -- "$2" "$1" 2>/dev/null; do [ $n -ge $((${3:-20} * 10)) ] && return 1; sleep 0.1; n=$((n + 1)); done
}
scrape() { ip netns exec "${NS}1" curl -sf "http://127.0.0.1:$MPORT/metrics"; }

node 1 --metrics-port $MPORT; node 2
wait_for 2 "start.0.*" 30
node 3
wait_log log3/$PLOG "standing by as a spare" 30; ok $? "node 3 stands by as the spare"
until_ok 20 sh -c "jq -e '.spares_standby == 1 and (.spares | length) == 1' log1/status.json >/dev/null 2>&1"
ok $? "status.json lists the spare standing by"
like "$("$PLAUNCH" status log1)" "spares: 1 standing by \\(.+\\), 0 swaps" "plaunch status prints the spares line"
until_ok 20 sh -c "ip netns exec ${NS}1 curl -sf http://127.0.0.1:$MPORT/metrics |
    grep -Eq '^plaunch_spares\\{.*state=\"standby\"\\} 1$'"
ok $? "/metrics on the coordinator's node: plaunch_spares{state=\"standby\"} 1"

# the agent of node 2 killed: the spare takes its node rank
r2=$(sed -n 's/.* node_rank=//p' start.0.2)
kill_reap "$(cat pid.2)"
wait_for 2 "start.1.*" 30; ok $? "generation 1 runs on two nodes, the spare in"
until_ok 20 sh -c "jq -e '.swaps_total == 1' log1/status.json >/dev/null 2>&1"
is "$(jq -r '.swaps[0] | "\(.generation) \(.node) \(.after_s > 0)"' log1/status.json 2>/dev/null) \
$(jq -r '.spares_standby' log1/status.json)" "1 $r2 true 0" \
    "status.json: the swap (generation 1, node rank $r2, its time), no spare left standing by"
like "$("$PLAUNCH" status log1)" "spares: 0 standing by, 1 swap: node rank $r2 -> .+ in [0-9.]+ s \\(generation 1\\)" \
    "plaunch status shows the swap while the job runs"
until_ok 20 sh -c "ip netns exec ${NS}1 curl -sf http://127.0.0.1:$MPORT/metrics | grep -Eq '^plaunch_spare_swaps_total(\\{.*\\})? 1$'"
ok $? "/metrics: plaunch_spare_swaps_total 1"
scrape >scrape.txt
pout=$(promtool check metrics <scrape.txt 2>&1); prc=$?
is "$prc:$pout" "0:" "promtool check metrics passes on the coordinator's exposition"

touch go
mn_wait 1 60; a=$wrc; mn_wait 3 60
is "$a $wrc" "0 0" "node 1 and the former spare finish the job"
is "$(jq -r 'select(.type == "incident" and .cause == "node-loss") | "\(.node) \(.replaced_by != null)"' \
    log1/goodput.jsonl)" "$r2 true" "goodput.jsonl: the node-loss incident names the spare that replaced it"
like "$("$PLAUNCH" status log1)" "spares: 0 standing by, 1 swap: node rank $r2 -> " \
    "plaunch status of the finished job still shows the swap"

# node 2's workers fail two generations in a row: swapped out for the spare, it stands by as swapped_out
mn_kill_all; rm -rf start.* go log[1-3]
LAST_GEN=2 node 1 --max-restarts 5 --metrics-port $MPORT; FAIL_NODE=2 FAIL_UNTIL=2 LAST_GEN=2 node 2 --max-restarts 5
wait_for 2 "start.0.*" 30
LAST_GEN=2 node 3 --max-restarts 5
wait_log log3/$PLOG "standing by as a spare" 30
touch spare
wait_for 2 "start.2.*" 30
until_ok 20 sh -c "jq -e '.spares_swapped_out == 1 and .spares[0].state == \"swapped_out\" and .swaps_total == 1' \
    log1/status.json >/dev/null 2>&1"
ok $? "node 2 swapped out: status.json lists it standing by as swapped_out, and the swap"
until_ok 20 sh -c "ip netns exec ${NS}1 curl -sf http://127.0.0.1:$MPORT/metrics |
    grep -Eq '^plaunch_spares\\{.*state=\"swapped_out\"\\} 1$'"
ok $? "/metrics: plaunch_spares{state=\"swapped_out\"} 1"
touch go
mn_wait 1 60; a=$wrc; mn_wait 2 60; b=$wrc; mn_wait 3 60
is "$a $b $wrc" "0 0 0" "the job ends well on every node"
is "$(jq -r 'select(.type == "incident" and .replaced_by != null) | .cause' log1/goodput.jsonl)" "worker-failure" \
    "goodput.jsonl: the failure that swapped node 2 out names its replacement"
done_testing
