#!/bin/bash
# spares.t: hot spares (--spares) with real agents in network namespaces: three nodes for a two-node world with
# --spares 1. The agent of an active node killed: the spare takes its node rank at the next generation, the world
# stays 2, the other node keeps its rank, nothing of the dead node runs on; a node whose workers fail two
# generations in a row is swapped out for the spare; a node beyond the spares is refused.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 25

NS="ps$$"; NS=${NS:0:8}; NET=75; PORT=29475
netns_down "$NS" 7 >/dev/null 2>&1
trap 'mn_kill_all; netns_down "$NS" 7; _bb_cleanup' EXIT
netns_up "$NS" 7 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export OUTDIR=$T

# The worker: says who it is in each generation; FAIL_NODE's workers fail in generations below FAIL_UNTIL;
# generation 0 (or, failing, the ones before FAIL_UNTIL) runs until stopped, the generation after it ends well.
cat >w.sh <<'W'
#!/bin/bash
echo "$EPOCHREALTIME node=$NODEID node_rank=$PLAUNCH_NODE_RANK rank=$RANK world=$WORLD_SIZE" \
    > "$OUTDIR/start.$PLAUNCH_GENERATION.$NODEID"
echo $$ > "$OUTDIR/wpid.$PLAUNCH_GENERATION.$NODEID"
if [ "$NODEID" = "${FAIL_NODE:-}" ] && [ "$PLAUNCH_GENERATION" -lt "${FAIL_UNTIL:-0}" ]; then
    for i in $(seq 300); do [ -e "$OUTDIR/go" ] && break; sleep 0.1; done # the spare is there
    exit 1
