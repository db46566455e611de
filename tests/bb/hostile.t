#!/bin/bash
# hostile.t: what peers that never authenticate cost a coordinator (scaled down from the targets of
# docs/security.md; scripts/bench-hostile.sh runs the full size): a flood of frames that are not TLS is summed up
# in one line; stalled TLS handshakes, idle ZeroMQ connections and silent TCP connections from several addresses
# cost a bounded amount of memory and few log lines, are closed by the authentication deadline, and a good agent
# joins in the middle of it all and the job succeeds.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
HOSTILE="$PLAUNCH_BUILD/tests/tools/pl_hostile"
[ -x "$HOSTILE" ] || { echo "Bail out! $HOSTILE is missing: build it with make unit"; exit 1; }
plan 13

NS="ph$$"; NS=${NS:0:8}; NET=15; PORT=29491
netns_down "$NS" 3 >/dev/null 2>&1
kill_all() { local f; for f in "$T"/pid.*; do [ -e "$f" ] && kill_reap "$(cat "$f")"; done; }
trap 'kill_all; netns_down "$NS" 3; _bb_cleanup' EXIT
netns_up "$NS" 3 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
ATTACKER=$(netns_addr "$NS" 3)
# The attacker also speaks from eight more addresses, so that no per-address limit alone can stop it.
BINDS=()
for i in $(seq 100 107); do
    ip -n "${NS}3" addr add "198.18.$NET.$i/24" dev eth0 && BINDS+=(--bind "198.18.$NET.$i")
done
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
LOG=$T/log1/$PLOG
# Both nodes' worker waits for the go of the test (with its own deadline), so the job outlives the attack.
cat >w.sh <<W
#!/bin/bash
for _ in \$(seq 1 1200); do [ -e "$T/go" ] && exit 0; sleep 0.1; done
exit 1
W
chmod +x w.sh

node() { # node I: plaunch on host I in the background
    ip netns exec "$NS$1" "$PLAUNCH" --nnodes 2 --master "$MASTER" --nproc-per-node 1 --job-id hostile \
        --rdzv-timeout 120 --log-dir "$T/log$1" --quiet ./w.sh >"$T/out$1" 2>"$T/err$1" &
    echo $! >"$T/pid.$1"
}
wait_grep() { # wait_grep FILE REGEX SECONDS
    local n=0
    until grep -aqE -- "$2" "$1" 2>/dev/null; do [ $n -ge $(($3 * 10)) ] && return 1; sleep 0.1; n=$((n + 1)); done
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# hostile_lines: lines of the coordinator's log about unauthenticated peers
hostile_lines() { grep -acE "refused|closed|ignored" "$LOG"; }
wait_pid() { # wait_pid PID SECONDS: sets $wrc (124 when still running)
    local n=0
    while kill -0 "$1" 2>/dev/null && [ $n -lt $(($2 * 10)) ]; do sleep 0.1; n=$((n + 1)); done
    if kill -0 "$1" 2>/dev/null; then wrc=124; else wait "$1"; wrc=$?; fi
}

node 1
COORD=$(cat pid.1)
wait_grep "$LOG" "coordinator listening" 10 || echo "# the coordinator did not start: $(tail -3 err1)"
wait_grep "$LOG" "joined for generation 0: 1 of 2" 10
idle=$(rss_kib "$COORD")
peak=$idle
sample() { local r; r=$(rss_kib "$COORD"); [ "$r" -gt "$peak" ] && peak=$r; }

# 1. a flood: 100,000 frames that are not TLS, from one address, on connections reopened as they are closed
ip netns exec "${NS}3" "$HOSTILE" --endpoint "tcp://$MASTER" --flood 100000 >flood.out 2>&1
like "$(cat flood.out)" "flood: 100000 frames sent" "pl_hostile floods the coordinator with 100,000 frames"
sample
wait_grep "$LOG" "refused [0-9,]+ frames? from ${ATTACKER//./\\.} in the last" 15
ok $? "the flood is summed up: 'refused N frames from $ATTACKER in the last ...'"
is "$(grep -acE "refused [0-9,]+ frames? from ${ATTACKER//./\\.}" "$LOG")" 1 "... in one line"
flood_lines=$(grep -ac "${ATTACKER//./\\.}" "$LOG")
ok $((flood_lines <= 8 ? 0 : 1)) "the flood costs the log a few lines, not one per frame ($flood_lines)"

# 2. the siege: 2,000 stalled TLS handshakes, 2,000 idle ZeroMQ connections, 500 silent TCP connections from
# nine addresses, held for longer than the authentication deadline (10 s); a good agent joins meanwhile
n0=$(hostile_lines)
t0=$(date +%s)
ip netns exec "${NS}3" "$HOSTILE" --endpoint "tcp://$MASTER" "${BINDS[@]}" --stall 2000 --idle 2000 --raw 500 \
    --hold 14 >siege.out 2>&1 &
echo $! >pid.siege
wait_grep siege.out "^opened:" 60
echo "# $(grep '^opened:' siege.out)"
node 2
wait_grep "$LOG" "joined for generation 0: 2 of 2" 30
ok $? "a good agent joins while the siege goes on"
c0=$(cpu_ticks "$COORD")
while kill -0 "$(cat pid.siege)" 2>/dev/null; do sample; sleep 0.2; done
c1=$(cpu_ticks "$COORD")
echo "# $(grep '^held:' siege.out)"
like "$(cat siege.out)" "held: [0-9]+ of [0-9]+ connections closed by the peer within 14 s, 0 still open" \
    "every unauthenticated connection is closed by the deadline"
grow=$(( (peak - idle) / 1024 ))
echo "# coordinator RSS: idle $((idle / 1024)) MiB, peak $((peak / 1024)) MiB (+$grow MiB)"
if nm -D "$PLAUNCH" 2>/dev/null | grep -q __asan_init; then # its quarantine keeps what was freed
    _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - the coordinator's memory # SKIP AddressSanitizer build (+$grow MiB)"
else
    ok $((grow < 64 ? 0 : 1)) "the coordinator's memory stays within 64 MiB of its idle size (+$grow MiB)"
fi
secs=$(( $(date +%s) - t0 ))
lines=$(( $(hostile_lines) - n0 ))
echo "# $lines log lines about the siege in $secs s"
ok $((lines <= 5 * secs ? 0 : 1)) "the siege costs the log a few lines a second at most ($lines in $secs s)"
cpu=$(( (c1 - c0) * 1000 / $(getconf CLK_TCK) ))
ok $((cpu < 5000 ? 0 : 1)) "the coordinator does not spin on the held connections ($cpu ms of CPU in $secs s)"

touch go
wait_pid "$(cat pid.1)" 30; r1=$wrc
wait_pid "$(cat pid.2)" 30; r2=$wrc
is "$r1 $r2" "0 0" "the job succeeds on both nodes"
like "$(cat "$LOG")" "closed [0-9,]+ connections from [0-9.]+ in the last [0-9]+ s: unauthenticated" \
    "the closed connections are summed up per address"
is "$(for i in 1 2 3; do ip netns pids "$NS$i"; done)" "" "nothing is left running in any host"
is "$(grep -aE 'Sanitizer|runtime error:' err1 err2 | head -3)" "" "no sanitizer report"
done_testing
