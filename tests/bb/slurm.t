#!/bin/bash
# slurm.t: plaunch under a real 3-node Slurm cluster (slurmlib.sh): `srun --ntasks-per-node=1 plaunch` forms one
# world with no other flag (contiguous ranks in node order, the coordinator on the first host, per-node logs),
# `plaunch --scheduler slurm` in an sbatch script does the same alone, scancel ends everything within --grace
# (and `scancel --signal=TERM` lets workers finish), SIGUSR1 reaches every worker, a worker failure restarts
# the job across nodes, a lost node of an elastic job restarts it on the survivors, and bad configurations
# (no token, a wrong token, two tasks on a node) exit 2 with the fix.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP the Slurm cluster needs root (namespaces, mounts)"; exit 0; fi
PATH=$PATH:/usr/sbin:/sbin
for b in slurmctld slurmd munged srun; do
    command -v "$b" >/dev/null || { echo "1..0 # SKIP $b is not installed (slurm-wlm, munge)"; exit 0; }
done
. "$PLAUNCH_SRC/tests/bb/slurmlib.sh"
plan 42
slurm_up 3 11 || { echo "Bail out! no Slurm cluster"; exit 1; }
export OUTDIR=$T
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
val() { sed -n "s/^$1=//p" "$2"; }
secs_since() { echo "$EPOCHREALTIME - $1" | bc | sed 's/^\./0./'; }
# srun3 ARGS...: a 3-node step of one plaunch per node, bounded
srun3() { slurm_cmd timeout 120 srun -N3 --ntasks-per-node=1 "$@"; }
job_of() { slurm_cmd squeue -h -o %i -n "$1" | head -1; }
# A job's state and exit code as scontrol reports them (MinJobAge keeps finished jobs for 300 s).
job_end() { slurm_cmd scontrol show job "$1" | grep -oE ' (JobState|ExitCode)=[^ ]*' | tr -d '\n'; }

cat >dump.sh <<'W'
#!/bin/sh
date +%s.%N > "$OUTDIR/start.$RANK" # /bin/sh has no EPOCHREALTIME
env > "$OUTDIR/env.$RANK"
W
# long.sh: runs until stopped; SIGUSR1 is noted, SIGTERM is noted and answered after a short clean-up.
cat >long.sh <<'W'
#!/bin/bash
trap 'echo "$PLAUNCH_GENERATION" >> "$OUTDIR/usr1.$RANK"' USR1
trap 'echo term > "$OUTDIR/term.$RANK"; sleep 0.5; exit 0' TERM
echo "$PLAUNCH_GENERATION" > "$OUTDIR/up.$RANK"
while :; do sleep 0.1; done
W
chmod +x dump.sh long.sh
count() { ls -1 $1 2>/dev/null | wc -l; }

# ---- one plaunch per node, nothing but the token ------------------------------------------------------------------
t0=$EPOCHREALTIME
PLAUNCH_TOKEN=$TOKEN srun3 "$PLAUNCH" --nproc-per-node 2 --log-dir "$T/log" "$T/dump.sh" >out 2>err
rc=$?
is "$rc" 0 "srun -N3 --ntasks-per-node=1 plaunch --nproc-per-node 2: every node exits 0"
last=$(cat start.* | sort -n | tail -1)
echo "# srun to the last of 6 workers started: $(echo "$last - $t0" | bc | sed 's/^\./0./') s"
is "$(cat env.* | sed -n 's/^RANK=//p' | sort -n | tr '\n' ' ')" "0 1 2 3 4 5 " "one world of 6: ranks 0..5"
bad=""
for r in 0 1 2 3 4 5; do
    n=$((r / 2))
    [ "$(val GROUP_RANK env.$r) $(val SLURMD_NODENAME env.$r)" = "$n node$((n + 1))" ] || bad="$bad rank$r:node"
    [ "$(val WORLD_SIZE env.$r) $(val LOCAL_RANK env.$r)" = "6 $((r % 2))" ] || bad="$bad rank$r:sizes"
    [ "$(val MASTER_ADDR env.$r)" = "$(slurm_addr 1)" ] || bad="$bad rank$r:master"
