#!/bin/bash
# relay.t: the fan-out tree with real agents, one per network namespace: nine nodes with --relay-fanout 2 (three
# relays; the first nodes to join are asked, later ones are sent to a relay by the coordinator's REDIRECT). The job
# forms through the relays with distinct contiguous ranks and ends cleanly; a node behind a relay that falls silent
# is lost within the heartbeat timeout, reported by its relay; a relay killed or stopped: its nodes come back through
# the coordinator and an elastic job goes on without the relay alone; a peer with another token is refused by the
# relay; the same tree with a job CA.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 30

N=9 NS="pr$$"; NS=${NS:0:8}; NET=27; PORT=29731 HB=0.5 HBT=2.5
netns_down "$NS" $N >/dev/null 2>&1
trap 'mn_kill_all; netns_down "$NS" $N; _bb_cleanup' EXIT
netns_up "$NS" $N $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export OUTDIR=$T

mn_go_worker w.sh # records its rank for each generation, then waits for the file 'go'
COORD_LOG=log1/plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log
reset() { mn_kill_all; rm -rf start.* go log[0-9]*; }
# nodes FIRST LAST ARGS...: starts plaunch on hosts FIRST..LAST
nodes() { local i a=$1 b=$2; shift 2; for i in $(seq "$a" "$b"); do mn_node "$i" "$@" ./w.sh; done; }
# form ARGS...: the coordinator (host 1), then hosts 2-4 (they join first: relays), 5-6 (direct), 7-9 (the
# coordinator sends them to a relay); waits until all nine run generation 0
form() {
    nodes 1 1 "$@" # it owns the --master address: it hosts the coordinator
    nodes 2 4 "$@"
    wait_log "$COORD_LOG" "3 of 3 relays ready" 20 || return 1
    nodes 5 9 "$@"
    wait_for $N "start.0.*" 30
}
wait_log() { # wait_log FILE TEXT SECONDS
    local n=0
    until grep -aq -- "$2" "$1" 2>/dev/null; do [ $n -ge $(($3 * 20)) ] && return 1; sleep 0.05; n=$((n + 1)); done
}
behind() { grep -l 'sends this node to relay' log[0-9]*/plaunch*.log 2>/dev/null | sed 's|^log\([0-9]*\)/.*|\1|' | sort -n | tr '\n' ' '; }
ranks() { cat start.0.* 2>/dev/null | awk '{print $1}' | sort -n | tr '\n' ' '; }
tree=(--nnodes $N --nproc-per-node 1 --relay-fanout 2 --heartbeat $HB --heartbeat-timeout $HBT --token "$TOKEN")

# 1. the tree forms, runs and ends
reset
form "${tree[@]}"; ok $? "nine nodes in namespaces form a job through three relays: every worker runs generation 0"
is "$(ranks)" "0 1 2 3 4 5 6 7 8 " "ranks 0-8, each once"
like "$(cat "$COORD_LOG")" "coordinator: 9 nodes form a tree: 3 relays of about 2 nodes each" "the coordinator says it forms a tree"
is "$(grep -l 'relaying for up to' log[2-4]/plaunch*.log 2>/dev/null | wc -l)" 3 "the three first nodes to join relay"
behind_ok() { local b; b=$(behind); [ "$(wc -w <<<"$b")" = 3 ] && [ "$(awk '{print $1}' <<<"$b")" -ge 5 ]; }
ok $(behind_ok; echo $?) "three of the nodes that joined last were sent to a relay ($(behind))"
is "$(grep -c 'joined for generation 0 through relay' "$COORD_LOG")" 3 "the coordinator says they joined through a relay"
touch go
for i in $(seq 1 $N); do mn_wait "$i" 20; echo "$wrc" >"rc.$i"; done
is "$(cat rc.* | sort -u | tr '\n' ' ')" "0 " "every node exits 0 (the relays' nodes got their BYE through the relays)"
is "$(grep -h 'still hold a session' log[2-4]/plaunch*.log 2>/dev/null)" "" "... each relay ended once its nodes had closed their sessions"
is "$(mn_alive_in "$T/pid.*")" 0 "no plaunch left"

# 2. a node behind a relay falls silent (its agent stopped): its relay reports it within the heartbeat timeout
reset
form "${tree[@]}"; ok $? "the tree forms again"
victim=$(behind | awk '{print $1}')
t0=$(date +%s%N)
kill -STOP "$(cat "pid.$victim")"
wait_log "$COORD_LOG" "lost: no message for" 10; r=$?
el=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -CONT "$(cat "pid.$victim")" 2>/dev/null
ok $r "node $victim, stopped, is lost"
echo "# SIGSTOP -> lost at the coordinator: $el ms (--heartbeat-timeout $HBT s)"
ok $(awk -v e=$el -v t=$HBT 'BEGIN { exit !(e >= t * 1000 - 600 && e <= t * 1000 + 1500) }'; echo $?) \
    "... after the heartbeat timeout, not before, not much after ($el ms)"
like "$(cat "$COORD_LOG")" "lost: no message for [0-9.]+ s \(--heartbeat-timeout $HBT\) \(its relay, [^)]*, says\)" \
    "the coordinator's log names the silence and the relay that saw it"
