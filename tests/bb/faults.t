#!/bin/bash
# faults.t: fault tolerance across nodes in network namespaces: job-wide restarts with a new NCCL id, node loss
# (elastic and fixed), short and long link cuts, a lost coordinator, a node joining an elastic job, a spent budget.
. "$(dirname "$0")/lib.sh"
have_nccl || { echo "1..0 # SKIP no libnccl.so.2 on this machine (its workers need ncclGetUniqueId)"; exit 0; }
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 26

NS="pf$$"; NS=${NS:0:8}; NET=9; PORT=29431
netns_down "$NS" 4 >/dev/null 2>&1
trap 'mn_kill_all; netns_down "$NS" 4; _bb_cleanup' EXIT
netns_up "$NS" 4 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export OUTDIR=$T EX="$PLAUNCH_BUILD/bin/nccl_id"

# The worker: records its environment and NCCL id per generation; generation 0 runs until stopped unless
# QUICK is set, later generations end at once.
cat >w.sh <<'W'
#!/bin/bash
g=$PLAUNCH_GENERATION
env > "$OUTDIR/env.$g.$RANK"
echo $$ > "$OUTDIR/wpid.$g.$PLAUNCH_NODE_RANK.$LOCAL_RANK"
"$EX" world x | awk '$3 == "world" {print $4}' > "$OUTDIR/id.$g.$RANK"
[ "$g" -ge "${RUN_UNTIL_GEN:-1}" ] && exit 0
sleep "${SLEEP:-300}"
W
chmod +x w.sh
reset() { mn_kill_all; rm -f env.* wpid.* id.* ; rm -rf log1 log2 log3 log4; }
uniq_count() { cat "$@" 2>/dev/null | sort -u | wc -l; }
ranks_of() { cat env."$1".* 2>/dev/null | sed -n 's/^RANK=//p' | sort -n | tr '\n' ' '; }

# 1. a worker killed on node 2: every node restarts into generation 1 with a new NCCL id
reset
for i in 1 2 3; do mn_node $i --nnodes 3 --nproc-per-node 2 --max-restarts 1 ./w.sh; done
wait_for 6 "wpid.0.*" 20; ok $? "three nodes run generation 0"
kill -9 "$(cat wpid.0.1.0)"
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc; mn_wait 3 20; r3=$wrc
is "$r1 $r2 $r3" "0 0 0" "kill -9 of a worker on node 2: the job restarts and succeeds on every node"
is "$(ranks_of 1)" "0 1 2 3 4 5 " "generation 1 ran every rank on all three nodes"
is "$(uniq_count id.1.*)" 1 "generation 1: one NCCL id on every rank"
ok $([ "$(cat id.0.0)" != "$(cat id.1.0)" ]; echo $?) "generation 1's id is new"

# 2. the agent of node 3 killed, elastic 2:3: the job goes on with two nodes
reset
for i in 1 2 3; do mn_node $i --nnodes 2:3 --nproc-per-node 2 ./w.sh; done
wait_for 6 "wpid.0.*" 20; ok $? "elastic job of three nodes runs"
t0=$(date +%s%N)
kill_reap "$(cat pid.3)"
wait_for 4 "env.1.*" 15; ok $? "agent of node 3 killed: generation 1 starts"
echo "# detection + restart: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc
is "$r1 $r2" "0 0" "the two survivors finish the job"
is "$(ranks_of 1)" "0 1 2 3 " "generation 1: ranks contiguous over two nodes"
is "$(grep -h '^WORLD_SIZE=' env.1.* | sort -u)" "WORLD_SIZE=4" "generation 1: world size 4"
until_ok 10 eval '[ "$(mn_alive_in "wpid.0.2.*")" = 0 ]'; is "$(mn_alive_in 'wpid.0.2.*')" 0 "no worker of node 3 survives its agent"

# 3. the same loss with a fixed --nnodes 3: a clean failure with the summary
reset
for i in 1 2 3; do mn_node $i --nnodes 3 --nproc-per-node 1 ./w.sh; done
wait_for 3 "wpid.0.*" 20
kill_reap "$(cat pid.3)"
mn_wait 1 15; r1=$wrc; mn_wait 2 15; r2=$wrc
ok $([ "$r1" != 0 ] && [ "$r1" != 124 ] && [ "$r2" != 0 ] && [ "$r2" != 124 ]; echo $?) \
    "fixed --nnodes 3 loses node 3: both others fail cleanly ($r1, $r2)"
