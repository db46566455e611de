#!/bin/bash
# env.t: every variable of the worker environment contract, for every rank, GPU and CPU modes; a
# CUDA_VISIBLE_DEVICES that hides every GPU is refused before anything starts.
. "$(dirname "$0")/lib.sh"
plan 21

cat >dump.sh <<'W'
#!/bin/sh
env > "$OUTDIR/env.$RANK"
W
chmod +x dump.sh

# check_rank FILE RANK LOCAL WORLD LOCAL_WORLD: the rank-dependent part of the contract.
check_rank() {
    local f=$1 r=$2 l=$3 w=$4 lw=$5 missing=""
    for kv in "RANK=$r" "LOCAL_RANK=$l" "WORLD_SIZE=$w" "LOCAL_WORLD_SIZE=$lw" "GROUP_RANK=0" "GROUP_WORLD_SIZE=1" \
        "ROLE_NAME=default" "ROLE_RANK=$r" "ROLE_WORLD_SIZE=$w" "MASTER_ADDR=127.0.0.1" \
        "TORCHELASTIC_RESTART_COUNT=0" "TORCHELASTIC_MAX_RESTARTS=0" "TORCHELASTIC_RUN_ID=envjob" \
        "TORCHELASTIC_USE_AGENT_STORE=False" "OMP_NUM_THREADS=1" \
        "PADDLE_TRAINER_ID=$r" "PADDLE_TRAINERS_NUM=$w" "PADDLE_NNODES=1" "PADDLE_GLOBAL_SIZE=$w" \
        "PADDLE_LOCAL_SIZE=$lw" "PADDLE_GLOBAL_RANK=$r" "PADDLE_LOCAL_RANK=$l" "PADDLE_RANK_IN_NODE=$l" \
        "PADDLE_LOG_DIR=$T/logs" "PLAUNCH_JOB_ID=envjob" "PLAUNCH_GENERATION=0" "PLAUNCH_NODE_RANK=0" \
        "PLAUNCH_NNODES=1" "KEEP_ME=yes" "TORCHELASTIC_ERROR_FILE=$T/logs/error.$r.json" \
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1"; do
        grep -qxF "$kv" "$f" || missing="$missing $kv"
    done
    grep -qE '^MASTER_PORT=[0-9]+$' "$f" || missing="$missing MASTER_PORT"
    grep -qE '^PLAUNCH_AGENT=ipc:///.+/agent$' "$f" || missing="$missing PLAUNCH_AGENT"
    grep -qx 'RANK=99' "$f" && missing="$missing stale-RANK-leaked"
    echo "$missing"
}

# check_shared N: MASTER_PORT, endpoints and PADDLE_MASTER agree across ranks; endpoints are distinct.
check_shared() {
    local n=$1 bad="" port eps
    port=$(sed -n 's/^MASTER_PORT=//p' env.0)
    eps=$(sed -n 's/^PADDLE_TRAINER_ENDPOINTS=//p' env.0)
    [ "$(echo "$eps" | tr ',' '\n' | sort -u | wc -l)" = "$n" ] || bad="$bad endpoints-not-$n-distinct"
    for r in $(seq 0 $((n - 1))); do
        grep -qx "MASTER_PORT=$port" "env.$r" || bad="$bad master-port-$r"
        grep -qx "PADDLE_MASTER=127.0.0.1:$port" "env.$r" || bad="$bad paddle-master-$r"
        grep -qxF "PADDLE_TRAINER_ENDPOINTS=$eps" "env.$r" || bad="$bad endpoints-$r"
        mine=$(echo "$eps" | cut -d, -f$((r + 1)))
        grep -qxF "PADDLE_CURRENT_ENDPOINT=$mine" "env.$r" || bad="$bad current-endpoint-$r"
    done
    echo "$bad"
}

export OUTDIR=$T KEEP_ME=yes RANK=99 OMP_NUM_THREADS=
unset OMP_NUM_THREADS CUDA_VISIBLE_DEVICES
run_plaunch --gpus 0,1,2,3 --job-id envjob --log-dir "$T/logs" ./dump.sh
is "$rc" 0 "--gpus 0,1,2,3: exit 0"
is "$(ls env.* | wc -l)" 4 "--gpus 0,1,2,3: four workers"
bad=""
for r in 0 1 2 3; do
    bad="$bad$(check_rank env.$r $r $r 4 4)"
    for kv in "CUDA_VISIBLE_DEVICES=0,1,2,3" "CUDA_DEVICE_ORDER=PCI_BUS_ID" "FLAGS_selected_gpus=$r" "PLAUNCH_GPU=$r"; do
        grep -qxF "$kv" env.$r || bad="$bad rank$r:$kv"
    done
done
is "$bad" "" "--gpus 0,1,2,3: every contract variable right for every rank"
is "$(check_shared 4)" "" "--gpus 0,1,2,3: master and endpoints consistent across ranks"
agents=$(grep -h '^PLAUNCH_AGENT=' env.* | sort -u | wc -l)
is "$agents" 1 "PLAUNCH_AGENT is the same for every worker of the node"

