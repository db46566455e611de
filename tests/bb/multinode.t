#!/bin/bash
# multinode.t: three nodes in network namespaces with different worker counts: contiguous ranks, one consistent
# environment, identical NCCL ids across nodes; a lost coordinator takes every agent and worker down; a node whose
# workers are done ends with the job's status when a stop signal comes before the job's end.
. "$(dirname "$0")/lib.sh"
have_nccl || { echo "1..0 # SKIP no libnccl.so.2 on this machine (its workers need ncclGetUniqueId)"; exit 0; }
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 21

NS="pm$$"; NS=${NS:0:8}; NET=5; PORT=29411
netns_down "$NS" 3 >/dev/null 2>&1
trap 'netns_down "$NS" 3; _bb_cleanup' EXIT
netns_up "$NS" 3 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export OUTDIR=$T EX="$PLAUNCH_BUILD/bin/nccl_id"

cat >worker.sh <<'W'
#!/bin/bash
env > "$OUTDIR/env.$RANK"
exec "$EX" world pipeline > "$OUTDIR/ids.$RANK"
W
chmod +x worker.sh

# node I NPROC ARGS...: plaunch on host I as one of three nodes (mn_node of mnlib.sh)
node() { local i=$1 n=$2; shift 2; mn_node "$i" --nnodes 3 --nproc-per-node "$n" "$@"; }
val() { sed -n "s/^$1=//p" "$2"; }

# Node 3 starts first and node 1 (the coordinator) last: the rendezvous must not depend on the order.
node 3 3 ./worker.sh; node 2 2 ./worker.sh
wait_for 2 "log[23]/$PLOG" 10 # both are up and trying to reach a coordinator that does not exist yet
node 1 1 ./worker.sh
mn_wait 1 30; rc1=$wrc; mn_wait 2 30; rc2=$wrc; mn_wait 3 30; rc3=$wrc
is "$rc1 $rc2 $rc3" "0 0 0" "three nodes (1, 2 and 3 workers) run the job and exit 0"
is "$(cat env.* | sed -n 's/^RANK=//p' | sort -n | tr '\n' ' ')" "0 1 2 3 4 5 " "ranks 0..5, unique and contiguous"
bad=""
for r in 0 1 2 3 4 5; do
    case $r in 0) node=0 lw=1 lr=0 ;; 1 | 2) node=1 lw=2 lr=$((r - 1)) ;; *) node=2 lw=3 lr=$((r - 3)) ;; esac
    for kv in WORLD_SIZE=6 GROUP_WORLD_SIZE=3 GROUP_RANK=$node PLAUNCH_NODE_RANK=$node LOCAL_WORLD_SIZE=$lw \
        LOCAL_RANK=$lr PADDLE_TRAINERS_NUM=6 PADDLE_NNODES=3 "MASTER_ADDR=$(netns_addr "$NS" 1)"; do
        grep -qx "$kv" "env.$r" || bad="$bad rank$r:$kv"
    done
    mine=$(val PADDLE_TRAINER_ENDPOINTS env.$r | cut -d, -f$((r + 1)))
    [ "$(val PADDLE_CURRENT_ENDPOINT env.$r)" = "$mine" ] || bad="$bad rank$r:current-endpoint"
    [ "${mine%:*}" = "$(netns_addr "$NS" $((node + 1)))" ] || bad="$bad rank$r:endpoint-host"
done
is "$bad" "" "node ranks in address order, local ranks and sizes right on every rank"
for k in MASTER_PORT PADDLE_TRAINER_ENDPOINTS PLAUNCH_JOB_ID TORCHELASTIC_RUN_ID PADDLE_MASTER; do
    is "$(for r in 0 1 2 3 4 5; do val $k env.$r; done | sort -u | wc -l)" 1 "$k is the same on every node"
done
is "$(awk '$3 == "world" {print $4}' ids.* | sort -u | wc -l) $(awk '$3 == "pipeline" {print $4}' ids.* | sort -u | wc -l)" \
    "1 1" "every rank on every node got the same NCCL id bytes per key"
ok $([ "$(awk '$3 == "world" {print $4}' ids.0)" != "$(awk '$3 == "pipeline" {print $4}' ids.0)" ]; echo $?) \
    "the ids of the two keys differ"
like "$(cat log1/$PLOG)" "node 2: .*ranks 3-5" "the coordinator logs the assignment"

