#!/bin/bash
# slurm_cluster.t: the Slurm test harness (slurmlib.sh) brings up a real 3-node slurmctld/slurmd cluster: srun
# reaches every node with Slurm's step environment and fake GPUs, sbatch runs a script with a step, scancel ends
# every task on every node, slurm_down leaves no daemon, namespace, mount or process behind, and slurm_up removes
# what a SIGKILLed run left.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP the Slurm cluster needs root (namespaces, mounts)"; exit 0; fi
PATH=$PATH:/usr/sbin:/sbin
for b in slurmctld slurmd munged srun; do
    command -v "$b" >/dev/null || { echo "1..0 # SKIP $b is not installed (slurm-wlm, munge)"; exit 0; }
done
. "$PLAUNCH_SRC/tests/bb/slurmlib.sh"
plan 18
NET=9
skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP $1"; }
secs_since() { echo "$EPOCHREALTIME - $1" | bc | sed 's/^\./0./'; }
val() { sed -n "s/^$1=//p" "$2"; }

t0=$EPOCHREALTIME
slurm_up 3 $NET
rc=$?
is "$rc" 0 "slurm_up 3 brings up a controller and three idle nodes"
[ "$rc" = 0 ] || { echo "Bail out! no cluster"; exit 1; }
echo "# slurm_up took $(secs_since "$t0") s"
is "$(slurm_cmd sinfo -h -N -o '%N %T' | sort | tr '\n' ' ')" "node1 idle node2 idle node3 idle " \
    "sinfo (run through slurm_cmd) lists node1..node3 idle"
is "$(for k in 1 2 3; do slurm_node_cmd "$k" hostname; done | tr '\n' ' ')" "node1 node2 node3 " \
    "slurm_node_cmd K runs in node K's UTS namespace"

is "$(slurm_cmd timeout 60 srun -N3 --ntasks-per-node=1 hostname | sort | tr '\n' ' ')" "node1 node2 node3 " \
    "srun -N3 --ntasks-per-node=1 hostname prints node1..node3"

# a step's environment, written by a script under $T (the file system is shared)
cat >dumpenv.sh <<'EOF'
#!/bin/sh
env > "$OUT.$SLURM_PROCID"
EOF
chmod +x dumpenv.sh
OUT=$T/env slurm_cmd timeout 60 srun -N3 --ntasks-per-node=1 "$T/dumpenv.sh"
got="" bad=""
for r in 0 1 2; do
    got="$got $(val SLURM_NODEID env.$r)/$(val SLURMD_NODENAME env.$r)"
    [ "$(val SLURM_STEP_NODELIST env.$r)" = "node[1-3]" ] || bad="$bad rank$r:STEP_NODELIST=$(val SLURM_STEP_NODELIST env.$r)"
    [ "$(val SLURM_NTASKS env.$r) $(val SLURM_LOCALID env.$r) $(val SLURM_STEP_ID env.$r)" = "3 0 0" ] ||
        bad="$bad rank$r:NTASKS/LOCALID/STEP_ID"
done
is "$got" " 0/node1 1/node2 2/node3" "the step's tasks see SLURM_NODEID 0..2 and SLURMD_NODENAME node1..node3"
is "$bad" "" "... SLURM_STEP_NODELIST=node[1-3], SLURM_NTASKS=3, SLURM_LOCALID=0, SLURM_STEP_ID=0 on every task"
is "$(slurm_cmd timeout 60 srun -N1 -w node1 getent hosts node3 | awk '{print $1}')" "$(slurm_addr 3)" \
    "node names resolve inside a step (the cluster's /etc/hosts)"

rm -f env.*
OUT=$T/env slurm_cmd timeout 60 srun -N2 --ntasks-per-node=1 --gpus-per-node=2 "$T/dumpenv.sh"
is "$(for r in 0 1; do echo "$(val CUDA_VISIBLE_DEVICES env.$r) $(val SLURM_STEP_GPUS env.$r)"; done | tr '\n' ' ')" \
    "0,1 0,1 0,1 0,1 " "--gpus-per-node=2 gives CUDA_VISIBLE_DEVICES=0,1 and SLURM_STEP_GPUS=0,1 on each node"

if [ -x "$PLAUNCH" ]; then
    out=$(slurm_cmd timeout 60 srun -N1 "$PLAUNCH" --help 2>&1)
    like "$out" "plaunch" "srun runs a program by absolute path from the build dir ($PLAUNCH --help)"
else
    skip "no $PLAUNCH (make all builds it)"
fi
slurm_cmd timeout 60 srun -N3 --ntasks-per-node=1 sh -c 'exit $SLURM_NODEID' 2>/dev/null
is "$?" 2 "srun's exit status is the highest exit code of its tasks"

