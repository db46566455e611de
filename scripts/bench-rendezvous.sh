#!/bin/bash
# bench-rendezvous.sh: N agents as processes on loopback, TLS on (token), one trivial worker each; time from the
# first agent's start to every worker holding the NCCL id, for N = 16 64 256 1024 (or the N given), next to
# torchrun's c10d rendezvous (to every worker started, which is before any id exchange) where it can run, and next to
# the same N plaunch processes started as one-node jobs ("solo": process start-up alone; "x solo" the ratio).
# Heartbeats are relaxed (2 s / 60 s): thousands of processes starting on two cores starve everyone for seconds,
# which a real 1024-node job (1024 machines) never sees; loss detection is measured by bench-restart-nodes.sh.
# Usage: scripts/bench-rendezvous.sh [N...]      Prints a table; never fails on a missed target.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/plaunch ] && [ -x build/bin/nccl_id ] || make -s
scripts/deps.sh --bench >/dev/null || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16 64 256 1024)
P=$PWD/build/bin/plaunch
EX=$PWD/build/bin/nccl_id
tmp=$(mktemp -d /tmp/plaunch-rdzv.XXXXXX)
cleanup() { pkill -9 -f "$tmp" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
export PLAUNCH_TOKEN
PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export NCCL_ID_STAMP=1 NCCL_ID_NO_BARRIER=1 PLAUNCH_TIMEOUT_MS=60000

# plaunch_run N PORT: prints "seconds coordinator_rss_kib agent_rss_kib"
plaunch_run() {
    local n=$1 port=$2 d="$tmp/p$1" i t0 last
    mkdir -p "$d"
    t0=$EPOCHREALTIME
    local opts=(--nnodes "$n" --master "127.0.0.1:$port" --nproc-per-node 1 --rdzv-timeout 120 --heartbeat 2
        --heartbeat-timeout 60 --quiet --tee none)
    for i in $(seq 0 $((n - 1))); do
        if [ "$i" -le 1 ]; then # the coordinator (first) and one agent under GNU time for their peak RSS
            /usr/bin/time -f %M -o "$d/rss.$i" "$P" "${opts[@]}" --log-dir "$d/n$i" "$EX" >/dev/null 2>"$d/err.$i" &
        else
            "$P" "${opts[@]}" --log-dir "$d/n$i" "$EX" >/dev/null 2>"$d/err.$i" &
        fi
    done
    wait
    last=$(cat "$d"/n*/workerlog.* | awk '/held ids at/ {print $6}' | sort -n | tail -1)
    local held
    held=$(cat "$d"/n*/workerlog.* | grep -c 'held ids at' || true)
    if [ "$held" != "$n" ]; then
        echo "bench-rendezvous: only $held of $n workers held the id; first errors:" >&2
        head -3 "$d"/err.* >&2
        echo "- - -"
        return
    fi
    echo "$(echo "$last - $t0" | bc -l) $(cat "$d/rss.0") $(cat "$d/rss.1")"
}

# solo_run N: the same N plaunch processes and workers as one-node jobs (no rendezvous, no TLS, no heartbeats):
# seconds from the first start to every worker holding its id, what process start-up alone costs here
solo_run() {
    local n=$1 d="$tmp/s$1" i t0 last held
    mkdir -p "$d"
    t0=$EPOCHREALTIME
    for i in $(seq 0 $((n - 1))); do
        "$P" --nproc-per-node 1 --quiet --tee none --log-dir "$d/n$i" "$EX" >/dev/null 2>"$d/err.$i" &
    done
    wait
    held=$(cat "$d"/n*/workerlog.* | grep -c 'held ids at' || true)
    [ "$held" = "$n" ] || { echo "-"; return; }
    last=$(cat "$d"/n*/workerlog.* | awk '/held ids at/ {print $6}' | sort -n | tail -1)
    echo "$last - $t0" | bc -l
}

# torchrun_run N PORT: seconds until every worker of N torchrun agents (c10d) started
torchrun_run() {
    local n=$1 port=$2 d="$tmp/t$1" i t0
    mkdir -p "$d"
    printf '#!/bin/bash\necho "$EPOCHREALTIME" > "%s/w.$RANK"\n' "$d" > "$d/w.sh"
    chmod +x "$d/w.sh"
    t0=$EPOCHREALTIME
    for i in $(seq 0 $((n - 1))); do
        timeout 120 torchrun --nnodes "$n" --nproc_per_node 1 --rdzv_backend c10d \
            --rdzv_endpoint "127.0.0.1:$port" --rdzv_id bench --no_python -r 2 -t 2 "$d/w.sh" \
            >/dev/null 2>"$d/err.$i" &
    done
    wait || true
    if [ "$(ls "$d"/w.[0-9]* 2>/dev/null | wc -l)" != "$n" ]; then echo "-"; return; fi
    echo "$(cat "$d"/w.[0-9]* | sort -n | tail -1) - $t0" | bc -l
}

printf '%-6s %14s %16s %18s %16s %12s %10s %10s\n' N "plaunch s" "coord RSS MiB" "agent RSS MiB" "torchrun s" "ratio" \
    "solo s" "x solo"
port=29700
for n in "${sizes[@]}"; do
    read -r ps crss arss < <(plaunch_run "$n" "$port")
    ss=$(solo_run "$n")
    xs="-"
    [ "$ss" != "-" ] && [ "$ps" != "-" ] && xs=$(echo "$ps / $ss" | bc -l | xargs printf '%.2f')
    ts="-"
    if [ "$n" -le 16 ] && command -v torchrun >/dev/null; then ts=$(torchrun_run "$n" $((port + 1))); fi
    port=$((port + 2))
    ratio="-"
    [ "$ts" != "-" ] && [ "$ps" != "-" ] && ratio=$(echo "$ps / $ts" | bc -l | xargs printf '%.3f')
    mib() { [ "$1" = "-" ] && echo - || echo "$1 / 1024" | bc -l | xargs printf '%.1f'; }
    printf '%-6s %14s %16s %18s %16s %12s %10s %10s\n' "$n" "$( [ "$ps" = - ] && echo - || printf '%.3f' "$ps")" \
        "$(mib "$crss")" "$(mib "$arss")" "$( [ "$ts" = - ] && echo - || printf '%.3f' "$ts")" "$ratio" \
        "$( [ "$ss" = - ] && echo - || printf '%.3f' "$ss")" "$xs"
done
echo "target: 1024 agents in <= 2 s on this machine ($(nproc) cores); x solo <= 1.5; torchrun is timed to its workers' start only"
