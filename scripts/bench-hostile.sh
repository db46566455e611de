#!/bin/bash
# bench-hostile.sh: what unauthenticated peers cost a coordinator, at the full size of docs/security.md's targets:
# 10,000 stalled TLS handshakes and 20,000 idle ZeroMQ connections from 100 addresses (tests/tools/pl_hostile, in
# network namespaces), then a flood of 100,000 frames that are not TLS. Prints the coordinator's memory growth over
# its idle size, the log lines the attack cost, the coordinator's CPU while the connections are held, and how long
# a good agent takes to join under the siege against the same join with no attack (the floor, this run). Twice:
# token mode with ClientHellos cut short, and job-CA mode with whole ClientHellos (the server answers, then waits).
# Targets: growth <= 64 MiB, a few log lines a second, the good agent joins. Needs root (namespaces).
# Usage: scripts/bench-hostile.sh [token|ca]...
set -euo pipefail
cd "$(dirname "$0")/.."
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(token ca)
[ "$(id -u)" = 0 ] || { echo "bench-hostile: needs root for network namespaces" >&2; exit 0; }
[ -x build/bin/plaunch ] && [ -x build/tests/tools/pl_hostile ] || make -s all unit
. scripts/netns.sh
PLOG="plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log" # a multi-node job's launcher log on this host
P=$PWD/build/bin/plaunch H=$PWD/build/tests/tools/pl_hostile
NS="pb$$"; NS=${NS:0:8}; NET=17; PORT=29501
tmp=$(mktemp -d /tmp/plaunch-bh.XXXXXX)
cleanup() { # without -e: netns_down's last step fails when the namespace took the link with it
    set +e
    for f in "$tmp"/pid.*; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
    netns_down "$NS" 3
    rm -rf "$tmp"
}
trap cleanup EXIT
netns_up "$NS" 3 $NET
binds=()
for i in $(seq 100 199); do ip -n "${NS}3" addr add "198.18.$NET.$i/24" dev eth0; binds+=(--bind "198.18.$NET.$i"); done
master="$(netns_addr "$NS" 1):$PORT"
cat >"$tmp/w.sh" <<W
#!/bin/bash
for _ in \$(seq 1 3000); do [ -e "$tmp/go" ] && exit 0; sleep 0.1; done
W
chmod +x "$tmp/w.sh"