# sbatch: a batch script with a step inside; polled with slurm_wait_gone (sbatch --wait polls every 2-10 s)
cat >batch.sh <<'EOF'
#!/bin/sh
srun hostname | sort
EOF
job=$(slurm_cmd timeout 30 sbatch --parsable -N3 --ntasks-per-node=1 -o "$T/batch.%j.out" "$T/batch.sh")
slurm_wait_gone "$job" 60
is "$?/$(slurm_cmd scontrol show job "$job" | grep -oE ' (JobState|ExitCode)=[^ ]*' | tr -d '\n')" \
    "0/ JobState=COMPLETED ExitCode=0:0" "an sbatch job with an srun step completes with exit code 0"
is "$(cat "batch.$job.out" 2>/dev/null | tr '\n' ' ')" "node1 node2 node3 " "... and its output file holds the step's output"

# scancel of a running job whose tasks ignore SIGTERM: SIGKILL after KillWait (5 s) ends them on every node.
# One task also leaves a double-forked sleeper: Slurm (proctrack/linuxproc) does not end it, slurm_down must.
cat >sleeper.sh <<'EOF'
#!/bin/bash
trap '' TERM
[ "$SLURM_NODEID" = 1 ] && (setsid sleep 3000 </dev/null >/dev/null 2>&1 &)
exec sleep 300
EOF
chmod +x sleeper.sh
slurm_spawn timeout 120 srun -N3 --ntasks-per-node=1 "$T/sleeper.sh" >srun.out 2>&1
srun_pid=$SL_PID
running() { [ "$(slurm_procs_of '^sleep 300$' | wc -l)" = 3 ] && [ -n "$(slurm_procs_of '^sleep 3000$')" ]; }
until_ok 60 running
job=$(slurm_cmd squeue -h -o %i -n sleeper.sh)
escapee=$(slurm_procs_of '^sleep 3000$' | awk '{print $2}')
t1=$EPOCHREALTIME
slurm_cmd scancel "$job"
until_ok 60 eval '[ -z "$(slurm_procs_of "^sleep 300$")" ]'
el=$(secs_since "$t1")
is "$(slurm_procs_of '^sleep 300$')" "" "scancel ends the job's tasks on every node (after ${el} s)"
ok "$(echo "$el < 5 + 15" | bc | grep -qx 1; echo $?)" "... within KillWait (5 s) plus a margin"
wait "$srun_pid"
srun_rc=$?
slurm_wait_gone "$job" 30
is "$srun_rc/$(slurm_procs_of 'sleeper\.sh')" "137/" "srun reports the SIGKILLed tasks (137), nothing of the job script is left"
echo "# a double-forked escapee survives the job (proctrack/linuxproc): $(slurm_procs_of '^sleep 3000$')"

# slurm_down: everything of ours goes, escapees included
ours="$(cat "$SL_DIR/munge/pid" "$SL_DIR"/run/*.pid 2>/dev/null | tr '\n' ' ')$escapee"
t2=$EPOCHREALTIME
slurm_down
rc=$?
echo "# slurm_down took $(secs_since "$t2") s"
left=""
for p in $ours; do alive "$p" && left="$left $p:$(cat /proc/"$p"/comm)"; done
left="$left$(ip netns list | awk -v id="$SL_ID" 'index($1, id) == 1 {printf " netns:%s", $1}')"
left="$left$(ip -o link show | awk -F': ' -v id="$SL_ID" 'index($2, id) == 1 {printf " link:%s", $2}')"
left="$left$(awk -v d="$T/" 'index($5, d) == 1 {printf " mount:%s", $5}' /proc/self/mountinfo)"
[ -e "$SL_DIR" ] && left="$left $SL_DIR"
is "$rc/$left" "0/" "slurm_down leaves no daemon, escapee, namespace, link, mount or file of the cluster"
slurm_down
is "$?" 0 "slurm_down again (as the EXIT trap will) is a no-op"

# A run that died without its trap (SIGKILL) left a 1-node cluster: slurm_up removes it before starting.
cat >crash.sh <<EOF
#!/bin/bash
. "$PLAUNCH_SRC/tests/bb/lib.sh"
. "$PLAUNCH_SRC/tests/bb/slurmlib.sh"
slurm_up 1 $((NET + 1)) || exit 1
echo "\$\$ \$T \$(cat "\$SL_DIR/munge/pid")" >"$T/crashed"
kill -9 \$\$
EOF
{ bash crash.sh >crash.out 2>&1; } 2>/dev/null # (no "Killed" notice)
read -r cpid ctmp cmunge <crashed 2>/dev/null

slurm_up 1 $NET 2>reap.err
rc=$?
grep -q "removing the cluster of a dead run (pid ${cpid:-none})" reap.err || rc="$rc (no message in: $(cat reap.err))"
left="$(ip netns list | grep -c "^psl${cpid:-none}[cn]")"
alive "${cmunge:-0}" && left="$left munged"
[ -e "${ctmp:-/nonexistent}/slurm" ] && left="$left $ctmp/slurm"
is "$rc/${cpid:+crashed}/$left" "0/crashed/0" \
    "slurm_up first removes what a SIGKILLed run left (its namespaces, munged, files)"
case ${ctmp:-} in /tmp/plaunch-bb.*) rm -rf "$ctmp" ;; esac # lib.sh's trap did not run there either
slurm_down
done_testing