done
is "$bad" "" "ranks are contiguous in Slurm's node order (node1: 0-1, node2: 2-3, node3: 4-5), MASTER_ADDR on node1"
job=$(val SLURM_JOB_ID env.0)
is "$(for r in 0 1 2 3 4 5; do val PLAUNCH_JOB_ID env.$r; done | sort -u)" "slurm-$job.0" "the job id is slurm-JOB.STEP everywhere"
is "$(cd log && ls plaunch.*.log | tr '\n' ' ')" "plaunch.node1.log plaunch.node2.log plaunch.node3.log " \
    "a shared --log-dir holds one launcher log per node (plaunch.NODE.log), none overwritten"
like "$(cat log/plaunch.node1.log)" "hosting the coordinator on port $((10000 + (job % 2000) * 10))" \
    "the first node hosts the coordinator at 10000 + (job mod 2000) x 10 + step"
is "$(ls log/workerlog.* | wc -l)" 6 "one workerlog per global rank"

# --print-config inside a step shows where each value came from
slurm_cmd timeout 60 srun -N3 --ntasks-per-node=1 "$PLAUNCH" --print-config >pc.out 2>&1
like "$(cat pc.out)" "--node-rank +1 +Slurm: SLURM_NODEID=1" "--print-config names SLURM_NODEID as the node rank's source"
like "$(cat pc.out)" "--master-addr +node1 +Slurm: the first host of SLURM_STEP_NODELIST=node\[1-3\]" \
    "... and the step's node list as the coordinator's"

# ---- bad configurations: exit 2 on every node, with the fix --------------------------------------------------
srun3 "$PLAUNCH" --nproc-per-node 1 "$T/dump.sh" >out 2>err
rc=$?
is "$rc" 2 "no token and no job CA: every node exits 2"
like "$(cat err)" "no credentials .*export PLAUNCH_TOKEN=\\\$\(plaunch token\).*--tls-dir" \
    "... naming both ways (plaunch token in the batch script, --tls-dir on a shared file system)"
PLAUNCH_TOKEN=$TOKEN slurm_cmd timeout 60 srun -N1 -n2 "$PLAUNCH" --nproc-per-node 1 "$T/dump.sh" >out 2>err
is "$?" 2 "two tasks on one node: exit 2"
like "$(cat err)" "runs 2 tasks on a node .*srun --nodes=1 --ntasks-per-node=1 plaunch --nproc-per-node 2" \
    "... with the srun line that works"
# node3 holds another token: its handshake is refused, it exits 2, and --kill-on-bad-exit ends the step
PLAUNCH_TOKEN=$TOKEN srun3 --kill-on-bad-exit=1 sh -c \
    '[ "$SLURM_NODEID" = 2 ] && export PLAUNCH_TOKEN=00112233445566778899aabbccddeeff; exec "$@"' sh \
    "$PLAUNCH" --nproc-per-node 1 --log-dir "$T/badtok" "$T/long.sh" >out 2>err
rc=$?
like "$(cat err)" "TLS with the coordinator .* failed: .*the peer rejected our token" "a node with a wrong token is refused and says why"
ok $([ "$rc" != 0 ]; echo $?) "... the step fails (exit $rc), nothing waits for --rdzv-timeout"
like "$(cat badtok/plaunch.node1.log)" "refused $(slurm_addr 3)" "the coordinator logs the refused node"

# ---- scancel ---------------------------------------------------------------------------------------------------
# start_batch NAME GRACE [PLAUNCH ARGS]: an sbatch job running long.sh on 3 nodes; waits until every worker is up
start_batch() {
    local name=$1 grace=$2; shift 2
    rm -f up.* term.* usr1.*
    cat >"$name.sh" <<W
#!/bin/bash
export PLAUNCH_TOKEN=\$("$PLAUNCH" token)
srun --ntasks-per-node=1 "$PLAUNCH" --nproc-per-node 2 --grace $grace --log-dir "$T/$name.log" $* "$T/long.sh"
W
    slurm_cmd timeout 30 sbatch --parsable -J "$name" -N3 -o "$T/$name.out" "$T/$name.sh"
}
job=$(start_batch cancel 3)
until_ok 60 eval '[ "$(count "up.*")" = 6 ]'
is "$(count "up.*")" 6 "an sbatch job (export PLAUNCH_TOKEN=\$(plaunch token); srun plaunch) runs 6 workers"
t1=$EPOCHREALTIME
slurm_cmd scancel "$job"
until_ok 30 eval '[ -z "$(slurm_procs_of "long\.sh|plaunch")" ]'
el=$(secs_since "$t1")
is "$(slurm_procs_of 'long\.sh|plaunch')" "" "scancel: no worker or plaunch of the job is left on any node (after $el s)"
ok "$(echo "$el < 3 + 2" | bc | grep -qx 1; echo $?)" "... within --grace (3 s) + 2 s"
slurm_wait_gone "$job" 30

