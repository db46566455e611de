#!/bin/sh
# make run: the main job on an embedded default: one worker per GPU where there are GPUs, else 4 CPU workers.
set -eu
B="${1:-build}"
cd "$(dirname "$0")/.."
if [ -d /proc/driver/nvidia/gpus ] && [ -n "$(ls /proc/driver/nvidia/gpus 2>/dev/null)" ]; then
    set -- --gpus all
    echo "run: GPUs found: one worker per GPU"
else
    set -- --nproc-per-node 4
    echo "run: no GPU on this machine: 4 CPU workers"
fi
export NCCL_NVLS_ENABLE=0
# print_env prints each worker's rank/world environment and the NCCL id all ranks got through libplaunch.
exec "$B/bin/plaunch" "$@" --tee all --log-dir "${LOG_DIR:-log}" "$B/bin/print_env"