fi
[ "$PLAUNCH_GENERATION" -ge "${LAST_GEN:-1}" ] && exit 0
sleep 300
W
chmod +x w.sh
reset() { mn_kill_all; rm -rf start.* wpid.* go log[1-7]; }
node() { local i=$1; shift; NODEID=$i mn_node "$i" --nnodes 2 --spares 1 --nproc-per-node 1 "$@" ./w.sh; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
wait_log() { # wait_log FILE TEXT [SECONDS]
    local n=0
    until grep -aq -- "$2" "$1" 2>/dev/null; do [ $n -ge $((${3:-20} * 10)) ] && return 1; sleep 0.1; n=$((n + 1)); done
}
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" 2>/dev/null; }

# 1. nodes 1 and 2 run generation 0; node 3, later, stands by as the spare
reset
node 1; node 2
wait_for 2 "start.0.*" 30; ok $? "nodes 1 and 2 run generation 0"
node 3
wait_log log3/$PLOG "standing by as a spare"; ok $? "node 3, joining third, stands by as a spare"
ok $([ ! -e start.0.3 ]; echo $?) "... and runs no worker"
like "$(cat log1/$PLOG)" "spare 1: .* stands by" "the coordinator's log lists the spare"
NODEID=4 mn_node 4 --nnodes 2 --spares 1 --nproc-per-node 1 ./w.sh
mn_wait 4 30
is "$wrc" 2 "a fourth node is refused (exit 2): the job has its nodes and its spares"
like "$(cat err4)" "already has its 2 nodes and its spares" "... saying so"

# 2. the agent of node 2 killed: the spare takes its node rank at once
r2=$(field start.0.2 node_rank); r1=$(field start.0.1 node_rank); w2=$(cat wpid.0.2)
t0=$(date +%s%N)
kill_reap "$(cat pid.2)"
wait_for 2 "start.1.*" 20; ok $? "the next generation runs on two nodes"
el=$(ms_since "$t0")
echo "# kill of node 2's agent -> generation 1 running with the spare: $el ms (heartbeat timeout 2.5 s)"
is "$(field start.1.3 node_rank) $(field start.1.1 node_rank)" "$r2 $r1" \
    "the spare takes node 2's node rank ($r2); node 1 keeps its own ($r1)"
is "$(cat start.* | sed -n 's/.* world=//p' | sort -u | tr '\n' ' ')" "2 " "the world size is 2 in every generation"
ok $([ "$(field start.1.3 rank)" = "$(field start.0.2 rank)" ]; echo $?) "... and the spare's worker has node 2's RANK"
until_ok 10 bash -c "! kill -0 $w2 2>/dev/null"; ok $? "no worker of the killed node is left"
like "$(cat log1/$PLOG)" "spare .* takes node rank $r2, [0-9.]* s after" "the coordinator logs the swap and its time"
mn_wait 1 30; a=$wrc; mn_wait 3 30
is "$a $wrc" "0 0" "node 1 and the former spare finish the job"
like "$(cat log1/$PLOG)" "spares: 0 of --spares 1 standing by at the end .*1 swap: generation 1: node rank $r2" \
    "the end-of-job summary lists the swap"

# 3. node 2's workers fail two generations in a row: the node is swapped out for the spare (and stands by)
reset
LAST_GEN=2 node 1 --max-restarts 5; FAIL_NODE=2 FAIL_UNTIL=2 LAST_GEN=2 node 2 --max-restarts 5
wait_for 2 "start.0.*" 30
LAST_GEN=2 node 3 --max-restarts 5
wait_log log3/$PLOG "standing by as a spare"
touch go
wait_for 2 "start.2.*" 30; ok $? "after two failures of node 2, generation 2 runs on two nodes"
is "$(ls start.2.* 2>/dev/null | tr '\n' ' ')" "start.2.1 start.2.3 " "... on nodes 1 and 3: node 2 is swapped out"
mn_wait 1 30; a=$wrc; mn_wait 2 30; b=$wrc; mn_wait 3 30
is "$a $b $wrc" "0 0 0" "the job ends well on every node, the swapped-out one too"

# 4. elastic --nnodes 1:2 with a spare: a lost node is replaced, the job does not shrink
reset
node 1 --nnodes 1:2; node 2 --nnodes 1:2
wait_for 2 "start.0.*" 30
node 3 --nnodes 1:2
wait_log log3/$PLOG "standing by as a spare"; ok $? "elastic 1:2 at its MAX: a third node stands by as a spare"
kill_reap "$(cat pid.2)"
wait_for 2 "start.1.*" 20; ok $? "node 2 killed: generation 1 runs on two nodes, the spare in, no shrink"
is "$(cat start.* | sed -n 's/.* world=//p' | sort -u | tr '\n' ' ')" "2 " "... the world size stays 2"
mn_wait 1 30; a=$wrc; mn_wait 3 30
is "$a $wrc" "0 0" "... and the job ends well"

# 5. the fan-out tree (--relay-fanout 2): a 2-node job with 5 spares is 7 nodes, two of which relay; the spares
# sent to a relay stand by through it; an active relay killed: a spare takes its rank, its nodes come back through
# the coordinator
reset
tree=(--spares 5 --relay-fanout 2)
node 1 "${tree[@]}"; node 2 "${tree[@]}"; node 3 "${tree[@]}"
wait_log log1/$PLOG "2 of 2 relays ready" 30
wait_for 2 "start.0.*" 30
for i in 4 5 6 7; do node $i "${tree[@]}"; done
n=0; for i in 4 5 6 7; do wait_log log$i/$PLOG "standing by as a spare" && n=$((n + 1)); done
behind=$(grep -l 'sends this node to relay' log[4-7]/plaunch*.log 2>/dev/null | wc -l)
is "$n $behind" "4 2" "four more nodes stand by as spares, two of them behind a relay"
victim=$(ls start.0.* | sed -n 's/^start\.0\.\([2-7]\)$/\1/p' | head -1)
relays=$(grep -l 'relaying for up to' log[2-7]/plaunch*.log 2>/dev/null | sed 's|^log\([0-9]*\)/.*|\1|' | tr '\n' ' ')
kill_reap "$(cat pid.$victim)"
wait_for 2 "start.1.*" 30; ok $? "active node $victim killed (relays: $relays): generation 1 runs on two nodes with a spare"
is "$(cat start.1.* | sed -n 's/.* world=//p' | sort -u | tr '\n' ' ')" "2 " "... at world size 2"
rcs=""; for i in 1 2 3 4 5 6 7; do [ "$i" = "$victim" ] && continue; mn_wait $i 30; rcs="$rcs$wrc "; done
is "$rcs" "0 0 0 0 0 0 " "the job ends well on the six other nodes, the spares left standing by too"
done_testing
