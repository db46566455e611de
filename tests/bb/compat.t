#!/bin/bash
# compat.t: what torchrun and paddle.distributed.launch users bring: --standalone, --master-addr/--master-port
# (and their underscore forms), Paddle's --ips and --rank, and torchrun's TORCHELASTIC_ERROR_FILE, which the
# root-cause block quotes when a failed rank wrote one (on its own node or another).
. "$(dirname "$0")/lib.sh"
plan 30

export OUTDIR=$T
cat >dump.sh <<'W'
#!/bin/sh
env > "$OUTDIR/env.$RANK"
W
cat >torchfail.sh <<'W'
#!/bin/sh
# The failing rank leaves what torch's @record writes (the JSON error file), then exits 1; others wait.
if [ "$RANK" != "${FAIL_RANK:-1}" ]; then touch "$OUTDIR/ready.$RANK"; exec sleep 30; fi
case "${ERRFILE:-torch}" in
torch)
    m="RuntimeError: CUDA out of memory on rank $RANK"
    tb='Traceback (most recent call last):\n  File \"train.py\", line 7, in <module>\n    step()\n'
    printf '{"message": {"message": "%s", "extraInfo": {"py_callstack": "%s%s\\n", "timestamp": "1764700000"}}}' \
        "$m" "$tb" "$m" >"$TORCHELASTIC_ERROR_FILE" ;;
junk) printf 'oops \033[2J not json' >"$TORCHELASTIC_ERROR_FILE" ;;
esac
echo "rank $RANK gives up"
exit 1
W
chmod +x dump.sh torchfail.sh
val() { sed -n "s/^$1=//p" "$2"; }

# ---- one node ----
run_plaunch --standalone --nproc-per-node 2 ./dump.sh
is "$rc $(val WORLD_SIZE env.1) $(val GROUP_WORLD_SIZE env.1)" "0 2 1" "--standalone: a one-node job of 2 workers"
run_plaunch --standalone --nnodes 2 --master-addr 198.18.254.1 ./dump.sh
like "$rc $err" "^2 .*--standalone runs a one-node job, but --nnodes asks for several nodes" \
    "--standalone with --nnodes 2: exit 2, naming the contradiction"
rm -f env.*
run_plaunch --ips 127.0.0.1 --nproc-per-node 2 ./dump.sh
is "$rc $(val WORLD_SIZE env.1) $(val GROUP_WORLD_SIZE env.1)" "0 2 1" "--ips with this host's one address: a one-node job"
run_plaunch --ips 198.18.254.1,198.18.254.2 ./dump.sh
like "$rc $err" "^2 .*none of these addresses belongs to this host \(it has [^)]*127\.0\.0\.1" \
    "--ips without an address of this host: exit 2, listing this host's addresses"
like "$err" "give this node's position with --rank R" "... and the way out"
rm -f env.*
run_plaunch --master-port 29517 --nproc-per-node 2 ./dump.sh
is "$rc $(val MASTER_PORT env.0) $(val MASTER_PORT env.1)" "0 29517 29517" \
    "torchrun's one-node --master-port P: the workers' MASTER_PORT is P (its static rendezvous)"

# ---- TORCHELASTIC_ERROR_FILE on one node ----
run_plaunch --nproc-per-node 2 --log-dir "$T/l" ./torchfail.sh
is "$rc" 1 "a rank that wrote torch's error file and exited 1: exit 1"
like "$err" "^  error file    : $T/l/error.1.json \(TORCHELASTIC_ERROR_FILE\)$" "the root-cause block names the file"
like "$err" "^    > RuntimeError: CUDA out of memory on rank 1$" "... quotes its message"
like "$err" "^    >   File \"train.py\", line 7, in <module>$" "... and the traceback's last lines"
is "$(printf '%s\n' "$err" | grep -c 'CUDA out of memory')" 1 "the message is quoted once (not again from the traceback)"
like "$err" "^    \| rank 1 gives up$" "the log's last lines still follow"

ERRFILE=junk run_plaunch --nproc-per-node 2 --log-dir "$T/l" ./torchfail.sh
is "$rc" 1 "an error file of garbage: the exit status is still the worker's"
like "$err" "^    > \(not torch's JSON error file; it begins: oops \?\[2J not json\)$" \
    "... it is named as not torch's JSON, with control characters defused"

# Generation 1 must not find generation 0's file: plaunch removes it before each generation starts.
cat >regen.sh <<'W'
#!/bin/sh
[ "$PLAUNCH_GENERATION" = 0 ] && exec ./torchfail.sh
[ -e "$TORCHELASTIC_ERROR_FILE" ] && echo present >"$OUTDIR/gen1.$RANK" || echo absent >"$OUTDIR/gen1.$RANK"
W
chmod +x regen.sh
run_plaunch --nproc-per-node 2 --max-restarts 1 --log-dir "$T/l" ./regen.sh
is "$rc $(cat gen1.1 2>/dev/null)" "0 absent" "a restart removes the failed generation's error file first"

# ---- two nodes in network namespaces ----
. "$PLAUNCH_SRC/scripts/netns.sh"
if [ "$(id -u)" != 0 ]; then
    for i in $(seq 16 30); do ok 0 "# SKIP network namespaces need root"; done
    done_testing
