#!/bin/bash
# monitor_sampler.t: the monitor's sampler (`plaunch __monitor`) through its agent-side API (tests/tools/pl_monitor):
# host metrics without NVML and the note saying so; scripted values of a stand-in NVML (tests/bb/fake_nvml.c) on the
# right ranks and GPUs; RSS growth, CPU share and process trees of real workers; a hung NVML call that misses the
# deadline and is killed without a zombie; the preflight's findings and the driver's CUDA version; and the sampler
# on its own (bad requests, EOF, a dead agent).
. "$(dirname "$0")/lib.sh"
TOOL=$PLAUNCH_BUILD/tests/tools/pl_monitor
if [ ! -x "$TOOL" ]; then
    echo "1..0 # SKIP $TOOL not built (make unit)"
    exit 0
fi
FAKE=$T/libfake_nvml.so
if ! cc -I"$PLAUNCH_SRC" -shared -fPIC -o "$FAKE" "$PLAUNCH_SRC/tests/bb/fake_nvml.c" "$PLAUNCH_SRC/tests/bb/fake_nvml_script.c"; then
    echo "Bail out! cannot build the stand-in NVML"
    exit 1
fi

# mon ARGS...: pl_monitor with the real sampler; $mrc, $out (stdout), $merr.
mon() {
    timeout -k 5 60 "$TOOL" --exe "$PLAUNCH" "$@" >"$T/mon.out" 2>"$T/mon.err"
    mrc=$?
    out=$(cat "$T/mon.out")
    merr=$(cat "$T/mon.err")
}
# val RANK ROUND KEY: KEY of RANK's sample in answer ROUND.
val() {
    awk -v r="$1" -v k="$2" -v key="$3" '
        /^answer: round / { round = $3 + 0 }
        /^sample: / && round == k {
            rk = ""; v = ""
            for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == "rank") rk = a[2]; if (a[1] == key) v = a[2] }
            if (rk == r) print v
        }' "$T/mon.out"
}
# within VALUE LO HI NAME: LO <= VALUE <= HI.
within() {
    if awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v != "" && v != "nan" && v + 0 >= lo && v + 0 <= hi) }'; then
        ok 0 "$4 ($1)"
    else
        ok 1 "$4: '$1' not within $2..$3"
    fi
}
# samples_of KEY RANK ROUNDS...: the values, space-separated.
samples_of() {
    local key=$1 rank=$2 k s=""
    shift 2
    for k in "$@"; do s="$s $(val "$rank" "$k" "$key")"; done
    echo "${s# }"
}
stopped_clean() { like "$out" "stopped: pid [0-9]+ reaped, no zombie" "$1: the sampler was killed and reaped"; }

# ---- without NVML: host metrics, and a note that says why --------------------------------------------------------
PLAUNCH_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 mon --preflight 0 --worker 0 'exec sleep 30'
is "$mrc" 0 "no NVML: the tool ran (exit 0)"
like "$out" "note: NVML absent \(/nonexistent/libnvidia-ml.so.1: .*No such file.*\): host metrics only" \
    "no NVML: the note names the library and why"
like "$out" "preflight: nvml_ok=0 cuda=- lines=0" "no NVML: preflight says NVML did not answer, no findings"
is "$(val 0 1 gpu)/$(val 0 1 pci)/$(val 0 1 gpu_util)/$(val 0 1 xid)/$(val 0 1 throttle)" "0/-/nan/-1/-1" \
    "no NVML: the GPU entry is kept, GPU metrics unknown"
is "$(val 0 1 procs)/$(val 0 1 threads)" "1/1" "no NVML: one process, one thread (exec sleep)"
within "$(val 0 1 rss_mib)" 0.1 64 "no NVML: the worker's RSS is known"
within "$(val 0 1 host_avail_frac)" 0.0001 1 "no NVML: the node's available memory share"
stopped_clean "no NVML"
PLAUNCH_NVML_LIBRARY=$FAKE mon --no-nvml --worker 0 'exec sleep 30'
like "$out" "note: NVML not used \(--no-nvml\): host metrics only" "--no-nvml: not loaded even where it exists"
is "$(val 0 1 gpu_util)" nan "--no-nvml: GPU metrics unknown"

