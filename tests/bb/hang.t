#!/bin/bash
# hang.t: hang localisation in real jobs: a torch gloo job whose rank 2 sleeps in a named function while the others
# wait in all_reduce is declared hung after --hang-timeout; hang.0.txt and the root cause name rank 2 and that
# function, the other three share one stack; --on-hang stop ends it (124), restart restarts it; no process is left.
# A C worker stuck in a named function: its native stack names it. A rank that ends on its SIGABRT first does not
# have the others stopped before they printed their tracebacks. No false alarm for a silent job that reports
# steps, nor for a long but finite step. A rank at half the others' step rate is named; equal ranks are not.
# torch's @record error file of a failing rank is quoted with its traceback.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
HAVE_TORCH=1
$PY -c 'import torch.distributed' 2>/dev/null || HAVE_TORCH=0

# no_strays: 0 when no process whose command line names this test's directory is left
no_strays() { ! pgrep -f "$T/" >/dev/null; }

# ---- torch gloo, 4 ranks: rank 2 hangs before the all_reduce the others wait in ------------------------------
cat >gloo_hang.py <<'W'
import datetime, os, threading, time

def stuck_in_load_batch():
    time.sleep(3600)

# start-up (importing torch, the rendezvous) may take longer than the timeout on a loaded machine: a child process
# reports steps until the process group is up, as a program with a long set-up would (not a thread: importing
# torch's extension holds the GIL for many seconds on a busy machine, and a thread's steps would stop with it)
import subprocess
beat = subprocess.Popen(["sh", "-c", 'n=0; while :; do n=$((n+1)); echo $n >"$PLAUNCH_PROGRESS_FILE"; sleep 0.5; done'])
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
beat.kill()
beat.wait()
print("rank", dist.get_rank(), "ready", flush=True)
if dist.get_rank() == 2:
    stuck_in_load_batch()
t = torch.ones(4)
dist.all_reduce(t)
W
if [ $HAVE_TORCH = 1 ]; then
    start=$(date +%s)
    run_plaunch --nproc-per-node 4 --hang-timeout 5 --on-hang stop --log-dir "$T/g1" "$PY" "$T/gloo_hang.py"
    took=$(($(date +%s) - start))
    is "$rc" 124 "hung gloo job, --on-hang stop: exit status 124"
    ok $([ "$took" -le 25 ]; echo $?) "... within the timeout + 10 s and start-up ($took s)"
    like "$err" "hung: root cause" "... the root-cause block says the job hung"
    like "$err" "rank 2[^0-9].*stuck_in_load_batch" "... and names rank 2 in stuck_in_load_batch"
    like "$err" "odd one out" "... as the odd one out"
    like "$err" "ranks 0-1,3" "... the other three share one stack"
    ok $([ -s "$T/g1/hang.0.txt" ]; echo $?) "hang.0.txt is in the log directory"
    like "$(cat "$T/g1/hang.0.txt" 2>/dev/null)" "all_reduce" "... the others' stack shows all_reduce"
    like "$(cat "$T/g1/hang.0.txt" 2>/dev/null)" "gloo_hang.py:4" "... rank 2's shows its file and line"
    ok $(until_ok 10 no_strays; echo $?) "... no process of the job is left"

    run_plaunch --nproc-per-node 4 --hang-timeout 5 --max-restarts 1 --log-dir "$T/g2" "$PY" "$T/gloo_hang.py"
    is "$rc" 124 "--on-hang restart (the default): one restart, then the budget is spent: 124"
    like "$(cat "$T/g2/plaunch.log")" "restarting the job.*rank 2 hung: restart 1 of 1" "... the restart blames rank 2"
    ok $([ -s "$T/g2/hang.0.txt" ] && [ -s "$T/g2/hang.1.txt" ]; echo $?) "... hang.0.txt and hang.1.txt"
    ok $(until_ok 10 no_strays; echo $?) "... no process of the job is left"
else
    for i in $(seq 1 14); do ok 0 "# SKIP no torch for $PY (python3-torch)"; done
