#!/bin/bash
# binding.t: workers' CPUs on this machine: --cpu-bind cores / --numa-binding exclusive give two workers two
# different single CPUs (read by each worker from /proc/self/status), an inherited mask (taskset) is never
# widened, --cpu-bind none leaves the mask alone; the plan in plaunch.log and --print-binding (which runs nothing),
# also for an XML topology of a GPU server (tests/fixtures/topo/).
. "$(dirname "$0")/lib.sh"
plan 13

# Two CPUs of different cores: CPU a and the first CPU that is not a thread sibling of it.
a=$(sed 's/[-,].*//' /sys/devices/system/cpu/online)
sib=$(cat /sys/devices/system/cpu/cpu$a/topology/thread_siblings_list 2>/dev/null || echo "$a")
b=""
for c in $(seq 0 1023); do
    [ -e /sys/devices/system/cpu/cpu$c ] || continue
    [ "$c" = "$a" ] && continue
    case ",$sib," in *",$c,"*) continue ;; esac
    grep -q 1 /sys/devices/system/cpu/cpu$c/online 2>/dev/null || [ ! -e /sys/devices/system/cpu/cpu$c/online ] || continue
    b=$c
    break
done

cat >show.sh <<'W'
#!/bin/sh
sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status > "$OUTDIR/cpus.$LOCAL_RANK"
echo "${OMP_NUM_THREADS:-unset}" > "$OUTDIR/omp.$LOCAL_RANK"
W
chmod +x show.sh
export OUTDIR=$T
runjob() { rm -f cpus.* omp.*; timeout -k 5 60 "$@" >"$T/.out" 2>"$T/.err"; rc=$?; }

if [ -z "$b" ]; then
    for i in 1 2 3 4 5 6; do ok 0 "# SKIP one core only"; done
else
    for spell in "--cpu-bind cores" "--numa-binding exclusive"; do
        # shellcheck disable=SC2086
        runjob taskset -c "$a,$b" "$PLAUNCH" --quiet $spell --nproc-per-node 2 --log-dir "$T/l" ./show.sh
        got="$(cat cpus.0 2>/dev/null) $(cat cpus.1 2>/dev/null)"
        is "$rc $got" "0 $a $b" "$spell: two workers on two different single CPUs"
    done
    is "$(cat omp.0) $(cat omp.1)" "1 1" "a bound worker's OMP_NUM_THREADS is its core count"
    like "$(cat "$T/l/plaunch.log")" "binding: rank 1: CPU worker, NUMA [0-9]+, CPUs $b, 1 core: even split \(CPU worker\)" \
        "the plan is in plaunch.log, one line per rank"
    runjob taskset -c "$a,$b" "$PLAUNCH" --quiet --cpu-bind none --nproc-per-node 2 --log-dir "$T/l" ./show.sh
    want=$(taskset -c "$a,$b" sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
    is "$rc $(cat cpus.0) $(cat cpus.1)" "0 $want $want" "--cpu-bind none: the mask is left as inherited"
    OMP_NUM_THREADS=3 runjob taskset -c "$a,$b" "$PLAUNCH" --quiet --cpu-bind cores --nproc-per-node 2 \
        --log-dir "$T/l" ./show.sh
    is "$(cat omp.0) $(cat omp.1)" "3 3" "the user's OMP_NUM_THREADS is kept"
fi

# An inherited mask of one CPU: neither the default nor a mode widens it.
runjob taskset -c "$a" "$PLAUNCH" --quiet --nproc-per-node 2 --log-dir "$T/l" ./show.sh
is "$rc $(cat cpus.0) $(cat cpus.1)" "0 $a $a" "taskset -c $a: the default leaves the one-CPU mask"
runjob taskset -c "$a" "$PLAUNCH" --quiet --cpu-bind cores --nproc-per-node 2 --log-dir "$T/l" ./show.sh
is "$rc $(cat cpus.0) $(cat cpus.1)" "0 $a $a" "taskset -c $a --cpu-bind cores: still CPU $a, never wider"

# --print-binding: the plan, nothing run.
runjob "$PLAUNCH" --print-binding --cpu-bind cores --nproc-per-node 2 --log-dir "$T/pb" sh -c 'touch ran'
is "$rc $([ -e ran ] && echo ran) $([ -e "$T/pb" ] && echo logdir)" "0  " "--print-binding exits 0, runs nothing"
like "$(cat "$T/.out")" "rank 1: CPU worker, NUMA [0-9]+, CPUs [0-9,-]+, [0-9]+ cores?: even split" "... and prints each rank"

# A 2-socket 8-GPU server described by an XML topology: GPU 4's worker on the second socket's CPUs.
HWLOC_XMLFILE=$PLAUNCH_SRC/tests/fixtures/topo/2s8g.xml HWLOC_THISSYSTEM=0 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \
    runjob "$PLAUNCH" --print-binding --gpus all true
like "$(cat "$T/.out")" "rank 4: GPU 4 \(0000:87:00.0\), NUMA 1, CPUs 16-31, 8 cores: GPU locality \(default: numa\)" \
    "2-socket 8-GPU topology: GPU 4 on socket 1's CPUs, by default"

# Refusals name the choices.
runjob "$PLAUNCH" --numa-binding cores true
is "$rc" 2 "--numa-binding cores: refused (not torchrun's word)"
like "$(cat "$T/.err")" "expected torchrun's node, socket, exclusive or core-complex" "... naming torchrun's words"
done_testing
