#!/bin/bash
# monitor.t: the health monitor in real jobs: monitor.NODE.csv holds a row per rank per sample; a worker whose
# memory grows steadily is named in the Health block and a steady one is not; --monitor 0 writes nothing; a GPU
# job without NVML goes on with host metrics and one note; a bad --monitor-config is refused up front.
. "$(dirname "$0")/lib.sh"
plan 14
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
    if os.environ["RANK"] == "1":
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

echo '[monitor]
util_low = lots' >bad.ini
run_plaunch --nproc-per-node 1 --monitor-config bad.ini /bin/true
like "$rc $err" "^2 .*bad.ini:2" "a bad --monitor-config: exit 2 up front, naming file:line"
done_testing