# scancel --signal=TERM: the steps' tasks (every node's plaunch) get SIGTERM, and workers their --grace
job=$(start_batch gentle 5)
until_ok 60 eval '[ "$(count "up.*")" = 6 ]'
t1=$EPOCHREALTIME
slurm_cmd scancel --signal=TERM "$job"
slurm_wait_gone "$job" 30
el=$(secs_since "$t1")
is "$(count "term.*")" 6 "scancel --signal=TERM: every worker got SIGTERM and ran its handler"
is "$(slurm_procs_of 'long\.sh|plaunch')" "" "... and the job ended (after $el s), nothing left"

# pre-emption warning: SIGUSR1 reaches every worker, the job goes on
job=$(start_batch preempt 3)
until_ok 60 eval '[ "$(count "up.*")" = 6 ]'
slurm_cmd scancel --signal=USR1 "$job"
until_ok 30 eval '[ "$(count "usr1.*")" = 6 ]'
is "$(count "usr1.*")" 6 "scancel --signal=USR1 (as sbatch --signal=USR1@120 sends): every worker got SIGUSR1"
is "$(slurm_cmd squeue -h -j "$job" -o %T)" "RUNNING" "... and the job goes on"
slurm_cmd scancel "$job"
slurm_wait_gone "$job" 30

# ---- plaunch --scheduler slurm, once in the batch script ----------------------------------------------------------
rm -f env.* start.*
cat >once.sh <<W
#!/bin/bash
"$PLAUNCH" --scheduler slurm --nproc-per-node 2 --log-dir "$T/once.log" "$T/dump.sh"
W
job=$(slurm_cmd timeout 30 sbatch --parsable -N3 -o "$T/once.out" "$T/once.sh")
slurm_wait_gone "$job" 90
is "$(job_end "$job")" " JobState=COMPLETED ExitCode=0:0" "plaunch --scheduler slurm in an sbatch script: the job completes with 0"
is "$(cat env.* | sed -n 's/^RANK=//p' | sort -n | tr '\n' ' ')" "0 1 2 3 4 5 " "... after one world of 6 on the 3 nodes"
is "$(for r in 0 3 5; do val PLAUNCH_NODE_RANK env.$r; done | tr '\n' ' ')" "0 1 2 " "... in node order"
like "$(cat once.out)" "starting plaunch on 3 nodes of this allocation" "... it says what it started"

# a worker failure there: exit status of the job = the worker's
cat >fail.sh <<'W'
#!/bin/sh
[ "$RANK" = 3 ] && exit 7
exit 0
W
chmod +x fail.sh
sed "s#dump.sh#fail.sh#" once.sh >oncefail.sh
job=$(slurm_cmd timeout 30 sbatch --parsable -N3 -o "$T/oncefail.out" "$T/oncefail.sh")
slurm_wait_gone "$job" 90
is "$(job_end "$job")" " JobState=FAILED ExitCode=7:0" "a worker that exits 7: the batch job fails with 7 (training failed)"
like "$(cat oncefail.out)" "first failure : rank 3" "... and the root cause names rank 3"

# the relay: SIGTERM to the plaunch of the batch script stops the step with --grace (not srun's SIGKILL)
rm -f up.* term.*
cat >relay.sh <<W
#!/bin/bash
exec "$PLAUNCH" --scheduler slurm --nproc-per-node 2 --grace 5 --log-dir "$T/relay.log" "$T/long.sh"
W
job=$(slurm_cmd timeout 30 sbatch --parsable -N3 -o "$T/relay.out" "$T/relay.sh")
until_ok 60 eval '[ "$(count "up.*")" = 6 ]'
srun_of_batch=$(slurm_procs_of '^srun --nodes=3' | awk '$1 == "node1" {print $2; exit}')
wrapper=$(awk '{print $4}' "/proc/$srun_of_batch/stat" 2>/dev/null) # srun's parent: the batch script's plaunch
kill -TERM "$wrapper" 2>/dev/null
slurm_wait_gone "$job" 40
is "$(count "term.*")" 6 "SIGTERM to plaunch --scheduler slurm: every worker on every node got SIGTERM and its --grace"
like "$(cat relay.out)" "stopping the job on every node" "... the batch's plaunch says so"
is "$(slurm_procs_of 'long\.sh|plaunch')" "" "... nothing of the job is left"