fi

# ---- a native worker stuck in a named function ------------------------------------------------------------
run_plaunch --nproc-per-node 2 --hang-timeout 2 --on-hang stop --log-dir "$T/c1" sh -c \
    'exec "$0" named "$1.$RANK"' "$PLAUNCH_BUILD/tests/tools/pl_stuck" "$T/ready"
is "$rc" 124 "C workers stuck in a function: exit status 124"
like "$(cat "$T/c1/hang.0.txt" 2>/dev/null)" "stuck_in_named_function" "... their native stack names the function"
like "$(cat "$T/c1/hang.0.txt" 2>/dev/null)" "pl_stuck.c:[0-9]+" "... with its file and line"

# ---- a rank slow to end on its SIGABRT: another rank that ended first does not have it stopped ----------------
cat >slow_abrt.py <<'W'
import os, signal, time
d = os.environ["OUTDIR"]
def slow(sig, frame):  # a traceback that takes long to print: here, until the test says go
    open(d + "/abrt", "w").close()
    while not os.path.exists(d + "/go"):
        time.sleep(0.02)
    open(d + "/done", "w").close()
    os._exit(9)
if os.environ["RANK"] == "1":
    signal.signal(signal.SIGABRT, slow)
print("up", flush=True)
time.sleep(3600)
W
rm -f go abrt done
OUTDIR=$T timeout -k 5 60 "$PLAUNCH" --nproc-per-node 2 --hang-timeout 2 --on-hang stop --log-dir "$T/a1" \
    "$PY" "$T/slow_abrt.py" >/dev/null 2>&1 &
apid=$!
until_ok 30 grep -qs "stacks are taken\|stopping the other 1 worker" "$T/a1/plaunch.log"
touch go
wait "$apid"
is "$?" 124 "rank 0 ends on its SIGABRT while rank 1 still prints its traceback: the hung job ends with 124"
ok $([ -e done ]; echo $?) "... rank 1 was not stopped (SIGTERM) before it was done"
like "$(cat "$T/a1/plaunch.log")" "the other workers are stopped once the hung job's stacks are taken" \
    "... plaunch.log says why it waits"

# ---- two nodes: the hung rank on node 2, found from the coordinator on node 1 --------------------------------
cat >mn_hang.py <<'W'
import os, time
def waiting_for_the_others():
    time.sleep(3600)
def stuck_on_node_two():
    time.sleep(3600)
print("rank", os.environ["RANK"], "up", flush=True)
stuck_on_node_two() if os.environ["RANK"] == "3" else waiting_for_the_others()
W
if [ "$(id -u)" = 0 ]; then
    . "$PLAUNCH_SRC/scripts/netns.sh"
    NS="pha$$"; NS=${NS:0:8}
    netns_down "$NS" 2 >/dev/null 2>&1
    trap 'netns_down "$NS" 2; _bb_cleanup' EXIT
    netns_up "$NS" 2 29
    export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    for i in 2 1; do
        ip netns exec "$NS$i" unshare --uts sh -c 'hostname "$0" && exec "$@"' "node$i" timeout -k 5 60 "$PLAUNCH" \
            --nnodes 2 --node-rank $((i - 1)) --master "$(netns_addr "$NS" 1):29451" --nproc-per-node 2 \
            --hang-timeout 3 --on-hang stop --log-dir "$T/m$i" "$PY" "$T/mn_hang.py" >"$T/m$i.out" 2>"$T/m$i.err" &
        echo $! >"pid.$i"
    done
    wait "$(cat pid.1)"; rc1=$?; wait "$(cat pid.2)"; rc2=$?
    is "$rc1 $rc2" "124 124" "two nodes, rank 3 on node 2 hung: both exit 124"
    like "$(cat "$T/m1.err")" "rank 3[^0-9].*stuck_on_node_two" "the coordinator on node 1 names rank 3 in stuck_on_node_two"
    like "$(cat "$T/m1/hang.0.txt" 2>/dev/null)" "node2" "... hang.0.txt on node 1 says which node rank 3 is on"
    netns_down "$NS" 2
    trap _bb_cleanup EXIT
