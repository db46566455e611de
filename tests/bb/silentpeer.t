#!/bin/bash
# silentpeer.t: a program that accepts TCP connections on the coordinator's port and never answers (no ZeroMQ, no
# TLS). The agent gives each connection a handshake deadline (CONN_AUTH_MS + 5 s), then says the peer does not answer
# as a plaunch coordinator, and tries again only while a real one could still come (--rdzv-timeout): the real
# coordinator started there later is joined; a listener that stays makes the agent end at --rdzv-timeout saying no
# plaunch coordinator listens there.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
plan 7

N=2 NS="ps$$"; NS=${NS:0:8}; NET=33; PORT=29761
netns_down "$NS" $N >/dev/null 2>&1
trap 'kill_reap "$lpid" 2>/dev/null; mn_kill_all; netns_down "$NS" $N; _bb_cleanup' EXIT
netns_up "$NS" $N $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
lpid=
# silent: on host 1, accepts every connection on PORT and holds it, reading nothing, answering nothing
silent() {
    ip netns exec "${NS}1" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64)
print("listening", flush=True)
held = []
while True:
    c, _ = s.accept(); held.append(c)' "$(netns_addr "$NS" 1)" $PORT >"$T/silent.out" 2>&1 &
    lpid=$!
    until_ok 10 grep -q listening "$T/silent.out"
}
LOG2=log2/plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log
job=(--nnodes 2 --nproc-per-node 1 --token "$TOKEN")
wait_log() { # wait_log FILE TEXT SECONDS
    local n=0
    until grep -aEq -- "$2" "$1" 2>/dev/null; do [ $n -ge $(($3 * 20)) ] && return 1; sleep 0.05; n=$((n + 1)); done
}

# 1. the listener answers nothing; the real coordinator comes later: the agent joins it
silent
t0=$(date +%s%N)
mn_node 2 "${job[@]}" --rdzv-timeout 120 /bin/true
wait_log "$LOG2" "does not answer as a plaunch coordinator" 40; r=$?
el=$(( ($(date +%s%N) - t0) / 1000000 ))
ok $r "the agent says the peer does not answer as a plaunch coordinator (after $el ms)"
ok $([ "$el" -ge 14000 ] && [ "$el" -le 35000 ]; echo $?) "... after its handshake deadline (15 s), not before ($el ms)"
like "$(cat "$LOG2")" "took the connection but never finished the ZeroMQ handshake within 15 s" "... and says what it saw"
kill_reap "$lpid"; lpid=
mn_node 1 "${job[@]}" /bin/true
mn_wait 2 60; r2=$wrc
mn_wait 1 30
is "$r2 $wrc" "0 0" "the real coordinator started on that port later: the agent joins it, both nodes exit 0"
mn_kill_all; rm -rf log1 log2

# 2. the listener stays: the agent ends at --rdzv-timeout and names the problem
silent
t0=$(date +%s%N)
mn_node 2 "${job[@]}" --rdzv-timeout 25 /bin/true
mn_wait 2 60
el=$(( ($(date +%s%N) - t0) / 1000000 ))
is "$wrc" 125 "a listener that never answers: the agent ends with 125"
ok $([ "$el" -ge 24000 ] && [ "$el" -le 40000 ]; echo $?) "... at --rdzv-timeout 25 s ($el ms)"
like "$(cat "$LOG2")" "within --rdzv-timeout 25 s: the peer there took every connection but answered no TLS handshake: no plaunch coordinator listens there" \
    "... saying no plaunch coordinator listens there"
done_testing