now() { date +%s.%N; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
until_grep() { # until_grep FILE REGEX SECONDS
    local n=0
    until grep -aqE -- "$2" "$1" 2>/dev/null; do [ $n -ge $(($3 * 20)) ] && return 1; sleep 0.05; n=$((n + 1)); done
}
# node I DIR CREDS...: plaunch on host I in the background, its pid in $tmp/pid.I
node() {
    local i=$1 d=$2; shift 2
    ip netns exec "$NS$i" "$P" --nnodes 2 --master "$master" --nproc-per-node 1 --job-id bench --rdzv-timeout 300 \
        --log-dir "$d/log$i" --quiet --tee none "$@" "$tmp/w.sh" >"$d/out$i" 2>&1 &
    echo $! >"$tmp/pid.$i"
}
# finish: lets both nodes' workers end and waits for them
finish() {
    touch "$tmp/go"
    wait "$(cat "$tmp/pid.1")" "$(cat "$tmp/pid.2")" 2>/dev/null || true
    rm -f "$tmp/go" "$tmp"/pid.*
}
# join_time DIR: seconds from starting node 2 to the coordinator's "2 of 2"
join_time() {
    local t0 t1
    t0=$(now)
    node 2 "$1" "${creds[@]}"
    until_grep "$1/log1/$PLOG" "joined for generation 0: 2 of 2" 120 || { echo "nan"; return; }
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}

for mode in "${modes[@]}"; do
    rm -rf "$tmp/quiet" "$tmp/siege"; mkdir -p "$tmp/quiet" "$tmp/siege"
    if [ "$mode" = ca ]; then
        "$P" certs init "$tmp/ca" --force >/dev/null
        "$P" certs issue "$tmp/ca" node --force >/dev/null
        creds=(--tls-dir "$tmp/ca"); hello=(--full-hello)
    else
        creds=(--token "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"); hello=()
    fi
    # the floor: the same join with nobody attacking
    node 1 "$tmp/quiet" "${creds[@]}"
    until_grep "$tmp/quiet/log1/$PLOG" "joined for generation 0: 1 of 2" 30
    quiet=$(join_time "$tmp/quiet")
    finish
    # the siege
    node 1 "$tmp/siege" "${creds[@]}"
    coord=$(cat "$tmp/pid.1"); log=$tmp/siege/log1/$PLOG
    until_grep "$log" "joined for generation 0: 1 of 2" 30
    sleep 1
    idle=$(rss "$coord"); peak=$idle; lines0=$(grep -acE "refused|closed|ignored" "$log" || true)
    t0=$(now)
    ip netns exec "${NS}3" "$H" --endpoint "tcp://$master" "${binds[@]}" --stall 10000 "${hello[@]}" --hold 30 \
        >"$tmp/stall.out" 2>&1 & echo $! >"$tmp/pid.a1"
    for k in 2 3; do
        ip netns exec "${NS}3" "$H" --endpoint "tcp://$master" "${binds[@]}" --idle 10000 --hold 30 \
            >"$tmp/idle$k.out" 2>&1 & echo $! >"$tmp/pid.a$k"
    done
    for _ in $(seq 1 1200); do
        r=$(rss "$coord"); [ "$r" -gt "$peak" ] && peak=$r
        [ "$(cat "$tmp"/stall.out "$tmp"/idle*.out 2>/dev/null | grep -c '^opened:')" = 3 ] && break
        sleep 0.1
    done
    c0=$(ticks "$coord"); tc0=$(now)
    siege=$(join_time "$tmp/siege")
    while kill -0 "$(cat "$tmp/pid.a1")" 2>/dev/null || kill -0 "$(cat "$tmp/pid.a2")" 2>/dev/null ||
        kill -0 "$(cat "$tmp/pid.a3")" 2>/dev/null; do
        r=$(rss "$coord"); [ "$r" -gt "$peak" ] && peak=$r
        sleep 0.2
    done
    c1=$(ticks "$coord"); tc1=$(now); t1=$(now)
    lines=$(( $(grep -acE "refused|closed|ignored" "$log") - lines0 ))
    fl0=$(grep -ac . "$log")
    ip netns exec "${NS}3" "$H" --endpoint "tcp://$master" --flood 100000 >"$tmp/flood.out" 2>&1
    until_grep "$log" "refused [0-9,]+ frames? from $(netns_addr "$NS" 3 | sed 's/\./\\./g')" 15 || true
    flood_lines=$(( $(grep -ac . "$log") - fl0 ))
    finish
    secs=$(echo "$t1 - $t0" | bc -l)
    grow=$(( (peak - idle) / 1024 ))
    cpu=$(echo "($c1 - $c0) / $(getconf CLK_TCK) / ($tc1 - $tc0) * 100" | bc -l)
    echo "== $mode mode: 10,000 stalled TLS handshakes${hello:+ (whole ClientHellos)} + 20,000 idle ZeroMQ" \
        "connections from 100 addresses"
    grep -h '^opened:\|^held:' "$tmp"/stall.out "$tmp"/idle*.out | sed 's/^/   pl_hostile /'
    verdict=$([ $grow -le 64 ] && echo PASS || echo MISS)
    printf '   coordinator RSS: idle %.1f MiB, peak %.1f MiB: +%d MiB (target <= 64 MiB: %s)\n' \
        "$(echo "$idle / 1024" | bc -l)" "$(echo "$peak / 1024" | bc -l)" "$grow" "$verdict"
    verdict=$([ "$(echo "$lines / $secs <= 3" | bc -l)" = 1 ] && echo PASS || echo MISS)
    printf '   log lines about them: %d in %.1f s = %.1f/s (target: a few a second: %s)\n' "$lines" "$secs" \
        "$(echo "$lines / $secs" | bc -l)" "$verdict"
    printf '   coordinator CPU while they are held: %.1f %%\n' "$cpu"
    printf '   a good agent joins in %.3f s under the siege, %.3f s with no attack (%.1fx)\n' "$siege" "$quiet" \
        "$(echo "$siege / $quiet" | bc -l)"
    printf '   %s: %d log lines\n' "$(grep '^flood:' "$tmp/flood.out" | sed 's/ in [0-9.]* s//')" "$flood_lines"
done