else
    for k in 1 2 3; do ok 0 "# SKIP two nodes need root (network namespaces)"; done
fi

# ---- no false alarm ---------------------------------------------------------------------------------------
cat >steps.py <<'W'
import os, sys, time
# silent: only the step number goes to PLAUNCH_PROGRESS_FILE (the no-library way), every 0.3 s for 6 s
for step in range(20):
    with open(os.environ["PLAUNCH_PROGRESS_FILE"], "w") as f:
        f.write("%d\n" % step)
    time.sleep(0.3)
W
run_plaunch --nproc-per-node 2 --hang-timeout 2 --log-dir "$T/s1" "$PY" "$T/steps.py"
is "$rc" 0 "a silent job that reports steps is not hung (6 s at --hang-timeout 2)"
ok $([ ! -e "$T/s1/hang.0.txt" ]; echo $?) "... no hang file"
# the same through libplaunch's plaunch_progress (called here through ctypes: no plaunch_open needed); a library
# built with AddressSanitizer cannot be loaded into a Python that is not
if ldd "$PLAUNCH_BUILD/lib/libplaunch.so" 2>/dev/null | grep -q libasan; then
    ok 0 "# SKIP libplaunch.so is built with AddressSanitizer: no ctypes"
else
run_plaunch --nproc-per-node 2 --hang-timeout 2 --log-dir "$T/s4" "$PY" -c 'import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.plaunch_progress.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
for i in range(20):
    assert lib.plaunch_progress(None, i) == 0
    time.sleep(0.3)' "$PLAUNCH_BUILD/lib/libplaunch.so"
is "$rc" 0 "a silent job that reports steps with plaunch_progress is not hung"
fi
run_plaunch --nproc-per-node 2 --hang-timeout 3 --log-dir "$T/s2" "$PY" -c \
    'import time; [(print("step", i, flush=True), time.sleep(1.5)) for i in range(4)]'
is "$rc" 0 "long but finite steps (1.5 s at --hang-timeout 3) are no hang"
run_plaunch --nproc-per-node 2 --hang-timeout 0 --log-dir "$T/s3" "$PY" -c 'import time; time.sleep(2)'
is "$rc" 0 "--hang-timeout 0: no watch"

# ---- the default never ends a healthy job: silence without step reports only warns -------------------------
# a rank that prints rarely (a long evaluation): 6 s of silence at --hang-timeout 2, no --on-hang
run_plaunch --nproc-per-node 2 --hang-timeout 2 --log-dir "$T/q1" "$PY" -c \
    'import time; print("eval starts"); time.sleep(6); print("eval done")'
is "$rc" 0 "a job that prints rarely and reports no steps keeps running (6 s silent at --hang-timeout 2)"
like "$err" "no progress, stacks taken; the job goes on" "... the console says the stacks were taken and it goes on"
ok $([ -s "$T/q1/hang.0.txt" ]; echo $?) "... the stacks are in hang.0.txt"
like "$(tr "\n" " " <"$T/q1/workerlog.1")" "eval starts eval done" "... and rank 1's log has both lines"
like "$(cat "$T/q1/plaunch.log")" "rank 1 .*exited with code 0" "... rank 1 ended by itself (no SIGABRT)"
# prints without flush reach plaunch at once (PYTHONUNBUFFERED=1): a line a second is progress, no warning
run_plaunch --nproc-per-node 2 --hang-timeout 2 --log-dir "$T/q2" "$PY" -c \
    'import time
for i in range(5): print("tick", i); time.sleep(1)'
is "$rc" 0 "prints without flush, one a second: no hang"
ok $(printf '%s' "$err" | grep -q "no progress"; [ $? != 0 ]; echo $?) "... and no warning: the prints are progress"
# with --on-hang given, silence is a hang even without step reports
run_plaunch --nproc-per-node 2 --hang-timeout 2 --on-hang stop --log-dir "$T/q3" "$PY" -c \
    'import time; print("up"); time.sleep(600)'
