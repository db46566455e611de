#!/bin/bash
# ncclid.t: libplaunch hands every rank of a generation the same NCCL unique id (real ncclGetUniqueId) per key;
# a key the coordinator refuses fails the call at once, with the reason.
. "$(dirname "$0")/lib.sh"
have_nccl || { echo "1..0 # SKIP no libnccl.so.2 on this machine (its workers need ncclGetUniqueId)"; exit 0; }
plan 11
EX="$PLAUNCH_BUILD/bin/nccl_id"

run_plaunch --nproc-per-node 4 --tee all "$EX" world pipeline
is "$rc" 0 "4 workers get ids for two keys and pass a barrier"
ids_world=$(printf '%s\n' "$out" | awk '$5 == "world" {print $6}' | sort -u)
ids_pipe=$(printf '%s\n' "$out" | awk '$5 == "pipeline" {print $6}' | sort -u)
is "$(printf '%s\n' "$out" | awk '$5 == "world"' | wc -l)" 4 "every rank printed the 'world' id"
is "$(printf '%s\n' "$ids_world" | wc -l)$(printf '%s\n' "$ids_pipe" | wc -l)" "11" "identical bytes on every rank, per key"
ok $([ ${#ids_world} = 256 ] && [ "$ids_world" != "$ids_pipe" ]; echo $?) "128-byte ids that differ between keys"
ok $([ "$ids_world" != "$(printf '%0256d' 0)" ]; echo $?) "the id is not all zeros"

cat >twice.sh <<'W'
#!/bin/bash
"$EX" world pipeline || exit 1
[ "$PLAUNCH_GENERATION" = 0 ] && [ "$RANK" = 1 ] && exit 5
exit 0
W
chmod +x twice.sh
EX=$EX run_plaunch --nproc-per-node 2 --tee all --max-restarts 1 ./twice.sh
g0=$(grep -h ' world ' log/workerlog.0 | head -1 | awk '{print $4}')
g1=$(grep -h ' world ' log/workerlog.0 | tail -1 | awk '{print $4}')
ok $([ "$rc" = 0 ] && [ -n "$g0" ] && [ "$g0" != "$g1" ]; echo $?) "a new generation gets a new id"

PLAUNCH_TIMEOUT_MS=1500 run_plaunch --nproc-per-node 2 sh -c '[ "$RANK" = 0 ] && sleep 5; exec "$0" world x' "$EX"
like "$err" "no answer from the plaunch agent .* within 1500 ms" "a rank whose rank 0 never publishes times out with a message"

# 1224 keys, 1024 allowed per generation: the 1025th call fails at once, naming the reason, and the 400 refusals
# (PUT and GET of 200 keys: whichever reaches the worker first ends its call) cost the log a few lines. NCCL_COMM_ID makes ncclGetUniqueId encode that address
# instead of starting a bootstrap thread per id.
PW="$PLAUNCH_BUILD/tests/tools/pl_worker"
NCCL_COMM_ID=127.0.0.1:1 PLAUNCH_TIMEOUT_MS=30000 run_plaunch --nproc-per-node 1 --tee all \
    sh -c '"$0" ids:1224; exit 0' "$PW"
why="plaunch refused NCCL_ID_(PUT|GET) 'id-1024' of rank 0: too many NCCL id keys in generation 0: at most 1024"
like "$out" "key id-1024 failed after [0-9]+ ms: $why" "the 1025th key is refused, and the worker's call says why"
like "$out" "ids: 200 of 1224 failed, the slowest failure took [0-9]+ ms" "every key past 1024 is refused"
slowest=$(printf '%s\n' "$out" | sed -n 's/.*the slowest failure took \([0-9]*\) ms.*/\1/p')
ok $([ -n "$slowest" ] && [ "$slowest" -lt 5000 ]; echo $?) \
    "each refusal arrives at once (slowest ${slowest:-?} ms; the timeout is 30 s)"
lines=$(grep -c "refused" log/plaunch.log)
ok $([ "$lines" -le 8 ]; echo $?) "400 refusals make $lines lines of plaunch.log (at most 8)"
done_testing