# ---- restarts and node loss ------------------------------------------------------------------------------------
cat >flaky.sh <<'W'
#!/bin/sh
echo "$PLAUNCH_GENERATION" >> "$OUTDIR/gen.$RANK"
[ "$PLAUNCH_GENERATION" = 0 ] && [ "$RANK" = 3 ] || exit 0
# rank 3 fails only once every other rank has run generation 0 (a slow node must not miss it), within 30 s
i=0
while [ $i -lt 300 ] && [ "$(cat "$OUTDIR"/gen.[0-5] 2>/dev/null | grep -c '^0$')" -lt 6 ]; do sleep 0.1; i=$((i + 1)); done
exit 1
W
chmod +x flaky.sh
rm -f gen.*
PLAUNCH_TOKEN=$TOKEN srun3 "$PLAUNCH" --nproc-per-node 2 --max-restarts 1 --log-dir "$T/flaky" "$T/flaky.sh" >out 2>err
is "$?" 0 "a worker failure on node2 with --max-restarts 1: the job restarts on every node and succeeds"
is "$(cat gen.0 gen.5 | tr '\n' ' ')" "0 1 0 1 " "... ranks on node1 and node3 ran generations 0 and 1"

rm -f up.*
PLAUNCH_TOKEN=$TOKEN slurm_spawn timeout 120 srun -N3 --ntasks-per-node=1 "$PLAUNCH" --nnodes 2:3 --nproc-per-node 1 \
    --log-dir "$T/elastic" "$T/long.sh" >elastic.out 2>&1
srun_pid=$SL_PID
until_ok 60 eval '[ "$(count "up.*")" = 3 ]'
victim=$(slurm_procs_of "plaunch --nnodes 2:3" | awk '$1 == "node3" {print $2; exit}')
kill -9 "$victim"
until_ok 30 eval 'grep -qx 1 up.0 2>/dev/null && grep -qx 1 up.1 2>/dev/null'
is "$(cat up.0 up.1 | tr '\n' ' ')" "1 1 " "--nnodes 2:3, node3's plaunch killed: the survivors restart as generation 1"
like "$(cat elastic/plaunch.node1.log)" "node 2 \(node3.*lost" "the coordinator names the lost node"
job=$(job_of plaunch)
slurm_cmd scancel --signal=TERM "$job"
wait "$srun_pid"
slurm_wait_gone "$job" 30
is "$(slurm_procs_of 'long\.sh|plaunch')" "" "the elastic job ends on scancel, nothing left"

# ---- GPUs (Slurm's GRES with fake devices: no CUDA here, only the mapping is checked) ---------------------------------
rm -f env.*
PLAUNCH_TOKEN=$TOKEN slurm_cmd timeout 60 srun -N2 --ntasks-per-node=1 --gpus-per-node=2 "$PLAUNCH" "$T/dump.sh" >out 2>err
is "$?" 0 "srun --gpus-per-node=2 plaunch (no --gpus): a job of 2 GPU workers per node"
is "$(for r in 0 1 2 3; do echo "$(val PLAUNCH_GPU env.$r)/$(val CUDA_VISIBLE_DEVICES env.$r)"; done | tr '\n' ' ')" \
    "0/0,1 1/0,1 0/0,1 1/0,1 " "each worker has one of the step's GPUs (PLAUNCH_GPU), the node's list as CUDA_VISIBLE_DEVICES"
PLAUNCH_TOKEN=$TOKEN slurm_cmd timeout 60 srun -N1 --gpus-per-node=2 "$PLAUNCH" --gpus 2 "$T/dump.sh" >out 2>err
is "$?" 2 "--gpus 2 in a step of 2 GPUs: exit 2"
like "$(cat err)" "GPU 2 does not exist on node1: it is not in CUDA_VISIBLE_DEVICES=0,1" "... never a GPU outside the step"

is "$(slurm_procs_of 'plaunch|long\.sh|dump\.sh|sleep')" "" "no process of any job is left on any node"
done_testing
