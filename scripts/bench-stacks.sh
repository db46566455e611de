#!/bin/bash
# bench-stacks.sh: how long `plaunch __stacks` takes: one C process (tests/tools/pl_stuck) of N threads for N in
# 1 8 32 64 128 (64 are unwound: the bound), 8 such processes in one run, a CPython process, and a PyTorch gloo
# rank waiting in all_reduce (where a python3 has torch); native stacks only (--no-py-spy); the median wall time of
# RUNS runs each, from exec to exit (an upper bound of how long a process is held stopped).
# Usage: scripts/bench-stacks.sh [RUNS]
set -uo pipefail
runs=${1:-7}
cd "$(dirname "$0")/.." || exit 1
[ -x build/bin/plaunch ] && [ -x build/tests/tools/pl_stuck ] || make -s all unit || exit 1
P=$PWD/build/bin/plaunch S=$PWD/build/tests/tools/pl_stuck
tmp=$(mktemp -d /tmp/plaunch-bs.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
# start NAME THREADS: a pl_stuck with THREADS more threads, ready; its pid appended to pids.
start() {
    "$S" named "$tmp/$1" "$2" &
    pids+=($!)
    disown
    for _ in $(seq 400); do [ -e "$tmp/$1" ] && return 0; sleep 0.05; done
    echo "bench-stacks: pl_stuck $1 did not start" >&2
    exit 1
}
# median_ms PID...: the median wall time of RUNS captures of the PIDs (children of this script), in ms.
median_ms() {
    local ts=()
    for _ in $(seq "$runs"); do
        local t0=$EPOCHREALTIME
        "$P" __stacks --no-py-spy --parent $$ "$@" >"$tmp/out.json" || { echo "bench-stacks: __stacks failed" >&2; exit 1; }
        ts+=("$(echo "($EPOCHREALTIME - $t0) * 1000" | bc)")
    done
    printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR] = $1} END {printf "%.1f", a[int((NR + 1) / 2)]}'
}
frames() { python3 -c "import json; d=json.load(open('$tmp/out.json')); print(sum(len(t.get('frames', [])) for p in d['procs'] for t in p.get('threads', [])))"; }
echo "plaunch __stacks, median of $runs runs, $(nproc) cores, $(uname -r)"
printf '%-34s %10s %8s\n' "target" "wall ms" "frames"
for n in 1 8 32 64 128; do
    start "t$n" $((n - 1))
    ms=$(median_ms "${pids[-1]}")
    printf '%-34s %10s %8s\n' "1 process, $n threads" "$ms" "$(frames)"
done
several=()
for i in 1 2 3 4 5 6 7 8; do
    start "m$i" 7
    several+=("${pids[-1]}")
done
ms=$(median_ms "${several[@]}")
printf '%-34s %10s %8s\n' "8 processes of 8 threads" "$ms" "$(frames)"
cat >"$tmp/py.py" <<'EOF'
import sys, threading, time
for i in range(3):
    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
open(sys.argv[1], "w").close()
time.sleep(1000)
EOF
python3 "$tmp/py.py" "$tmp/py" &
pids+=($!)
disown
for _ in $(seq 400); do [ -e "$tmp/py" ] && break; sleep 0.05; done
ms=$(median_ms "${pids[-1]}")
printf '%-34s %10s %8s\n' "CPython, 4 threads" "$ms" "$(frames)"
# A gloo rank of PyTorch waiting in all_reduce for a peer that sleeps (where some python3 has torch).
py=$(for p in python3 /usr/bin/python3; do "$p" -c 'import torch.distributed' 2>/dev/null && { command -v "$p"; break; }; done)
if [ -n "$py" ]; then
    cat >"$tmp/gloo.py" <<'PYEOF'
import sys, time, torch, torch.distributed as dist
rank, port, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2)
open(ready + str(rank), "w").close()
while rank == 1:
    time.sleep(1000)
dist.all_reduce(torch.ones(4))
PYEOF
    port=$((20000 + RANDOM % 20000))
    for r in 0 1; do "$py" "$tmp/gloo.py" "$r" "$port" "$tmp/gloo" & pids+=($!); disown; done
    for _ in $(seq 1200); do [ -e "$tmp/gloo0" ] && [ -e "$tmp/gloo1" ] && break; sleep 0.05; done
    ms=$(median_ms "${pids[-2]}")
    printf '%-34s %10s %8s\n' "torch gloo rank in all_reduce" "$ms" "$(frames)"
fi
