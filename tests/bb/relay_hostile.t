#!/bin/bash
# relay_hostile.t: a host without the token against the fan-out tree (real agents, one per network namespace, and
# pl_hostile on a tenth). The coordinator answers a ClientHello with a REDIRECT before any authentication; what such
# a REDIRECT costs a relay is a reservation that ends with the node's session there or after CONN_AUTH_MS (10 s), one
# per address. So ClientHellos from a peer without the token, their connections held, neither fill the relays for
# longer than that nor use up the newcomers the coordinator takes directly: the nodes that come after still go
# through relays, and the coordinator's log counts the REDIRECTs that went unused (rate-limited lines).
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 11

N=9 H=10 NS="ph$$"; NS=${NS:0:8}; NET=31; PORT=29751
HOSTILE="$PLAUNCH_BUILD/tests/tools/pl_hostile"
netns_down "$NS" $H >/dev/null 2>&1
trap 'kill_reap "$hpid" 2>/dev/null; mn_kill_all; netns_down "$NS" $H; _bb_cleanup' EXIT
netns_up "$NS" $H $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export OUTDIR=$T
# the hostile host's twelve more addresses (198.18.NET.101-112): a flood from many sources
for a in $(seq 101 112); do ip -n "$NS$H" addr add "198.18.$NET.$a/24" dev eth0; done

cat >w.sh <<'W'
#!/bin/bash
echo "$RANK $WORLD_SIZE" > "$OUTDIR/start.$PLAUNCH_GENERATION.$PLAUNCH_NODE_RANK"
while [ ! -e "$OUTDIR/go" ]; do sleep 0.05; done
W
chmod +x w.sh
COORD_LOG=log1/plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log
hpid=
reset() { kill_reap "$hpid" 2>/dev/null; hpid=; mn_kill_all; rm -rf start.* go log[0-9]* h.out; }
nodes() { local i a=$1 b=$2; shift 2; for i in $(seq "$a" "$b"); do mn_node "$i" "$@" ./w.sh; done; }
wait_log() { # wait_log FILE TEXT SECONDS
    local n=0
    until grep -aEq -- "$2" "$1" 2>/dev/null; do [ $n -ge $(($3 * 20)) ] && return 1; sleep 0.05; n=$((n + 1)); done
}
behind() { grep -l 'sends this node to relay' log[0-9]*/plaunch*.log 2>/dev/null | sed 's|^log\([0-9]*\)/.*|\1|' | sort -n | tr '\n' ' '; }
joined() { grep -c 'joined for generation 0' "$COORD_LOG" 2>/dev/null; }
tree=(--nnodes $N --nproc-per-node 1 --relay-fanout 2 --heartbeat 0.5 --heartbeat-timeout 5 --token "$TOKEN")
# hostile ARGS...: pl_hostile from host 10 at the coordinator, in the background; its lines in h.out
hostile() {
    ip netns exec "$NS$H" "$HOSTILE" --endpoint "tcp://$MASTER" "$@" >h.out 2>&1 &
    hpid=$!
}
# the relays (hosts 2-4) and the two nodes the coordinator still takes directly (5-6)
start_tree() {
    nodes 1 1 "${tree[@]}"
    nodes 2 4 "${tree[@]}"
    wait_log "$COORD_LOG" "3 of 3 relays ready" 30 || return 1
    nodes 5 6 "${tree[@]}"
    until_ok 20 eval '[ "$(joined)" -ge 6 ]'
}
finish() { # lets the job end; every node's exit status in rc.*
    touch go
    for i in $(seq 1 $N); do mn_wait "$i" 30; echo "$wrc" >"rc.$i"; done
}

# 1. fourteen ClientHellos from one address, connections held: one reservation; the later nodes go through relays
reset
start_tree; ok $? "the relays are ready and the direct nodes joined"
hostile --stall 14 --full-hello --hold 40
until_ok 20 grep -q "opened:" h.out; ok $? "pl_hostile holds 14 connections that sent a whole ClientHello ($(head -1 h.out))"
wait_log "$COORD_LOG" "asked again before a session opened" 10; ok $? "the coordinator logs the address that asks again"
nodes 7 9 "${tree[@]}"
wait_for $N "start.0.*" 40; ok $? "the job forms with the flood's connections still open"
is "$(behind)" "7 8 9 " "the three later nodes went through relays"
wait_log "$COORD_LOG" "released a REDIRECT of 198\.18\.$NET\.$H to relay" 20; ok $? "the flood's reservation is released after its deadline"
n=$(grep -c 'asked again before' "$COORD_LOG")
ok $([ "$n" -ge 1 ] && [ "$n" -le 5 ]; echo $?) "... rate-limited: $n detailed lines for 13 repeats"
finish
is "$(cat rc.* | sort -u | tr '\n' ' ')" "0 " "every node exits 0"
like "$(cat "$COORD_LOG")" "coordinator: 17 REDIRECTs to relays, 14 never followed by a session there" \
    "the coordinator counts the REDIRECTs and the unused ones"

# 2. from thirteen addresses: the relays' room is reserved, but only until the reservations' deadline; the load then
# is what the nodes' sessions make it, and the later nodes go through relays
reset
start_tree; ok $? "the tree's first six nodes again"
binds=(); for a in $H $(seq 101 112); do binds+=(--bind "198.18.$NET.$a"); done
hostile --stall 14 --full-hello --hold 40 "${binds[@]}"
until_ok 20 grep -q "opened:" h.out
wait_log "$COORD_LOG" "released .*REDIRECT" 25; r=$?
nodes 7 9 "${tree[@]}"
wait_for $N "start.0.*" 40
is "$r $(behind)" "0 7 8 9 " "the flood's reservations end within their deadline; the later nodes go through relays"
finish
done_testing
