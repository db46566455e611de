#!/bin/bash
# bench-failover.sh: a coordinator that survives its node: etcd (Debian's etcd-server) in one network namespace,
# three plaunch nodes in three others (--nnodes 2:3, --master etcd://), the agent that holds the coordinator's
# lease SIGKILLed. Per run: kill -> a new coordinator elected (its node's log line), kill -> the next generation's
# first worker running. The peer, measured in the same rounds: the same job losing a node that does NOT coordinate
# (the coordinator sees the connection close; no election). The floor is the lease's TTL (--heartbeat-timeout,
# rounded up): nobody may take over before the old lease expires. Needs root (namespaces) and etcd.
# Usage: scripts/bench-failover.sh [RUNS] [HEARTBEAT_TIMEOUT]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
hbt=${2:-2.5}
[ "$(id -u)" = 0 ] || { echo "bench-failover: needs root for network namespaces" >&2; exit 0; }
command -v etcd >/dev/null || { echo "bench-failover: no etcd (apt-get install etcd-server etcd-client)" >&2; exit 0; }
[ -x build/bin/plaunch ] || make -s
. scripts/netns.sh
. scripts/bench-lib.sh
PLOG="plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log"
tmp=$(mktemp -d /tmp/plaunch-bfo.XXXXXX)
P=$tmp/plaunch
cp build/bin/plaunch "$P"
NS="pf$$"; NS=${NS:0:8}; NET=82
EPID=
cleanup() {
    set +e
    for f in "$tmp"/pid.*; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
    [ -n "$EPID" ] && kill "$EPID" 2>/dev/null && wait "$EPID" 2>/dev/null
    netns_down "$NS" 4
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
netns_up "$NS" 4 $NET
EA=$(netns_addr "$NS" 1)
ip netns exec "${NS}1" etcd --name b --data-dir "$tmp/etcd" --listen-client-urls "http://$EA:2379" \
    --advertise-client-urls "http://$EA:2379" --listen-peer-urls "http://$EA:2380" \
    --initial-advertise-peer-urls "http://$EA:2380" --initial-cluster "b=http://$EA:2380" >"$tmp/etcd.log" 2>&1 &
EPID=$!
for _ in $(seq 1 300); do
    ip netns exec "${NS}2" curl -fsS -m 1 "http://$EA:2379/health" 2>/dev/null | grep -q '"health":"true"' && break
    sleep 0.1
done
export PLAUNCH_TOKEN OUTDIR=$tmp
PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
bench_gen_worker "$tmp/w.sh"
stats() { sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2;
    printf "%8.0f %8.0f %8.0f", m * 1000, a[1] * 1000, a[NR] * 1000}'; }

# run WHO: one job; WHO (coord or other) is SIGKILLed once generation 0 runs everywhere.
run() {
    local who=$1 k=$2 job="bf$1$2" i victim coord new t0 up el
    rm -rf "$tmp"/log* "$tmp"/start.*
    for i in 2 3 4; do
        ip netns exec "$NS$i" "$P" --nnodes 2:3 --master "etcd://$EA:2379" --job-id "$job" --heartbeat-timeout "$hbt" \
            --log-dir "$tmp/log$i" --quiet --tee none "$tmp/w.sh" >/dev/null 2>&1 &
        echo $! >"$tmp/pid.$i"
    done
    for _ in $(seq 1 400); do [ "$(ls "$tmp"/start.0.* 2>/dev/null | wc -l)" = 3 ] && break; sleep 0.05; done
    coord=$(grep -l "this node coordinates" "$tmp"/log*/"$PLOG" | head -1 | sed 's/.*\/log\([0-9]\)\/.*/\1/')
    victim=$coord
    if [ "$who" = other ]; then for i in 2 3 4; do [ "$i" != "$coord" ] && victim=$i && break; done; fi
    t0=$EPOCHREALTIME
    kill -9 "$(cat "$tmp/pid.$victim")"
    for _ in $(seq 1 400); do [ "$(ls "$tmp"/start.1.* 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.05; done
    for i in 2 3 4; do [ "$i" != "$victim" ] && wait "$(cat "$tmp/pid.$i")" 2>/dev/null; done || true
    up=$(cat "$tmp"/start.1.* | sort -n | head -1)
    [ -n "$up" ] || { echo "bench-failover: run $who $k: no generation 1 (logs: $tmp)" >&2; trap - EXIT; exit 1; }
    echo "$up - $t0" | bc -l >>"$tmp/gen.$who"
    if [ "$who" = coord ]; then
        new=$(grep -l "this node coordinates the job" "$tmp"/log[234]/"$PLOG" | grep -v "log$victim/" | head -1)
        el=$(grep "this node coordinates the job" "$new" | tail -1 | cut -d' ' -f1)
        echo "$(date -d "$el" +%s.%N) - $t0" | bc -l >>"$tmp/elect.$who"
    fi
    rm -f "$tmp"/pid.*
}

echo "bench-failover: $runs runs each, --heartbeat-timeout $hbt (lease TTL $(awk -v h="$hbt" 'BEGIN{t=int(h+0.999); print t<2?2:t}') s), load $(cut -d' ' -f1 /proc/loadavg)"
for k in $(seq 1 "$runs"); do
    printf '\rrun %d/%d' "$k" "$runs" >&2
    if [ $((k % 2)) = 1 ]; then run coord "$k"; run other "$k"; else run other "$k"; run coord "$k"; fi
done
echo >&2
ttl=$(awk -v h="$hbt" 'BEGIN{t=int(h+0.999); print t<2?2:t}')
printf '%-52s %8s %8s %8s\n' "ms (median min max)" median min max
printf '%-52s %s\n' "coordinator's node killed: kill -> new coordinator" "$(stats <"$tmp/elect.coord")"
printf '%-52s %s\n' "coordinator's node killed: kill -> next generation" "$(stats <"$tmp/gen.coord")"
printf '%-52s %s\n' "peer: another node killed: kill -> next generation" "$(stats <"$tmp/gen.other")"
med=$(sort -n "$tmp/gen.coord" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
awk -v m="$med" -v t="$ttl" -v h="$hbt" 'BEGIN {
    printf "floor (lease TTL) %d s: takeover / floor = %.2f; goal: heartbeat timeout + 2 s = %.1f s: %s\n",
        t, m / t, h + 2, (m <= h + 2) ? "PASS" : "MISS" }'
echo "load at end $(cut -d' ' -f1 /proc/loadavg)"
