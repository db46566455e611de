#!/bin/bash
# preflight.t: the node preflight before any worker starts, in a mount namespace whose /dev/shm is a 64 MiB tmpfs
# (Docker's default): --preflight strict refuses with exit 2 naming /dev/shm and the docker flag; warn (the default,
# also spelled on) starts the job with the finding in plaunch.log and the Health block; an interface name that is
# not there is named; on two nodes (network namespaces) a node's findings reach the coordinator's Health block in
# its JOIN.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    echo "1..0 # SKIP mount namespaces need root"; exit 0
fi
plan 18

# small CMD...: CMD in a new mount namespace whose /dev/shm is a 64 MiB tmpfs.
small() { unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"' sh "$@"; }
runs() { rm -f ran; small timeout -k 5 60 "$PLAUNCH" "$@" >"$T/.out" 2>"$T/.err"; rc=$?; }

runs --preflight strict --nproc-per-node 2 --log-dir "$T/l1" sh -c 'touch ran'
is "$rc $([ -e ran ] && echo ran)" "2 " "--preflight strict, /dev/shm of 64 MiB: exit 2, no worker started"
like "$(cat "$T/.err")" "preflight strict: 1 finding on .*/dev/shm is 64 MiB, less than the 512 MiB 2 workers need" \
    "... the sentence names /dev/shm and what the workers need"
like "$(cat "$T/.err")" "run the container with --shm-size=512m \(docker run --shm-size, or --ipc=host" \
    "... and the docker flags that fix it"

runs --nproc-per-node 2 --log-dir "$T/l2" sh -c 'touch ran'
is "$rc $([ -e ran ] && echo ran)" "0 ran" "--preflight warn (the default): the job runs"
like "$(cat "$T/l2/plaunch.log")" "warn  preflight: /dev/shm is 64 MiB" "... the warning is in plaunch.log"
like "$(cat "$T/.err")" "plaunch: health: preflight: 1 finding on 1 node" "... and in the Health block"
like "$(cat "$T/l2/plaunch.log")" "plaunch:   [^ ]+: /dev/shm is 64 MiB" "... which plaunch.log has too"

runs --preflight on --nproc-per-node 1 --log-dir "$T/l3" sh -c 'touch ran'
is "$rc $([ -e ran ] && echo ran)" "0 ran" "--preflight on is warn"
runs --preflight off --nproc-per-node 1 --log-dir "$T/l4" true
unlike() { if [[ "$1" =~ $2 ]]; then ok 1 "$3"; else ok 0 "$3"; fi; }
unlike "$(cat "$T/l4/plaunch.log")" "preflight: /dev/shm" "--preflight off: no check"
runs --preflight-shm 16M,16M --preflight strict --nproc-per-node 2 --log-dir "$T/l5" true
is "$rc" 0 "--preflight-shm 16M,16M: 64 MiB is enough"

NCCL_SOCKET_IFNAME=nosuch timeout -k 5 60 "$PLAUNCH" --nproc-per-node 1 --log-dir "$T/l6" true 2>"$T/.err"
like "$(cat "$T/l6/plaunch.log")" "NCCL_SOCKET_IFNAME=nosuch names no interface of this node \(NCCL reads each name as a prefix\)" \
    "NCCL_SOCKET_IFNAME naming no interface is named"
NCCL_SOCKET_IFNAME=$'\e[31mred' timeout -k 5 60 "$PLAUNCH" --nproc-per-node 1 --log-dir "$T/l8" true >"$T/.out" 2>"$T/.err"
ok $(grep -q $'\e' "$T/.err" "$T/l8/plaunch.log"; [ $? = 1 ]; echo $?) "a value with an escape byte reaches no terminal or log raw"
GLOO_SOCKET_IFNAME=lo NCCL_SOCKET_IFNAME=^docker timeout -k 5 60 "$PLAUNCH" --preflight strict --nproc-per-node 1 \
    --log-dir "$T/l7" true 2>"$T/.err"
is "$?" 0 "an interface that is up, and an exclusion list: no finding"

# The GPU memory wait of a restart, through the sampler's NVML (the stand-in tests/bb/fake_nvml.c): generation 0
# fails; a dead process that NVML still lists holds GPU 0 until --gpu-release-wait, then generation 1 starts anyway;
# with the GPU free, generation 1 starts at the first look. Both waits are logged with their length.
FAKE=$T/libfake_nvml.so
cc -I"$PLAUNCH_SRC" -shared -fPIC -o "$FAKE" "$PLAUNCH_SRC/tests/bb/fake_nvml.c" "$PLAUNCH_SRC/tests/bb/fake_nvml_script.c"
gpuwait() { # gpuwait LOGDIR SCRIPT-LINE
    echo "$2" >"$T/nvml.txt"
    CUDA_VISIBLE_DEVICES=0 PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/nvml.txt timeout -k 5 60 "$PLAUNCH" \
        --gpus all --max-restarts 1 --gpu-release-wait 1 --log-dir "$1" sh -c '[ "$PLAUNCH_GENERATION" = 1 ]' \
        >"$T/.out" 2>"$T/.err"
    rc=$?
}
gpuwait "$T/w1" "gpu 0 proc=999999:2048 mem_used=2100 mem_total=81000"
is "$rc" 0 "GPU held by a dead process: the restart waits, then starts anyway (exit 0 in generation 1)"
like "$(cat "$T/w1/plaunch.log")" "gpu-wait: generation 1: after 1\.[0-9]+ s \(--gpu-release-wait 1\) the GPUs still hold 2048 MiB of the last generation \(GPU 0: pid 999999 \(exited\), 2048 MiB\)" \
    "... the wait is logged with its length and what held the GPU"
gpuwait "$T/w2" "gpu 0 proc=- mem_used=10 mem_total=81000"
like "$(cat "$T/w2/plaunch.log")" "gpu-wait: generation 1: the GPUs hold no memory of the last generation after 0\.[0-9]+ s \(1 look\)" \
    "GPU free: the restart goes on at the first look, logged"

# Two nodes: node 2's /dev/shm is small; its finding travels in JOIN to the coordinator's Health block on node 1.
. "$PLAUNCH_SRC/scripts/netns.sh"
NS="pf$$"; NS=${NS:0:8}; NET=60; PORT=29461
netns_down "$NS" 2 >/dev/null 2>&1
trap 'netns_down "$NS" 2; _bb_cleanup' EXIT
if netns_up "$NS" 2 $NET; then
    MASTER="$(netns_addr "$NS" 1):$PORT"
    export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    ip netns exec "${NS}1" timeout -k 5 90 "$PLAUNCH" --master "$MASTER" --nnodes 2 --nproc-per-node 1 \
        --log-dir "$T/m1" true >"$T/out1" 2>"$T/err1" &
    p1=$!
    ip netns exec "${NS}2" unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"' sh \
        timeout -k 5 90 "$PLAUNCH" --master "$MASTER" --nnodes 2 --nproc-per-node 2 --log-dir "$T/m2" true \
        >"$T/out2" 2>"$T/err2" &
    p2=$!
    wait $p1; r1=$?; wait $p2; r2=$?
    is "$r1 $r2" "0 0" "two nodes, one with a small /dev/shm: the job runs (warn)"
    like "$(cat "$T/err1")" "plaunch: health: preflight: 1 finding on 1 node.*
plaunch:   [^ ]+: /dev/shm is 64 MiB, less than the 512 MiB 2 workers need" \
        "the coordinator's Health block lists node 2's finding, sent in its JOIN"
else
    ok 1 "cannot create network namespaces"; ok 1 "skipped"
fi
done_testing