# A lost coordinator: agents stop their workers and exit non-zero within the heartbeat timeout.
rm -f pid.* wpid.*
cat >sleeper.sh <<'W'
#!/bin/bash
echo $$ > "$OUTDIR/wpid.$RANK"
sleep 300
W
chmod +x sleeper.sh
for i in 1 2 3; do node $i 1 --heartbeat 0.2 --heartbeat-timeout 1 ./sleeper.sh; done
wait_for 3 "wpid.*" 20; ok $? "three nodes run a long job"
kill_reap "$(cat pid.1)"
t0=$(date +%s.%N)
mn_wait 2 10; rc2=$wrc; mn_wait 3 10; rc3=$wrc
el=$(echo "$(date +%s.%N) - $t0" | bc)
ok $([ "$rc2" != 0 ] && [ "$rc2" != 124 ] && [ "$rc3" != 0 ] && [ "$rc3" != 124 ]; echo $?) \
    "coordinator killed: both agents exit non-zero ($rc2, $rc3) after ${el}s"
ok $(echo "$el < 4" | bc | grep -qx 1; echo $?) "... within the heartbeat timeout (1 s) plus a margin"
workers_left() { local f; for f in wpid.*; do alive "$(cat "$f")" && return 0; done; return 1; }
until_ok 10 eval '! workers_left'
left=0; workers_left && left=1
is "$left" 0 "no worker survives on any node"
like "$(cat log2/$PLOG)" "lost the coordinator" "the agent's log says it lost the coordinator"

# No credentials on the coordinator: it creates a token and prints the command for the other nodes.
rm -f pid.*
HOME=$T PLAUNCH_TOKEN= ip netns exec "${NS}1" "$PLAUNCH" --nnodes 2 --master "$MASTER" --log-dir "$T/log1" \
    --nproc-per-node 1 true >"$T/out1" 2>"$T/err1" &
echo $! > pid.1
for _ in $(seq 1 100); do grep -q 'PLAUNCH_TOKEN=' err1 && break; sleep 0.05; done
cmd=$(grep -m1 'PLAUNCH_TOKEN=' err1 | sed 's/^ *//')
like "$cmd" "^PLAUNCH_TOKEN=[0-9a-f]{64} plaunch --nnodes 2 --master $MASTER .*true$" \
    "a coordinator without credentials prints the exact command for the other nodes"
tok=$(echo "$cmd" | sed 's/^PLAUNCH_TOKEN=\([0-9a-f]*\) .*/\1/')
HOME=$T PLAUNCH_TOKEN=$tok ip netns exec "${NS}2" "$PLAUNCH" --nnodes 2 --master "$MASTER" --log-dir "$T/log2" \
    --nproc-per-node 1 --quiet true >/dev/null 2>&1 &
echo $! > pid.2
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc
is "$r1 $r2" "0 0" "a node started with that token joins and the job runs"
like "$(cat "$T/err1")" "created a token" "the coordinator says it created the token"

# A stop signal to a node whose workers are done (Slurm's --kill-on-bad-exit sends one to every node once the
# first exits with the job's failure): the node waits for the job's end and exits with its status, not 143.
rm -rf pid.* go log1 log2
cat >late.sh <<'W'
#!/bin/bash
[ "$RANK" = 1 ] && exit 0
until [ -e "$OUTDIR/go" ]; do sleep 0.02; done
exit 7
W
chmod +x late.sh
mn_node 1 --nnodes 2 --nproc-per-node 1 ./late.sh; mn_node 2 --nnodes 2 --nproc-per-node 1 ./late.sh
until_ok 20 grep -qs "all 1 worker exited 0" "log2/$PLOG"
kill -TERM "$(cat pid.2)"
until_ok 10 grep -qs "waiting up to .* for the job's end" "log2/$PLOG"
touch go
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc
is "$r1 $r2" "7 7" "SIGTERM to a node whose workers are done, then a failure elsewhere: both nodes exit 7"
rm -rf pid.* go log1 log2
mn_node 1 --nnodes 2 --nproc-per-node 1 ./late.sh; mn_node 2 --nnodes 2 --nproc-per-node 1 ./late.sh
until_ok 20 grep -qs "all 1 worker exited 0" "log2/$PLOG"
kill -TERM "$(cat pid.2)"
until_ok 10 grep -qs "waiting up to .* for the job's end" "log2/$PLOG"
kill -TERM "$(cat pid.2)"
mn_wait 2 3
is "$wrc" 143 "... a second SIGTERM ends that node at once (143)"
touch go
mn_wait 1 20
mn_kill_all
done_testing