fi
NS="pc$$"; NS=${NS:0:8}; NET=11
netns_down "$NS" 2 >/dev/null 2>&1
trap 'netns_down "$NS" 2; _bb_cleanup' EXIT
netns_up "$NS" 2 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
A1=$(netns_addr "$NS" 1) A2=$(netns_addr "$NS" 2)
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# node I ARGS...: plaunch on host I in the background; pid in $T/pid.I, stderr in $T/err.I
node() {
    local i=$1; shift
    ip netns exec "$NS$i" "$PLAUNCH" --log-dir "$T/log$i" "$@" >"$T/out.$i" 2>"$T/err.$i" &
    echo $! >"$T/pid.$i"
}
# finish I: waits (at most 30 s) for node I; its exit code in $wrc (124: still running, then killed)
finish() {
    local pid n=0
    pid=$(cat "$T/pid.$1")
    while alive "$pid" && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
    if alive "$pid"; then kill -9 "$pid"; wait "$pid"; wrc=124; else wait "$pid"; wrc=$?; fi
}

# Paddle: the same --ips on both hosts; each finds its rank by its own address, the coordinator is the first.
rm -f env.*
node 2 --ips "$A1,$A2" --nproc-per-node 1 ./dump.sh
node 1 --ips "$A1,$A2" --nproc-per-node 1 ./dump.sh
finish 1; r1=$wrc; finish 2; r2=$wrc
is "$r1 $r2" "0 0" "--ips $A1,$A2 on both hosts: a two-node job, both exit 0"
is "$(val GROUP_RANK env.0) $(val GROUP_RANK env.1) $(val WORLD_SIZE env.1)" "0 1 2" \
    "each host's rank is its position in --ips"
is "$(val MASTER_ADDR env.1) $(val PADDLE_CURRENT_ENDPOINT env.1 | cut -d: -f1)" "$A1 $A2" \
    "MASTER_ADDR is the first address; each node advertises its own"
like "$(cat "$T/err.2")" "coordinator $A1:6170" "the coordinator listens on the first address at the default port"

# Paddle's --rank names the node's position itself.
rm -f env.*
node 1 --ips "$A1,$A2" --rank 0 --nproc-per-node 1 ./dump.sh
node 2 --ips "$A1,$A2" --rank 1 --nproc-per-node 1 ./dump.sh
finish 1; r1=$wrc; finish 2; r2=$wrc
is "$r1 $r2 $(val GROUP_RANK env.1)" "0 0 1" "--ips with --rank: the given node ranks"

# torchrun: --master_addr/--master_port (underscores) on one host, dashes on the other; rank 1 (host 2) writes
# the error file and fails: the coordinator's root-cause block quotes it, fetched from host 2's agent.
rm -f ready.*
FAIL_RANK=1 node 2 --nnodes 2 --master-addr "$A1" --master-port 29461 --node-rank 1 --nproc-per-node 1 ./torchfail.sh
FAIL_RANK=1 node 1 --nnodes 2 --master_addr "$A1" --master_port 29461 --node_rank 0 --nproc-per-node 1 ./torchfail.sh
finish 1; r1=$wrc; finish 2; r2=$wrc
is "$r1 $r2" "1 1" "torchrun's --master-addr HOST --master-port PORT: rank 1 fails, both hosts exit 1"
e1=$(cat "$T/err.1")
like "$e1" "^  error file    : error.1.json in the --log-dir of [^ ]+ \(TORCHELASTIC_ERROR_FILE\)$" \
    "the coordinator names the other host's error file"
like "$e1" "^    > RuntimeError: CUDA out of memory on rank 1$" "... and quotes it"
like "$e1" "^plaunch: every node exits with 1$" "a two-node job says every node exits"
is "$(cat "$T/log2/error.1.json" | head -c 12)" '{"message": ' "the error file stays in host 2's log directory"

# Ctrl-C on the coordinator's host of a two-node job: whole lines in multi-node words, on both hosts.
cat >sleeper.sh <<'W'
#!/bin/sh
touch "$OUTDIR/ready.$RANK"
exec sleep 30
W
chmod +x sleeper.sh
rm -f ready.*
node 1 --ips "$A1,$A2" --nproc-per-node 1 ./sleeper.sh
node 2 --ips "$A1,$A2" --nproc-per-node 1 ./sleeper.sh
wait_for 2 "ready.*" 30
kill -INT "$(cat "$T/pid.1")"
finish 1; r1=$wrc; finish 2; r2=$wrc
is "$r1 $r2" "130 130" "SIGINT to the coordinator's plaunch: both hosts exit 130"
e1=$(cat "$T/err.1") e2=$(cat "$T/err.2")
like "$e1" "^plaunch: job [^ ]+ stopped: the coordinator's plaunch on [^ ]+ got SIGINT$" "the coordinator names the signal"
like "$e1" "^plaunch: every node exits with 130$" "... and says every node exits with 130"
like "$e2" "^plaunch: job [^ ]+ stopped: the coordinator's plaunch on [^ ]+ got SIGINT$" "the other host says why it stopped"
is "$(printf '%s\n%s\n' "$e1" "$e2" | grep -v -e '^plaunch: ' -e '^  ' -e '^$' -e '^    PLAUNCH_TOKEN')" "" \
    "every line on both terminals is a whole 'plaunch:' line"
done_testing
