#!/bin/bash
# nodeloss.t: how fast a node is declared lost, and that a node still there is not: an agent killed (the kernel
# closes its connection) is replaced within a short grace, not the heartbeat timeout; a connection reset under
# load (the agent starts a new session) and a brief link cut keep the generation; a silent host is still lost by
# the heartbeat timeout. Three nodes in network namespaces, elastic --nnodes 2:3, default heartbeats.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
command -v ss >/dev/null || { echo "1..0 # SKIP ss (iproute2) is needed to reset a connection"; exit 0; }
plan 14

NS="pn$$"; NS=${NS:0:8}; NET=11; PORT=29481
netns_down "$NS" 3 >/dev/null 2>&1
HOGS=()
stop_hogs() { local p; for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; done; HOGS=(); }
trap 'stop_hogs; mn_kill_all; netns_down "$NS" 3; _bb_cleanup' EXIT
netns_up "$NS" 3 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export OUTDIR=$T

# The worker: records its generation; generation 0 runs until stopped, later ones end at once.
cat >w.sh <<'W'
#!/bin/bash
echo "$EPOCHREALTIME" > "$OUTDIR/start.$PLAUNCH_GENERATION.$PLAUNCH_NODE_RANK"
[ "$PLAUNCH_GENERATION" -ge 1 ] && exit 0
sleep "${SLEEP:-300}"
W
chmod +x w.sh
reset() { stop_hogs; mn_kill_all; rm -rf start.* log1 log2 log3; }
start3() { for i in 1 2 3; do mn_node $i --nnodes 2:3 --nproc-per-node 1 "$@" ./w.sh; done; wait_for 3 "start.0.*" 20; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
wait_log() { # wait_log FILE TEXT: 10 s at most
    local n=0
    until grep -aq -- "$2" "$1" 2>/dev/null; do [ $n -ge 100 ] && return 1; sleep 0.1; n=$((n + 1)); done
}
# busy N: N processes spinning on the CPU (a loaded machine) until reset
busy() { local i; for i in $(seq 1 "$1"); do (while :; do :; done) & HOGS+=($!); done; }

# 1. the agent of node 3 killed: its connection closes at once; the survivors restart quickly
reset
start3; ok $? "three nodes run generation 0"
t0=$(date +%s%N)
kill_reap "$(cat pid.3)"
wait_for 2 "start.1.*" 10; r=$?
el=$(ms_since "$t0")
ok $r "agent of node 3 killed: both survivors start generation 1"
echo "# kill -> survivors restarted: $el ms (heartbeat timeout 2.5 s; scripts/bench-restart-nodes.sh measures)"
ok $((el < 2000 ? 0 : 1)) "... in under 2 s, well inside the heartbeat timeout ($el ms)"
like "$(cat log1/$PLOG)" "lost: its connection closed \(the agent ended\?\) and it did not reconnect" \
    "the coordinator says the node's connection closed"
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc
is "$r1 $r2" "0 0" "the two survivors finish the job"

# 2. node 3's connection reset (as by a middlebox) on a loaded machine: its agent starts a new session and
# rejoins; nobody is lost, generation 0 goes on
reset
SLEEP=6 start3
busy 4
ip netns exec "${NS}3" ss -K dst "$(netns_addr "$NS" 1)" dport = "$PORT" >/dev/null 2>&1
ok $? "ss -K resets node 3's connection to the coordinator"
wait_log log1/$PLOG "reconnected; generation 0 goes on"
ok $? "the coordinator takes node 3 back on its new session"
stop_hogs
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc; mn_wait 3 20; r3=$wrc
is "$r1 $r2 $r3" "0 0 0" "a connection reset under load: every node ends well"
is "$(ls start.1.* 2>/dev/null | wc -l)" 0 "... in generation 0 (nobody was lost)"

# 3. node 3's link cut for 1 s (no connection closes): still generation 0
reset
SLEEP=5 start3
netns_link_down "$NS" 3; sleep 1; netns_link_up "$NS" 3
mn_wait 1 20; r1=$wrc; mn_wait 2 20; r2=$wrc; mn_wait 3 20; r3=$wrc
is "$r1 $r2 $r3" "0 0 0" "a 1 s link cut: every node ends well"
is "$(ls start.1.* 2>/dev/null | wc -l)" 0 "... in generation 0"

# 4. node 3 goes silent (its link stays down): lost by the heartbeat timeout, as before
reset
start3
t0=$(date +%s%N)
netns_link_down "$NS" 3
wait_for 2 "start.1.*" 10; r=$?
el=$(ms_since "$t0")
netns_link_up "$NS" 3
ok $r "node 3 silent: the survivors start generation 1"
ok $((el > 2000 && el < 4500 ? 0 : 1)) "... after the heartbeat timeout, not before and not much after ($el ms, 2.5 s)"
like "$(cat log1/$PLOG)" "lost: no message for" "the coordinator says the node fell silent"
done_testing