like "$(cat log1/$PLOG)" "node 2 .* was lost in generation 0" "the coordinator's summary names the lost node"
like "$(cat log2/$PLOG)" "was lost in generation 0" "node 2's plaunch.log has the same summary"
until_ok 10 eval '[ "$(mn_alive_in "wpid.0.*")" = 0 ]'; is "$(mn_alive_in 'wpid.0.*')" 0 "no worker survives anywhere"

# 4. node 3's link down for 1 s (below the 2.5 s timeout): the same generation goes on
reset
for i in 1 2 3; do SLEEP=4 mn_node $i --nnodes 3 --nproc-per-node 1 ./w.sh; done
wait_for 3 "wpid.0.*" 20
netns_link_down "$NS" 3; sleep 1; netns_link_up "$NS" 3
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc; mn_wait 3 20; r3=$wrc
is "$r1 $r2 $r3" "0 0 0" "a 1 s link cut: the job ends well"
is "$(ls env.1.* 2>/dev/null | wc -l)" 0 "... in generation 0 (no restart)"

# 5. node 3's link down for 10 s, elastic 2:3: node 3 is dropped, the others restart without it
reset
for i in 1 2 3; do mn_node $i --nnodes 2:3 --nproc-per-node 1 ./w.sh; done
wait_for 3 "wpid.0.*" 20
netns_link_down "$NS" 3
mn_wait 1 15; r1=$wrc; mn_wait 2 15; r2=$wrc; mn_wait 3 15; r3=$wrc
netns_link_up "$NS" 3
is "$r1 $r2" "0 0" "a 10 s link cut: nodes 1 and 2 go on without node 3"
ok $([ "$r3" != 0 ] && [ "$r3" != 124 ]; echo $?) "node 3's agent stops and exits non-zero ($r3)"
until_ok 10 eval '[ "$(mn_alive_in "wpid.0.2.*")" = 0 ]'; is "$(mn_alive_in 'wpid.0.2.*')" 0 "node 3's workers are gone"

# 6. the coordinator's node unplugged: every other agent stops its workers and exits non-zero in time
reset
for i in 1 2 3; do mn_node $i --nnodes 3 --nproc-per-node 1 ./w.sh; done
wait_for 3 "wpid.0.*" 20
netns_link_down "$NS" 1
t0=$(date +%s%N)
mn_wait 2 10; r2=$wrc; mn_wait 3 10; r3=$wrc
el=$(( ($(date +%s%N) - t0) / 1000000 ))
netns_link_up "$NS" 1
ok $([ "$r2" != 0 ] && [ "$r2" != 124 ] && [ "$r3" != 0 ] && [ "$r3" != 124 ] && [ $el -lt 4500 ]; echo $?) \
    "coordinator unplugged: agents exit non-zero ($r2, $r3) after $el ms (timeout 2.5 s)"
until_ok 10 eval '[ "$(mn_alive_in "wpid.0.[12].*")" = 0 ]'
is "$(mn_alive_in 'wpid.0.1.*') $(mn_alive_in 'wpid.0.2.*')" "0 0" "their workers are gone"

# 7. a fourth node joins a --nnodes 2:4 job of three: a scale-up restart to four
reset
for i in 1 2 3; do mn_node $i --nnodes 2:4 --nproc-per-node 1 ./w.sh; done
wait_for 3 "wpid.0.*" 20
mn_node 4 --nnodes 2:4 --nproc-per-node 1 ./w.sh
for i in 1 2 3 4; do mn_wait $i 20; eval r$i=$wrc; done
is "$r1 $r2 $r3 $r4" "0 0 0 0" "node 4 joins: all four finish"
is "$(ranks_of 1)" "0 1 2 3 " "generation 1 has four ranks"

# 8. the restart budget spent: the job fails with the summary on every node
reset
cat >fail.sh <<'W'
#!/bin/bash
[ "$RANK" = 1 ] && { echo "rank 1 gives up in generation $PLAUNCH_GENERATION"; exit 9; }
sleep 300
W
chmod +x fail.sh
for i in 1 2; do mn_node $i --nnodes 2 --nproc-per-node 1 --max-restarts 2 ./fail.sh; done
mn_wait 1 30; r1=$wrc; mn_wait 2 30; r2=$wrc
is "$r1 $r2" "9 9" "budget of 2 restarts spent: every node exits with the worker's code"
like "$(cat log2/$PLOG)" "rank 1 gives up in generation 2" "node 2's log holds the summary with the last lines"
done_testing
