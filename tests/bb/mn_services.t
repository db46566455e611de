#!/bin/bash
# mn_services.t: worker services across nodes (network namespaces, TLS): a refusal from the coordinator reaches
# the worker on another node at once, with its reason; a barrier timeout on one node decides for a rank that
# arrives late on another.
. "$(dirname "$0")/lib.sh"
have_nccl || { echo "1..0 # SKIP no libnccl.so.2 on this machine (its workers need ncclGetUniqueId)"; exit 0; }
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 7

NS="ps$$"; NS=${NS:0:8}; NET=13; PORT=29481
netns_down "$NS" 2 >/dev/null 2>&1
trap 'mn_kill_all; netns_down "$NS" 2; _bb_cleanup' EXIT
netns_up "$NS" 2 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
PW="$PLAUNCH_BUILD/tests/tools/pl_worker"

# Rank 0 runs on node 2, whose agent talks to the coordinator on node 1 over TLS: the 1025th key's refusal
# travels coordinator -> agent -> worker. (NCCL_COMM_ID: no bootstrap thread per id.)
mn_node 1 --nnodes 2 --node-rank 1 true
NCCL_COMM_ID=127.0.0.1:1 PLAUNCH_TIMEOUT_MS=30000 mn_node 2 --nnodes 2 --node-rank 0 --tee all \
    sh -c '"$0" ids:1100; exit 0' "$PW"
mn_wait 1 60; rc1=$wrc; mn_wait 2 60; rc2=$wrc
is "$rc1 $rc2" "0 0" "two nodes run the job to the end"
why="plaunch refused NCCL_ID_(PUT|GET) 'id-1024' of rank 0: too many NCCL id keys"
like "$(cat "$T/out2" "$T/err2")" "key id-1024 failed after [0-9]+ ms: $why" \
    "the worker on the other node is told why its 1025th key was refused"
slowest=$(sed -n 's/.*the slowest failure took \([0-9]*\) ms.*/\1/p' "$T/out2")
ok $([ -n "$slowest" ] && [ "$slowest" -lt 5000 ]; echo $?) \
    "  ... at once (slowest refusal ${slowest:-?} ms, the timeout is 30 s)"

# Rank 0 (node 1) gives up on barrier 'late' after 0.3 s; rank 1 (node 2) arrives after that: TIMEOUT at once.
mn_node 1 --nnodes 2 --node-rank 0 --tee all sh -c '"$0" barrier:late:300 mark:"$1" barrier:late:20000; exit 0' \
    "$PW" "$T/r0"
mn_node 2 --nnodes 2 --node-rank 1 --tee all sh -c '"$0" after:"$1" barrier:late:1000 barrier:late:20000; exit 0' \
    "$PW" "$T/r0"
mn_wait 1 60; rc1=$wrc; mn_wait 2 60; rc2=$wrc
is "$rc1 $rc2" "0 0" "two nodes run the barrier job to the end"
like "$(cat "$T/out1")" "rank 0 barrier late: TIMEOUT after [0-9]+ ms: barrier 'late' timed out" \
    "rank 0 is told TIMEOUT when its 0.3 s run out"
like "$(cat "$T/out2")" "rank 1 barrier late: TIMEOUT after [0-9]+ ms: barrier 'late' timed out" \
    "rank 1 on the other node, arriving later, is told TIMEOUT for that barrier"
is "$(cat "$T/out1" "$T/out2" | grep -c 'barrier late: OK')" 2 "the next round of the key completes on both nodes"
done_testing