for i in $(seq 1 $N); do [ "$i" = "$victim" ] || { mn_wait "$i" 20; echo "$wrc" >"rc.$i"; }; done
mn_wait 1 1
is "$wrc" 125 "a fixed-size job ends with 125 (a node was lost)"
like "$(cat "$COORD_LOG")" "root cause" "with the root cause"
mn_kill_all

# 3. a relay killed: its nodes' sessions there end at once, they come back through the coordinator; an elastic job
# goes on without the relay alone
elastic=(--nnodes 4:$N "${tree[@]:2}")
relay_of_first() { # the relay of the first node sent to one: its host number in $relay, its nodes in $kids
    raddr=$(grep -ho 'sends this node to relay tcp://[0-9.]*' log[5-9]/plaunch*.log | head -1 | sed 's|.*tcp://||')
    kids=$(grep -l "sends this node to relay tcp://$raddr:" log[5-9]/plaunch*.log | wc -l)
    relay=${raddr##*.}
}
reset
form "${elastic[@]}"; ok $? "an elastic tree (4:9) forms"
relay_of_first
kill -9 "$(cat "pid.$relay")"
wait_for 1 "start.1.*" 20; ok $? "relay $relay killed: the elastic job restarts (generation 1)"
wait_for $((N - 1)) "start.1.*" 10
echo "# relay $relay had $kids node(s) behind it; generation 1 runs on $(ls start.1.* | wc -l) node(s)"
is "$(ls start.1.* | wc -l)" $((N - 1)) "... on every node but the relay: its $kids node(s) came back through the coordinator"
touch go
mn_wait 1 30
is "$wrc" 0 "the coordinator's node ends the elastic job with 0"
mn_kill_all

# 3b. a relay falls silent (stopped): the coordinator loses it after the heartbeat timeout, and its nodes, which
# heard nothing through it for as long, ask the coordinator to serve them directly: the elastic job goes on without
# the relay alone
reset
form "${elastic[@]}"; ok $? "an elastic tree (4:9) forms again"
relay_of_first
kill -STOP "$(cat "pid.$relay")"
wait_log "$COORD_LOG" "lost with it" 10; ok $? "relay $relay stopped: the coordinator loses it, and its nodes for now"
gen_of() { local g; for g in 1 2 3 4 5 6; do [ "$(ls start.$g.* 2>/dev/null | wc -l)" = "$1" ] && return 0; done; return 1; }
until_ok 20 gen_of $((N - 1)); ok $? "its $kids node(s) come back through the coordinator: a generation runs on every node but the relay"
echo "# relay $relay had $kids node(s) behind it; generations: $(ls start.* | sed 's/^start\.\([0-9]*\)\..*/\1/' | sort | uniq -c | tr '\n' ' ')"
like "$(cat log[5-9]/plaunch*.log)" "no message through this node's relay for [0-9.]+ s \(--heartbeat-timeout $HBT\): asking the coordinator to serve it directly" \
    "... each says why it left its relay"
kill -CONT "$(cat "pid.$relay")" 2>/dev/null
touch go
mn_wait 1 30
is "$wrc" 0 "the coordinator's node ends the elastic job with 0"
mn_kill_all

# 4. a peer with another token, pointed at a relay, is refused there; the relay's log says so
reset
form "${tree[@]}"; ok $? "the tree forms"
rep=$(grep -Eo 'relays at tcp://[0-9.]+:[0-9]+' "$COORD_LOG" | head -1 | sed 's|relays at tcp://||')
ip netns exec "${NS}9" "$PLAUNCH" --nnodes $N --master "$rep" --token "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
    --rdzv-timeout 5 --quiet --log-dir "$T/rogue" /bin/true >/dev/null 2>&1
is "$?" 2 "an agent with another token, sent to a relay's port, is refused (exit 2)"
like "$(cat log[2-4]/plaunch*.log)" "relay: refused $(netns_addr "$NS" 9 | sed 's/\./\\./g'): TLS handshake failed" \
    "the relay logs the refusal"
touch go
for i in $(seq 1 $N); do mn_wait "$i" 20; echo "$wrc" >"rc.$i"; done
is "$(cat rc.* | sort -u | tr '\n' ' ')" "0 " "the job is not disturbed: every node exits 0"

# 5. the same tree with a job CA: relays serve with their node certificates
reset
CA=$T/ca
"$PLAUNCH" certs init "$CA" >/dev/null && "$PLAUNCH" certs issue "$CA" $(for i in $(seq 1 $N); do netns_addr "$NS" "$i"; done) >/dev/null
ca_tree=(--nnodes $N --nproc-per-node 1 --relay-fanout 2 --tls-dir "$CA")
form "${ca_tree[@]}"; r=$?
touch go
for i in $(seq 1 $N); do mn_wait "$i" 20; echo "$wrc" >"rc.$i"; done
is "$r $(behind_ok; echo $?) $(cat rc.* | sort -u | tr '\n' ' ')" "0 0 0 " "job CA: three nodes behind relays, every node exits 0"
is "$(mn_alive_in "$T/pid.*")" 0 "no plaunch left in any namespace"
done_testing