is "$rc" 124 "--on-hang stop given: a silent job is hung (124)"
# a rank stopped by plaunch loses nothing it printed (no flush, then silence until the hang stops it)
like "$(cat "$T/q3/workerlog.0")" "up" "... and its log has what it printed before it was stopped"

# ---- the step-rate straggler ------------------------------------------------------------------------------
cat >rate.py <<'W'
import os, sys, time
slow = os.environ["RANK"] in sys.argv[1].split(",")
end = time.time() + 8
step = 0
while time.time() < end:
    with open(os.environ["PLAUNCH_PROGRESS_FILE"], "w") as f:
        f.write("%d\n" % step)
    step += 1
    time.sleep(0.2 if slow else 0.1)
W
printf '[monitor]\nstep_window_s = 3\n' >rate.ini
run_plaunch --nproc-per-node 4 --hang-timeout 4 --monitor-config rate.ini --log-dir "$T/r1" "$PY" "$T/rate.py" 1
is "$rc" 0 "a job with a slow rank ends normally"
like "$(cat "$T/r1/plaunch.log")" "straggler: rank 1 .*steps/s" "plaunch.log names rank 1 live as a straggler"
like "$err" "step-straggler +rank 1 " "... and the Health block names it"
ok $(grep -E 'straggler: rank [023] ' "$T/r1/plaunch.log" >/dev/null; [ $? != 0 ]; echo $?) "... and no other rank"
run_plaunch --nproc-per-node 4 --hang-timeout 4 --monitor-config rate.ini --log-dir "$T/r2" "$PY" "$T/rate.py" none
ok $(grep -q 'straggler' "$T/r2/plaunch.log"; [ $? != 0 ]; echo $?) "equal ranks: no straggler"

# ---- torch's @record error file, quoted with its traceback -------------------------------------------------
cat >record.py <<'W'
import os
from torch.distributed.elastic.multiprocessing.errors import record

def parse_shard(i):
    raise ValueError("shard %d is corrupt" % i)

@record
def main():
    if os.environ["RANK"] == "1":
        parse_shard(17)

main()
W
if [ $HAVE_TORCH = 1 ]; then
    run_plaunch --nproc-per-node 2 --log-dir "$T/e1" "$PY" "$T/record.py"
    is "$rc" 1 "@record: rank 1's exception fails the job with exit code 1"
    like "$err" "error file.*error.1.json" "... the root cause names its error file"
    like "$err" "ValueError: shard 17 is corrupt" "... quotes the exception"
    like "$err" "parse_shard" "... and its traceback"
else
    for i in 1 2 3 4; do ok 0 "# SKIP no torch for $PY (python3-torch)"; done
fi

# ---- the hang collectors do not hold the job's token: plaunch __stacks and py-spy get the workers' environment --
mkdir -p "$T/spybin"
cat >"$T/spybin/py-spy" <<SPY
#!/bin/sh
tr '\\0' '\\n' </proc/\$PPID/environ >"$T/stacks.env"
env >"$T/pyspy.env"
SPY
chmod +x "$T/spybin/py-spy"
PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') PATH="$T/spybin:$PATH" \
    run_plaunch --nproc-per-node 1 --hang-timeout 3 --on-hang stop --log-dir "$T/tok" "$PY" -c 'import time; time.sleep(3600)'
is "$rc" 124 "a hung CPython job run with PLAUNCH_TOKEN in its environment: 124"
ok $([ -s "$T/stacks.env" ] && [ -s "$T/pyspy.env" ]; echo $?) "... its plaunch __stacks ran py-spy (a stand-in that saves both environments)"
is "$(cat "$T/stacks.env" "$T/pyspy.env" 2>/dev/null | grep -c '^PLAUNCH_TOKEN=')" 0 \
    "... neither plaunch __stacks nor py-spy has PLAUNCH_TOKEN"

plan "$_tap_n"
done_testing
