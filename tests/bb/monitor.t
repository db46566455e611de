#!/bin/bash
# monitor.t: the health monitor in real jobs: monitor.NODE.csv holds a row per rank per sample; a worker whose
# memory grows steadily is named in the Health block and a steady one is not; --monitor 0 writes nothing; a GPU
# job without NVML goes on with host metrics and one note; a bad --monitor-config is refused up front.
. "$(dirname "$0")/lib.sh"
plan 33
PY=$(command -v python3)
# Short thresholds so a job of a few seconds is judged (defaults: 60 s of warm-up, 2 minutes of growth).
cat >fast.ini <<'E'
[monitor]
warmup_s = 1
min_steady_s = 3
growth_min_s = 3
growth_min_mib = 40
growth_mib_min = 60
E
# rank 1 grows by 16 MiB every 0.25 s (~3.8 GiB/min) for 6 s; rank 0 holds 64 MiB, steady
cat >leak.py <<'E'
import os, time
keep, end = [bytearray(64 << 20)], time.time() + 6
while time.time() < end:
    if os.environ["RANK"] in os.environ.get("LEAK_RANKS", "1").split():
        keep.append(bytearray(16 << 20))
        for b in keep[-1:]:
            b[::4096] = b"x" * len(b[::4096])   # touch every page: resident, not just reserved
    time.sleep(0.25)
E
run_plaunch --nproc-per-node 2 --monitor 0.2 --monitor-config fast.ini --log-dir "$T/l1" "$PY" leak.py
is "$rc" 0 "a job of a leaking and a steady CPU worker exits 0"
csv=$T/l1/monitor.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').csv
ok $([ -s "$csv" ]; echo $?) "monitor.NODE.csv is in the log directory"
rows0=$(awk -F, 'NR > 1 && $3 == 0' "$csv" | wc -l)
rows1=$(awk -F, 'NR > 1 && $3 == 1' "$csv" | wc -l)
ok $([ "$rows0" -ge 15 ] && [ "$rows1" -ge 15 ]; echo $?) "a row per rank per sample (every 0.2 s for 6 s: $rows0 and $rows1 rows)"
like "$err" "health" "the Health block is on the terminal"
like "$err" "memory.*rank 1 |rank 1 .*(grows|growth|\+[0-9]+ MiB/min)" "... naming rank 1's growing memory"
ok $(printf '%s\n' "$err" | grep -E 'rank 0 ' | grep -qiE 'grow|leak'; [ $? != 0 ]; echo $?) "... and not rank 0's steady one"
like "$(cat "$T/l1/plaunch.log")" "===== health" "plaunch.log holds the Health block too"

run_plaunch --nproc-per-node 2 --monitor 0 --log-dir "$T/l2" /bin/true
is "$rc $(ls "$T/l2" | grep -c '^monitor\.')" "0 0" "--monitor 0: no monitor file, no sampler"
ok $(printf '%s' "$err" | grep -q health; [ $? != 0 ]; echo $?) "... and no Health block"

# A job too short to judge says nothing on the terminal.
run_plaunch --nproc-per-node 2 --log-dir "$T/l3" /bin/true
ok $(printf '%s' "$err" | grep -q health; [ $? != 0 ]; echo $?) "a job too short to judge prints no Health block"

# GPU workers where no NVML can be loaded: host metrics go on, with one note.
CUDA_VISIBLE_DEVICES=0,1 PLAUNCH_NVML_LIBRARY=$T/no-such-libnvidia-ml.so run_plaunch --gpus all --monitor 0.2 \
    --preflight on --log-dir "$T/l4" "$PY" -c 'import time; time.sleep(1.5)'
is "$rc" 0 "GPU workers without NVML: the job runs"
like "$(cat "$T/l4/plaunch.log")" "NVML absent" "... plaunch.log notes that NVML is absent"
csv=$T/l4/monitor.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').csv
ok $(awk -F, 'NR > 1 && $3 == 1' "$csv" | grep -q .; echo $?) "... and host metrics are still sampled"

