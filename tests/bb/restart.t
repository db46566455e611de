#!/bin/bash
# restart.t: a failure restarts the whole job as a new generation with a new environment; a spent budget ends it.
. "$(dirname "$0")/lib.sh"
plan 10

cat >gen.sh <<'W'
#!/bin/bash
env > "$OUTDIR/env.$PLAUNCH_GENERATION.$RANK"
echo "rank $RANK generation $PLAUNCH_GENERATION"
if [ "$RANK" = 1 ] && [ "$PLAUNCH_GENERATION" -lt "$FAIL_UNTIL" ]; then echo "rank 1 fails now"; exit 7; fi
[ "$RANK" = 1 ] || sleep 0.5
W
chmod +x gen.sh
export OUTDIR=$T

FAIL_UNTIL=1 run_plaunch --nproc-per-node 3 --max-restarts 2 ./gen.sh
is "$rc" 0 "rank 1 fails in generation 0 with --max-restarts 2: the job succeeds in generation 1"
is "$(ls env.1.* 2>/dev/null | wc -l)" 3 "generation 1 ran every worker"
bad=""
for r in 0 1 2; do
    for kv in PLAUNCH_GENERATION=1 TORCHELASTIC_RESTART_COUNT=1 TORCHELASTIC_MAX_RESTARTS=2 RANK=$r WORLD_SIZE=3; do
        grep -qx "$kv" "env.1.$r" || bad="$bad $r:$kv"
    done
done
is "$bad" "" "generation 1 has the new environment"
p0=$(sed -n 's/^MASTER_PORT=//p' env.0.0); p1=$(sed -n 's/^MASTER_PORT=//p' env.1.0)
ok $([ -n "$p1" ] && [ "$p0" != "$p1" ]; echo $?) "generation 1 gets a fresh MASTER_PORT ($p0 -> $p1)"
is "$(grep -c '^==== plaunch: job .* generation [01] ' log/workerlog.0)" 2 "workerlog.0 has one marker per generation"
like "$(cat log/workerlog.1)" "rank 1 fails now" "the log keeps generation 0's output"

rm -f env.*
rm -rf log # a run appends to the logs of earlier runs: count this run's markers only
FAIL_UNTIL=99 run_plaunch --nproc-per-node 3 --max-restarts 2 ./gen.sh
is "$rc" 7 "budget exhausted: exit code of the failing worker"
is "$(grep -c '^==== plaunch: job ' log/workerlog.0)" 3 "three generations ran (the first plus 2 restarts)"
like "$err" "restart budget exhausted" "says the budget is spent"
like "$err" "rank 1 fails now" "the summary shows the failing worker's last lines"
done_testing