# ---- real workers: growing memory, a busy core, a process tree --------------------------------------------------
cat >"$T/alloc.py" <<'EOF'
import time
held = []
while True:
    held.append(b"x" * (8 << 20))  # written, so resident
    time.sleep(0.1)
EOF
mon --samples 5 --interval 300 --worker - "exec python3 $T/alloc.py" --worker - 'while :; do :; done' \
    --worker - 'sleep 30 & sleep 30 & wait'
is "$mrc" 0 "host metrics: five rounds answered"
rss=$(samples_of rss_mib 0 1 2 3 4 5)
if awk -v s="$rss" 'BEGIN { n = split(s, a, " "); for (i = 3; i <= n; i++) if (a[i] + 0 <= a[i-1] + 0) exit 1; exit !(a[n] - a[1] >= 40) }'; then
    ok 0 "a worker that allocates steadily: rss_mib grows ($rss)"
else
    ok 1 "rss_mib does not grow steadily: $rss"
fi
is "$(val 1 1 cpu_pct)" nan "cpu_pct is unknown at a rank's first sample"
cpu=$(samples_of cpu_pct 1 2 3 4 5)
mean=$(awk -v s="$cpu" 'BEGIN { n = split(s, a, " "); for (i = 1; i <= n; i++) t += a[i]; printf "%.1f", t / n }')
within "$mean" 60 130 "a busy loop: cpu_pct ~100 % of one core (rounds: $cpu)"
within "$(val 0 5 cpu_pct)" 0 40 "the allocating worker is mostly asleep"
is "$(val 2 3 procs)/$(val 2 3 threads)" "3/3" "a worker with two children: procs and threads count its tree"
stopped_clean "host metrics"

# ---- the stand-in NVML: scripted values on the right ranks and GPUs ---------------------------------------------
U1=GPU-5f1c0b3e-1111-2222-3333-444455556666
cat >"$T/series.txt" <<EOF
# GPU 0: rank 0 and its child; GPU 1: rank 1 by UUID, rank 2 by index
driver 12040
gpu 0 pci=00000000:3B:00.0 mem_total=81559 sm_max=1980 power_limit=700 util=10 mem_used=1000 sm=1500
gpu 0 power=300.5 temp=50 throttle=0 ecc_corr=0 ecc_uncorr=0 pcie_tx=1024 pcie_rx=2048
gpu 0 fine=0,0,0,100,0,0 proc=local0:512,local0.1:256,999999:4096
gpu 0 step 1 util=90 fine=100,100,0,0,100 mem_used=2000 proc=local0:1024,local0.1:256 xid=79 throttle=0x44 ecc_corr=5
gpu 1 uuid=$U1 mem_total=40960 mem_used=100 util=33 temp=61 proc=local2:300
gpu 1 unsupported=nvmlDeviceGetPowerUsage,nvmlDeviceGetTemperatureV
gpu 1 step 1 util=44
EOF
PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/series.txt mon --samples 3 --interval 50 \
    --worker 0 'sleep 30 & wait' --worker "$U1" 'exec sleep 30' --worker 1 'exec sleep 30' --worker - 'exec sleep 30' \
    --worker 7 'exec sleep 30'
is "$mrc" 0 "fake NVML: three rounds answered"
like "$out" "note: $" "fake NVML: no note while NVML works"
is "$(val 0 1 pci)/$(val 0 1 gpu_util)/$(val 0 2 gpu_util)/$(val 0 3 gpu_util)" "00000000:3B:00.0/10/90/90" \
    "rank 0: its GPU's PCI id and utilization, step by step (held past the last step)"
is "$(val 0 1 gpu_idle_frac)/$(val 0 1 gpu_idle_ms)/$(val 0 2 gpu_idle_frac)/$(val 0 2 gpu_idle_ms)" \
    "0.833333/300/0.4/200" "rank 0: idle share and longest idle run of the fine samples since the last round"
is "$(val 0 3 gpu_idle_frac)" nan "rank 0: no new fine samples, idle share unknown"
is "$(val 0 1 gpu_mem_proc_mib)/$(val 0 2 gpu_mem_proc_mib)" "768/1280" \
    "rank 0: GPU memory of the worker and its child, not of a foreign pid"