# ---- GPU patterns, from a stand-in NVML (tests/bb/fake_nvml.c) replaying scripted series, in real jobs ----------
FAKE=$T/libfake_nvml.so
cc -I"$PLAUNCH_SRC" -shared -fPIC -o "$FAKE" "$PLAUNCH_SRC/tests/bb/fake_nvml.c" "$PLAUNCH_SRC/tests/bb/fake_nvml_script.c"
ok $? "the stand-in NVML builds"
# One step per sample (every 0.2 s), 40 steps: GPU 0 busy and steady (healthy); GPU 1 waits for input half the time
# (and is so a straggler against 0, 2, 3); GPU 2's worker grows by 40 MiB a sample; GPU 3 runs hot (HW thermal
# throttle), near full, and logs Xid 79 and an uncorrectable ECC error.
{
    echo "driver 12020"
    for g in 0 1 2 3; do echo "gpu $g mem_total=81559 sm=1980 sm_max=1980 power=400 power_limit=700 temp=60 throttle=0"; done
    for k in $(seq 0 40); do
        echo "gpu 0 step $k util=96 fine=95,97 mem_used=20000 proc=local0:20000"
        echo "gpu 1 step $k util=45 fine=0,100 mem_used=20000 proc=local1:20000"
        echo "gpu 2 step $k util=95 fine=95,95 mem_used=$((20000 + 40 * k)) proc=local2:$((20000 + 40 * k))"
        echo "gpu 3 step $k util=94 fine=94,94 mem_used=79500 proc=local3:79000 throttle=0x40 temp=91 sm=1410"
    done
    echo "gpu 3 step 12 xid=79 ecc_uncorr=1"
} >series.txt
gpujob() { # gpujob LOGDIR [ENV...] -- one GPU job of 4 fake GPUs, 8 s
    local d=$1; shift
    env CUDA_VISIBLE_DEVICES=0,1,2,3 PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/series.txt "$@" \
        timeout -k 5 60 "$PLAUNCH" --gpus all --monitor 0.2 --monitor-config fast.ini --preflight "${PF:-on}" --log-dir "$d" \
        "$PY" -c 'import time; time.sleep(8)' >"$T/.out" 2>"$T/.err"
    rc=$?; err=$(cat "$T/.err")
}
gpujob "$T/g1"
is "$rc" 0 "a GPU job of 4 scripted GPUs exits 0"
block=$(printf '%s\n' "$err" | sed -n '/===== health/,$p')
like "$block" "input-bound +rank 1 .*GPU busy 4[0-9] %" "input-bound: rank 1, with its GPU busy share"
like "$block" "straggler +rank 1 " "straggler: rank 1 against the median of its peers"
like "$block" "gpu-mem-growth +rank 2 .*\+[0-9]+ MiB/min" "GPU memory growth: rank 2, with its slope"
like "$block" "throttling +rank 3 .*by temperature [0-9]+ %" "throttling: rank 3, by temperature, with its share"
like "$block" "xid +rank 3 .*00000000:13:00.0.*Xid 79" "Xid 79: rank 3, with the GPU's PCI id"
like "$block" "ecc +rank 3 .*uncorrectable" "uncorrectable ECC: rank 3"
like "$block" "mem-near-full +rank 3 " "memory near full: rank 3"
ok $(printf '%s\n' "$block" | grep -q ' rank 0 '; [ $? != 0 ]; echo $?) "the healthy rank 0 is named in no finding"

# A stuck NVML call: the job ends on time, host metrics go on
gpujob "$T/g2" FAKE_NVML_HANG=nvmlDeviceGetUtilizationRates@12
is "$rc" 0 "NVML hangs after 3 samples: the job still ends on time (exit 0)"
like "$(cat "$T/g2/plaunch.log")" "NVML gave no sample within 5.0 s.*host metrics go on" "... plaunch.log says GPU metrics stopped"
csv=$T/g2/monitor.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').csv
late=$(awk -F, 'NR > 1 && $8 == "" && $25 != ""' "$csv" | wc -l)
ok $([ "$late" -gt 0 ]; echo $?) "... and host metrics are sampled after it ($late rows without GPU metrics)"

# Preflight: a GPU with retired pages pending is named before any worker starts; strict refuses to start
echo "gpu 1 retired=2 retired_pending=1" >>series.txt
PF=on gpujob "$T/g3"
like "$err" "preflight: GPU 1 \(00000000:11:00.0\): page retirement pending" "preflight on: the finding, one line, and the job runs"
rm -f started
env CUDA_VISIBLE_DEVICES=0,1,2,3 PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/series.txt \
    timeout -k 5 60 "$PLAUNCH" --gpus all --preflight strict --log-dir "$T/g4" sh -c 'touch started' >/dev/null 2>"$T/.err"
rc=$?
is "$rc $([ -e started ] && echo started)" "125 " "--preflight strict: exit 125, no worker started"
like "$(cat "$T/.err")" "preflight strict: 1 finding" "... saying why"

# ---- two nodes: the coordinator's Health block covers the ranks of both ------------------------------------------
if [ "$(id -u)" = 0 ]; then
    . "$PLAUNCH_SRC/scripts/netns.sh"
    NS="pmo$$"; NS=${NS:0:8}
    netns_down "$NS" 2 >/dev/null 2>&1
    trap 'netns_down "$NS" 2; _bb_cleanup' EXIT
    netns_up "$NS" 2 27
    export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    for i in 2 1; do
        LEAK_RANKS="1 3" ip netns exec "$NS$i" unshare --uts sh -c 'hostname "$0" && exec "$@"' "node$i" "$PLAUNCH" --nnodes 2 --node-rank $((i - 1)) --master "$(netns_addr "$NS" 1):29441" \
            --nproc-per-node 2 --monitor 0.2 --monitor-config fast.ini --log-dir "$T/n$i" "$PY" leak.py \
            >"$T/n$i.out" 2>"$T/n$i.err" &
        echo $! >"pid.$i"
    done
    wait "$(cat pid.1)"; rc1=$?; wait "$(cat pid.2)"; rc2=$?
    is "$rc1 $rc2" "0 0" "two nodes of 2 workers (rank 1 and rank 3 leak): both exit 0"
    like "$(cat "$T/n1.err")" "===== health: [0-9]+ findings? over 4 ranks on 2 nodes" \
        "the coordinator's Health block covers the 4 ranks of both nodes"
    like "$(cat "$T/n1.err")" "host-mem-growth +rank 3 " "... naming rank 3, a rank of the other node"
else
    for k in 1 2 3; do ok 0 "# SKIP two nodes need root (network namespaces)"; done
fi

echo '[monitor]
util_low = lots' >bad.ini
run_plaunch --nproc-per-node 1 --monitor-config bad.ini /bin/true
like "$rc $err" "^2 .*bad.ini:2" "a bad --monitor-config: exit 2 up front, naming file:line"
done_testing
