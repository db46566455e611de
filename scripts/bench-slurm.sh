#!/bin/bash
# bench-slurm.sh: time from `srun` to every worker started on a real 3-node Slurm cluster (tests/bb/slurmlib.sh,
# network namespaces on this machine), 2 workers per node: plaunch against torchrun with the usual sbatch
# preamble (first host from scontrol, c10d rendezvous, the job id), and the floor: srun starting a shell per node
# that starts its 2 workers. Each run is an sbatch job whose script notes the time just before srun; each worker
# notes when it starts. Runs alternate; prints medians and ratios. Needs root and slurm-wlm, munge, python3-torch.
# Usage: scripts/bench-slurm.sh [RUNS]
set -uo pipefail
runs=${1:-7}
cd "$(dirname "$0")/.." || exit 1
[ "$(id -u)" = 0 ] || { echo "bench-slurm: needs root (namespaces)" >&2; exit 0; }
scripts/deps.sh || exit 1
[ -x build/bin/plaunch ] || make -s all || exit 1
export PLAUNCH_SRC=$PWD PLAUNCH_BUILD=$PWD/build PATH=$PATH:/usr/sbin:/sbin
. "$PLAUNCH_SRC/tests/bb/lib.sh" # (it cd-s into its temp dir $T)
. "$PLAUNCH_SRC/tests/bb/slurmlib.sh"
command -v torchrun >/dev/null || { echo "bench-slurm: no torchrun (python3-torch)" >&2; exit 1; }
slurm_up 3 41 >/dev/null || { echo "bench-slurm: no cluster" >&2; exit 1; }

cat >w.sh <<'W'
#!/bin/bash
echo "$EPOCHREALTIME" > "$OUT/start.$RANK"
W
cat >floor.sh <<'W'
#!/bin/bash
RANK=$((SLURM_NODEID * 2)) "$W" & RANK=$((SLURM_NODEID * 2 + 1)) "$W" & wait
W
chmod +x w.sh floor.sh
# one_run KIND DIR: an sbatch job of KIND; DIR gets t0 (before srun) and start.RANK of every worker
one_run() {
    local kind=$1 d=$2 body job
    mkdir -p "$d"
    case $kind in
    plaunch) body="export PLAUNCH_TOKEN=\$($PLAUNCH token)
echo \$EPOCHREALTIME > $d/t0
srun --ntasks-per-node=1 $PLAUNCH --nproc-per-node 2 --quiet --log-dir $d/log $T/w.sh" ;;
    torchrun) # -r 2 -t 2: torch 1.13's default redirect/tee settings crash before starting any worker
        body="head=\$(scontrol show hostnames \"\$SLURM_JOB_NODELIST\" | head -1)
echo \$EPOCHREALTIME > $d/t0
srun --ntasks-per-node=1 torchrun --nnodes 3 --nproc_per_node 2 --rdzv_backend c10d \\
    --rdzv_endpoint \$head:29500 --rdzv_id \$SLURM_JOB_ID --no_python -r 2 -t 2 $T/w.sh" ;;
    floor) body="echo \$EPOCHREALTIME > $d/t0
srun --ntasks-per-node=1 $T/floor.sh" ;;
    esac
    printf '#!/bin/bash\nexport OUT=%s W=%s\n%s\n' "$d" "$T/w.sh" "$body" >"$d/job.sh"
    job=$(slurm_cmd sbatch --parsable -N3 -o "$d/out" "$d/job.sh") || return 1
    slurm_wait_gone "$job" 120
    # the slowest worker, from srun
    echo "$(cat "$d"/start.* 2>/dev/null | sort -n | tail -1) - $(cat "$d/t0")" | bc 2>/dev/null
}
declare -A all
for i in $(seq 1 "$runs"); do
    for kind in plaunch torchrun floor; do
        d=$T/$kind.$i
        t=$(one_run $kind "$d")
        n=$(ls "$d"/start.* 2>/dev/null | wc -l)
        [ "$n" = 6 ] || { echo "bench-slurm: $kind run $i started $n of 6 workers (see $d/out)" >&2; cat "$d/out" >&2; t=nan; }
        all[$kind]="${all[$kind]:-} $t"
    done
done
median() { tr ' ' '\n' | grep -v '^$' | grep -v nan | sort -n | awk '{a[NR]=$1} END {print NR ? a[int((NR+1)/2)] : "nan"}'; }
p=$(echo "${all[plaunch]}" | median); t=$(echo "${all[torchrun]}" | median); f=$(echo "${all[floor]}" | median)
printf 'srun to the last of 6 workers started, 3 Slurm nodes x 2 workers, median of %d runs (seconds):\n' "$runs"
printf '  plaunch  %s   (runs:%s)\n  torchrun %s   (runs:%s)\n  floor    %s   (runs:%s)\n' "$p" "${all[plaunch]}" \
    "$t" "${all[torchrun]}" "$f" "${all[floor]}"
printf '  plaunch/torchrun %s   plaunch/floor %s\n' "$(echo "scale=3; $p / $t" | bc)" "$(echo "scale=2; $p / $f" | bc)"
slurm_down
