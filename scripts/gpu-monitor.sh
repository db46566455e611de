#!/bin/bash
# gpu-monitor.sh: the monitor on a real GPU (CI has none): the NVML sampler and preflight, then three torch jobs on
# GPU 0 under --monitor 1 with tests/fixtures/monitor/short.ini - compute-bound, input-bound (a sleep in the data
# loop), leaking GPU memory - each followed by plaunch report (text, JSON, HTML); then bench-monitor.sh.
# Usage: scripts/gpu-monitor.sh OUTDIR [SECONDS] [BUILD]   (needs torch; NCCL_NVLS_ENABLE=0 is forced)
set -u
out=${1:?usage: gpu-monitor.sh OUTDIR [SECONDS] [BUILD]}
secs=${2:-80}
B=${3:-build}
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
P="$B/bin/plaunch"
step() { echo; echo "=== $* ==="; }

step "machine"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv 2>&1
for mode in compute input leak; do
    step "$mode job: plaunch --gpus 0 --monitor 1 ($secs s)"
    rm -rf "$out/log-$mode"
    /usr/bin/time -f "wall %e s" "$P" --gpus 0 --monitor 1 --monitor-config tests/fixtures/monitor/short.ini \
        --log-dir "$out/log-$mode" --tee all python3 scripts/gpu-monitor-job.py "$mode" "$secs" 2>&1
    echo "exit $?"
    step "$mode: plaunch report"
    "$P" report "$out/log-$mode" --monitor-config tests/fixtures/monitor/short.ini \
        --json "$out/report-$mode.json" --html "$out/report-$mode.html" 2>&1
    echo "exit $?"
done
step "preflight strict with the GPU busy (a compute job of another launcher on GPU 0)"
python3 scripts/gpu-monitor-job.py compute 15 >/dev/null 2>&1 &
bg=$!
for _ in $(seq 1 100); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 0.1; done
"$P" --gpus 0 --preflight strict --log-dir "$out/log-strict" /bin/true 2>&1; echo "exit $?"
wait $bg
step "bench-monitor (3 runs of 20 s, one GPU worker)"
scripts/bench-monitor.sh 3 20 2>&1
step "bench-monitor (3 runs of 20 s, 8 CPU workers)"
BENCH_CPU=1 scripts/bench-monitor.sh 3 20 2>&1