rm -f env.*
run_plaunch --nproc-per-node 3 --job-id envjob --log-dir "$T/logs" ./dump.sh
is "$rc" 0 "--nproc-per-node 3: exit 0"
bad=""
for r in 0 1 2; do
    bad="$bad$(check_rank env.$r $r $r 3 3)"
    grep -qE '^(CUDA_VISIBLE_DEVICES|FLAGS_selected_gpus|PLAUNCH_GPU)=' env.$r && bad="$bad rank$r:gpu-vars-in-cpu-mode"
done
is "$bad" "" "--nproc-per-node 3: every contract variable right, no GPU variables"
is "$(check_shared 3)" "" "--nproc-per-node 3: master and endpoints consistent"

rm -f env.*
OMP_NUM_THREADS=4 run_plaunch --nproc-per-node 2 --log-dir "$T/logs" ./dump.sh
is "$(grep -h '^OMP_NUM_THREADS=' env.0 env.1 | sort -u)" "OMP_NUM_THREADS=4" "a user's OMP_NUM_THREADS is kept"

rm -f env.*
CUDA_VISIBLE_DEVICES=5,6,7,8 run_plaunch --gpus 6,8 --log-dir "$T/logs" ./dump.sh
is "$(grep -h '^CUDA_VISIBLE_DEVICES=' env.0 env.1 | sort -u)" "CUDA_VISIBLE_DEVICES=6,8" \
    "--gpus ids are labels of an inherited CUDA_VISIBLE_DEVICES (as Paddle reads --gpus/--devices)"
is "$(grep -h '^PLAUNCH_GPU=' env.1)" "PLAUNCH_GPU=8" "PLAUNCH_GPU names the physical GPU"
CUDA_VISIBLE_DEVICES=5,6,7,8 run_plaunch --gpus 1,3 --log-dir "$T/logs" ./dump.sh
like "$rc $err" "^2 .*GPU 1 does not exist on [^:]*: it is not in CUDA_VISIBLE_DEVICES=5,6,7,8" \
    "--gpus 1,3 under CUDA_VISIBLE_DEVICES=5,6,7,8: exit 2, not positions 1 and 3"

rm -f env.*
CUDA_VISIBLE_DEVICES=2,3 run_plaunch --gpus all --log-dir "$T/logs" ./dump.sh
is "$(ls env.* | wc -l)" 2 "--gpus all under CUDA_VISIBLE_DEVICES=2,3: two workers"
CUDA_VISIBLE_DEVICES=0,1 run_plaunch --gpus 0-2 --log-dir "$T/logs" ./dump.sh
like "$rc $err" "^2 .*GPU 2 does not exist" "--gpus beyond CUDA_VISIBLE_DEVICES: exit 2 naming the GPU"

# A scheduler that gives the job no GPU sets CUDA_VISIBLE_DEVICES empty (Slurm: NoDevFiles): --gpus must not
# reach past it to the machine's GPUs.
for cvd in "" NoDevFiles -1; do
    rm -f env.*
    CUDA_VISIBLE_DEVICES=$cvd run_plaunch --gpus 0 --log-dir "$T/logs" ./dump.sh
    is "$rc $(ls env.* 2>/dev/null | wc -l)" "2 0" "CUDA_VISIBLE_DEVICES='$cvd' with --gpus 0: exit 2, no worker started"
done
like "$err" "CUDA_VISIBLE_DEVICES='-1' hides every GPU of .*--nproc-per-node N" "the message names the variable and the way out"
CUDA_VISIBLE_DEVICES= run_plaunch --gpus all --log-dir "$T/logs" ./dump.sh
like "$rc $err" "^2 .*CUDA_VISIBLE_DEVICES='' hides every GPU" "... with --gpus all too"

# torchrun's TORCH_NCCL_ASYNC_ERROR_HANDLING: 1 above (when unset), never over the user's value.
rm -f env.*
TORCH_NCCL_ASYNC_ERROR_HANDLING=0 run_plaunch --nproc-per-node 2 --log-dir "$T/logs" ./dump.sh
is "$(grep -h '^TORCH_NCCL_ASYNC_ERROR_HANDLING=' env.0 env.1 | sort -u)" "TORCH_NCCL_ASYNC_ERROR_HANDLING=0" \
    "a user's TORCH_NCCL_ASYNC_ERROR_HANDLING is kept"
rm -f env.*
TORCHELASTIC_ERROR_FILE=/tmp/stale.json run_plaunch --nproc-per-node 2 --log-dir "$T/logs" ./dump.sh
is "$(sed -n 's/^TORCHELASTIC_ERROR_FILE=//p' env.1)" "$T/logs/error.1.json" \
    "TORCHELASTIC_ERROR_FILE is plaunch's, per rank in the log directory, whatever was inherited"
done_testing