is "$(val 0 1 gpu_mem_used_mib)/$(val 0 2 gpu_mem_used_mib)/$(val 0 1 gpu_mem_total_mib)" "1000/2000/81559" \
    "rank 0: device memory used and total"
is "$(val 0 1 sm_clock_mhz)/$(val 0 1 sm_clock_max_mhz)/$(val 0 1 power_w)/$(val 0 1 power_limit_w)/$(val 0 1 temp_c)" \
    "1500/1980/300.5/700/50" "rank 0: clocks, power, temperature"
is "$(val 0 1 throttle)/$(val 0 2 throttle)/$(val 0 1 ecc_corrected)/$(val 0 2 ecc_corrected)/$(val 0 2 ecc_uncorrected)" \
    "0/68/0/5/0" "rank 0: throttle bits and ECC counts"
is "$(val 0 1 pcie_tx_mibs)/$(val 0 1 pcie_rx_mibs)" "1/2" "rank 0: PCIe throughput in MiB/s"
is "$(val 0 1 xid)/$(val 0 2 xid)/$(val 0 3 xid)" "0/79/0" "rank 0: the Xid event in the round it happened, once"
is "$(val 1 1 gpu_util)/$(val 2 1 gpu_util)/$(val 1 2 gpu_util)/$(val 2 2 gpu_util)" "33/33/44/44" \
    "ranks 1 (UUID) and 2 (index) share GPU 1, read once per round"
is "$(val 1 1 pci)/$(val 1 1 gpu_mem_proc_mib)/$(val 2 1 gpu_mem_proc_mib)" "00000000:11:00.0/0/300" \
    "GPU 1: process memory goes to the rank whose process it is"
is "$(val 1 1 power_w)/$(val 1 1 temp_c)/$(val 1 1 gpu_idle_frac)" "nan/61/nan" \
    "GPU 1: unsupported calls are unknown; the temperature falls back to nvmlDeviceGetTemperature"
is "$(val 3 1 gpu_util)/$(val 3 1 xid)/$(val 3 1 gpu_mem_proc_mib)" "nan/-1/nan" "rank 3: a CPU worker has no GPU metrics"
is "$(val 4 1 gpu)/$(val 4 1 pci)/$(val 4 1 gpu_util)" "7/-/nan" "rank 4: a GPU NVML does not know is unknown"
stopped_clean "fake NVML"

# ---- a hung NVML call: no answer within the deadline, the sampler is killed, no zombie ---------------------------
start=$(date +%s%N)
PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/series.txt FAKE_NVML_HANG=nvmlDeviceGetUtilizationRates@1 \
    mon --samples 3 --interval 50 --deadline 500 --worker 0 'exec sleep 30'
ms=$((($(date +%s%N) - start) / 1000000))
is "$mrc" 1 "hung NVML: the tool reports a missed deadline (exit 1)"
like "$out" "answer: round 1, 1 samples" "hung NVML: the first round was answered"
like "$out" "timeout: no answer to round 2 within 500 ms" "hung NVML: the second never comes"
stopped_clean "hung NVML"
within "$ms" 0 5000 "hung NVML: the agent side was never stalled (${ms} ms in all)"
pid=$(sed -n 's/^started: pid \([0-9]*\).*/\1/p' "$T/mon.out")
alive "$pid" && ok 1 "hung NVML: sampler $pid still runs" || ok 0 "hung NVML: sampler $pid is gone"
PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_HANG=nvmlInit_v2 mon --preflight 0 --deadline 300
like "$out" "timeout: no preflight answer within 300 ms" "NVML hung in nvmlInit_v2: no preflight answer"
stopped_clean "hung nvmlInit_v2"

