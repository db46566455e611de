#!/bin/bash
# gpu-check.sh: the GPU checks CI cannot run: GPU discovery, the example job, an NCCL AllReduce with the id from
# libplaunch, and the full `plaunch probe`; results (logs, probe JSON/HTML) go to OUTDIR.
# Usage: scripts/gpu-check.sh OUTDIR [BUILD]   (on a machine with NVIDIA GPUs; NCCL_NVLS_ENABLE=0 is forced)
set -u
out=${1:?usage: gpu-check.sh OUTDIR [BUILD]}
B=${2:-build}
cd "$(dirname "$0")/.."
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
P="$B/bin/plaunch"
step() { echo; echo "=== $* ==="; }

step "machine"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1 | tee "$out/gpus.csv"
nvidia-smi topo -m 2>&1 | head -20

step "plaunch --gpus all print_env (make run on a GPU machine)"
/usr/bin/time -f "wall %e s, max RSS %M KiB" "$P" --gpus all --tee all --log-dir "$out/log-env" "$B/bin/print_env" 2>&1

step "NCCL AllReduce on every GPU, id through libplaunch"
"$P" --gpus all --tee all --log-dir "$out/log-allreduce" "$B/bin/nccl_allreduce" 2>&1; echo "exit $?"

step "plaunch probe (default sweep)"
start=$(date +%s%N)
"$P" probe --gpus all --json "$out/probe.json" --html "$out/probe.html" 2>&1; echo "exit $?"
echo "probe wall time: $(( ($(date +%s%N) - start) / 1000000 )) ms"

step "probe overhead: launch + id exchange + report around a minimal sweep (3 runs)"
for i in 1 2 3; do
    s=$(date +%s%N)
    "$P" probe --gpus all -b 1M -e 1M -n 1 -w 0 --grad-bytes 1M --step-gflop 0.001 --no-pairwise -q >/dev/null 2>&1
    echo "run $i: exit $?, $(( ($(date +%s%N) - s) / 1000000 )) ms"
done
