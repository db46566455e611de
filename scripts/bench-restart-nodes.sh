#!/bin/bash
# bench-restart-nodes.sh: the multi-node restart: three namespace nodes (--nnodes 2:3, default heartbeats), the
# agent of node 3 killed; prints detection time (kill -> the coordinator logs the loss), restart time (loss ->
# every surviving worker of generation 1 running) and their sum. Target: sum <= 3 s. Needs root (namespaces).
# Usage: scripts/bench-restart-nodes.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
[ "$(id -u)" = 0 ] || { echo "bench-restart-nodes: needs root for network namespaces" >&2; exit 0; }
[ -x build/bin/plaunch ] || make -s
. scripts/netns.sh
P=$PWD/build/bin/plaunch
NS="pr$$"; NS=${NS:0:8}; NET=13; PORT=29461
tmp=$(mktemp -d /tmp/plaunch-brn.XXXXXX)
cleanup() { for f in "$tmp"/pid.*; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; netns_down "$NS" 3; rm -rf "$tmp"; }
trap cleanup EXIT
netns_up "$NS" 3 $NET
export PLAUNCH_TOKEN OUTDIR=$tmp
PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$tmp/w.sh" <<'W'
#!/bin/bash
echo "$EPOCHREALTIME" > "$OUTDIR/start.$PLAUNCH_GENERATION.$PLAUNCH_NODE_RANK"
[ "$PLAUNCH_GENERATION" -ge 1 ] && exit 0
sleep 300
W
chmod +x "$tmp/w.sh"

# log_time FILE REGEX: epoch seconds of the first log line matching REGEX
log_time() { date -d "$(grep -m1 -E "$2" "$1" | cut -d' ' -f1)" +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: >"$tmp/det"; : >"$tmp/rst"; : >"$tmp/tot"
for r in $(seq 1 "$runs"); do
    rm -rf "$tmp"/log* "$tmp"/start.*
    for i in 1 2 3; do
        ip netns exec "$NS$i" "$P" --nnodes 2:3 --master "$(netns_addr "$NS" 1):$PORT" --log-dir "$tmp/log$i" \
            --quiet --tee none "$tmp/w.sh" >/dev/null 2>&1 &
        echo $! >"$tmp/pid.$i"
    done
    for _ in $(seq 1 200); do [ "$(ls "$tmp"/start.0.* 2>/dev/null | wc -l)" = 3 ] && break; sleep 0.05; done
    t0=$EPOCHREALTIME
    kill -9 "$(cat "$tmp/pid.3")"
    for _ in $(seq 1 200); do [ "$(ls "$tmp"/start.1.* 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.05; done
    wait "$(cat "$tmp/pid.1")" "$(cat "$tmp/pid.2")" 2>/dev/null || true
    lost=$(log_time "$tmp/log1/plaunch.log" "lost:")
    up=$(cat "$tmp"/start.1.* | sort -n | tail -1)
    echo "$lost - $t0" | bc -l >>"$tmp/det"
    echo "$up - $lost" | bc -l >>"$tmp/rst"
    echo "$up - $t0" | bc -l >>"$tmp/tot"
    rm -f "$tmp"/pid.*
done
d=$(median <"$tmp/det"); s=$(median <"$tmp/rst"); t=$(median <"$tmp/tot")
printf 'multi-node restart, %d runs, medians: detection %.3f s, restart %.3f s, total %.3f s (target <= 3 s: %s)\n' \
    "$runs" "$d" "$s" "$t" "$(echo "$t <= 3" | bc -l | sed 's/1/PASS/;s/0/MISS/')"
