#!/bin/bash
# gpu-check-node.sh: the node-level checks CI cannot run without a GPU: the binding plan from the real topology,
# the node preflight with NVML's CUDA version, the GPU memory wait of a restart after a SIGKILL, and the /metrics
# GPU gauges from the real NVML, checked against nvidia-smi. Logs go to OUTDIR.
# Usage: scripts/gpu-check-node.sh OUTDIR [BUILD]   (a machine with an NVIDIA GPU and python3 with torch)
set -u
out=${1:?usage: gpu-check-node.sh OUTDIR [BUILD]}
B=${2:-build}
cd "$(dirname "$0")/.."
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
P="$PWD/$B/bin/plaunch"
step() { echo; echo "=== $* ==="; }
# fetch URL: the body, through curl where there is one, else python3.
fetch() { curl -fsS --max-time 5 "$1" 2>/dev/null || python3 -c 'import sys,urllib.request as u; sys.stdout.write(u.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }

step "binding plan of this machine (--print-binding) against the GPU's bus id and NUMA node"
"$P" --print-binding --gpus all true 2>&1
nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>&1
for d in /sys/bus/pci/devices/*; do [ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] && [ "$(cat "$d/class")" = 0x030200 ] && echo "$(basename "$d") numa_node=$(cat "$d/numa_node")"; done
s=$(date +%s%N); "$P" --print-binding --gpus all --cpu-bind numa true >/dev/null 2>&1
echo "--print-binding with the PCI topology load: $(( ($(date +%s%N) - s) / 1000000 )) ms"

step "preflight on a GPU node (warn): what it finds"
"$P" --gpus all --log-dir "$out/log-preflight" true 2>&1; echo "exit $?"
grep -h "preflight" "$out/log-preflight"/plaunch*.log | head -20

step "GPU memory wait: rank 0 holds 20 GiB and is SIGKILLed; generation 1 waits for the release"
cat >"$out/hold.py" <<'W'
import os, sys, time, torch
x = torch.empty(20 << 30, dtype=torch.uint8, device="cuda")
x.fill_(1); torch.cuda.synchronize()
gen = os.environ.get("PLAUNCH_GENERATION", "0")
open(os.path.join(os.environ["OUTDIR"], "held." + gen), "w").write(str(os.getpid()))
print("holding 20 GiB in generation", gen, flush=True)
if gen != "0":
    sys.exit(0)
time.sleep(120)
W
rm -f "$out"/held.*
OUTDIR=$out "$P" --gpus all --max-restarts 1 --log-dir "$out/log-gpuwait" python3 "$out/hold.py" >"$out/gpuwait.out" 2>&1 &
pl=$!
for _ in $(seq 600); do [ -e "$out/held.0" ] && break; sleep 0.1; done
kill -9 "$(cat "$out/held.0")" 2>/dev/null
wait "$pl"; echo "exit $?"
grep -h "gpu-wait\|generation 1" "$out/log-gpuwait"/plaunch*.log | head -5

step "/metrics with the real NVML: GPU gauges of a busy rank against nvidia-smi"
cat >"$out/busy.py" <<'W'
import time, torch
a = torch.randn(8192, 8192, device="cuda"); t = time.time()
while time.time() - t < 15:
    a = (a @ a).clamp_(-1, 1)
torch.cuda.synchronize()
W
port=$((20000 + RANDOM % 20000))
"$P" --gpus all --metrics-port "$port" --monitor 1 --log-dir "$out/log-metrics" python3 "$out/busy.py" \
    >"$out/metrics.out" 2>&1 &
pl=$!
for _ in $(seq 100); do   # until the monitor's first GPU sample is served (deadline 10 s; the rank runs 15 s)
    fetch "http://127.0.0.1:$port/metrics" >"$out/metrics.txt" 2>/dev/null
    grep -q "^plaunch_rank_gpu_utilization_ratio" "$out/metrics.txt" && break
    sleep 0.1
done
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>&1
grep -E "^plaunch_rank_gpu|^plaunch_workers_running|^plaunch_generation" "$out/metrics.txt" | head -12
wait "$pl"; echo "exit $?"
grep -h "metrics" "$out/metrics.out" | head -3