# ---- the preflight: retired pages, remapped rows, ECC, foreign processes, lost and unknown GPUs ------------------
cat >"$T/preflight.txt" <<'EOF'
driver 12040
gpu 0 proc=local0:512
gpu 1 retired=2 retired_pending=1 ecc_uncorr=3 ecc_uncorr_agg=7 proc=1:3072
gpu 2 remap_unc=4 remap_corr=1 remap_pending=1
gpu 3 remap_failed=1 remap_unc=9
gpu 4 lost=1
EOF
PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/preflight.txt mon --preflight 0,1,2,3,4,9 --worker 0 'exec sleep 30'
is "$mrc" 0 "preflight: answered"
like "$out" "preflight: nvml_ok=1 cuda=12.4 lines=7" "preflight: NVML answered, the driver's CUDA 12.4, 7 findings"
has() { if grep -qF -- "finding: $1" "$T/mon.out"; then ok 0 "preflight: $2"; else ok 1 "preflight: $2: '$1' missing"; fi; }
has "GPU 1 (00000000:11:00.0): page retirement pending (2 pages retired): reset the GPU or drain the node" \
    "retired pages pending"
has "GPU 1 (00000000:11:00.0): uncorrectable ECC errors: 3 since the driver loaded, 7 in the GPU's life" \
    "uncorrectable ECC, volatile and aggregate"
has "GPU 1 (00000000:11:00.0): 1 other process already on it (pid 1 with 3.0 GiB): another job is using this GPU" \
    "a foreign process"
has "GPU 2 (00000000:12:00.0): row remapping pending (4 rows remapped for uncorrectable errors, 1 for correctable ones)" \
    "row remapping pending"
has "GPU 3 (00000000:13:00.0): a row remapping failed (9 rows remapped for uncorrectable errors): the GPU needs service" \
    "row remapping failed"
has "GPU 4: it does not answer (GPU is lost): drain the node" "a GPU that fell off the bus"
has "GPU 9: NVML cannot find it (Invalid Argument): compare --gpus or CUDA_VISIBLE_DEVICES with \`nvidia-smi -L\`" \
    "an entry NVML does not know"
grep -q "finding: GPU 0" "$T/mon.out" && ok 1 "preflight: our own worker on GPU 0 was reported" ||
    ok 0 "preflight: processes of our own tree are not foreign"
printf 'gpu 0 frobnicate=1\n' >"$T/bad.txt"
PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/bad.txt mon --preflight 0
like "$out" "note: NVML failed to start \($FAKE: .*\): host metrics only" "a broken script: NVML fails to start, said so"
like "$merr" "fake_nvml: $T/bad.txt:1: unknown key 'frobnicate'" "a broken script: the fake names file:line"

# ---- the sampler on its own ----------------------------------------------------------------------------------------
printf 'garbage-garbage-garbage!' | "$PLAUNCH" __monitor --no-nvml >"$T/s.out" 2>"$T/s.err"
is "$?" 2 "sampler: a bad request exits 2"
like "$(cat "$T/s.err")" "bad request: not a request of this plaunch" "sampler: and says why on stderr"
printf 'PLM1S\0\0\0\210\023\0\0\0\0\0\0' | "$PLAUNCH" __monitor --no-nvml >"$T/s.out" 2>"$T/s.err"
is "$?" 2 "sampler: a request for 5000 targets exits 2"
like "$(cat "$T/s.err")" "request for 5000 items \(1 to 1024\)" "sampler: naming the bound"
"$PLAUNCH" __monitor --no-nvml </dev/null >"$T/s.out" 2>"$T/s.err"
is "$?/$(wc -c <"$T/s.out")" "0/0" "sampler: EOF on stdin exits 0, silently"
"$PLAUNCH" __monitor --frobnicate </dev/null 2>"$T/s.err"
is "$?" 2 "sampler: an unknown argument exits 2"
code=$(python3 - "$PLAUNCH" <<'EOF'
import os, struct, subprocess, sys
r, w = os.pipe()
os.close(r)  # the agent is gone: nobody reads the answers
p = subprocess.Popen([sys.argv[1], "__monitor", "--no-nvml"], stdin=subprocess.PIPE, stdout=w, stderr=subprocess.DEVNULL)
os.close(w)
hdr = struct.pack("<IBBHII", 0x314D4C50, ord("S"), 0, 0, 1, 80)
p.stdin.write(hdr + struct.pack("<iiii64s", 0, 0, 0, os.getpid(), b""))
p.stdin.flush()
try:
    print(p.wait(timeout=20))
except subprocess.TimeoutExpired:
    p.kill(); print("hung")
EOF
)
is "$code" -13 "sampler: an answer to a dead agent ends it by SIGPIPE, it does not block"

echo "1..$_tap_n"
done_testing
