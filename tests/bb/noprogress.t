#!/bin/bash
# noprogress.t: restarts that make no progress end the job early (--max-no-progress-restarts K, exit status 123,
# a root cause naming the first failure), on one node and on two nodes in network namespaces; a job that
# progresses between failures (a new step, or --no-progress-time of running) spends its whole --max-restarts.
. "$(dirname "$0")/lib.sh"
plan 17

cat >fail.sh <<'W'
#!/bin/bash
echo "rank $RANK generation $PLAUNCH_GENERATION" >> "$OUTDIR/gens"
echo "cannot start: gen $PLAUNCH_GENERATION"
exit 1
W
# slow.sh: fails after SLEEP seconds; steps.sh: reports steps (STEP_BASE + 10 x generation + i, or a fixed one)
cat >slow.sh <<'W'
#!/bin/bash
echo "rank $RANK generation $PLAUNCH_GENERATION" >> "$OUTDIR/gens"
sleep "$SLEEP"
exit 3
W
cat >steps.sh <<'W'
#!/bin/bash
echo "rank $RANK generation $PLAUNCH_GENERATION" >> "$OUTDIR/gens"
for i in 1 2 3 4 5 6 7 8; do
    if [ -n "${FIXED_STEP:-}" ]; then echo "$FIXED_STEP" > "$PLAUNCH_PROGRESS_FILE"
    else echo $((PLAUNCH_GENERATION * 10 + i)) > "$PLAUNCH_PROGRESS_FILE"; fi
    sleep 0.2
done
exit 4
W
chmod +x fail.sh slow.sh steps.sh
export OUTDIR=$T
gens() { sort -u gens 2>/dev/null | sed -n 's/.*generation //p' | sort -un | wc -l; }

# 1. a worker that exits 1 at once, --max-restarts 50: ends after 3 restarts with 123, in seconds
rm -f gens; t0=$(date +%s)
run_plaunch --nproc-per-node 2 --max-restarts 50 ./fail.sh
el=$(( $(date +%s) - t0 ))
is "$rc" 123 "a worker failing at once with --max-restarts 50: exit status 123"
is "$(gens)" 4 "... after 3 restarts (4 generations: default --max-no-progress-restarts 3)"
ok $((el < 20 ? 0 : 1)) "... in seconds ($el s)"
like "$err" "restarts made no progress" "the root cause says restarts made no progress"
like "$err" "first failure : rank [01] on [^ ]*, generation 0" "... and names the first failure (generation 0)"
like "$err" "cannot start: gen 0" "... with its log's last lines"

# 2. K=1, and K=0 (off): the budget alone decides
rm -f gens
run_plaunch --nproc-per-node 1 --max-restarts 50 --max-no-progress-restarts 1 ./fail.sh
is "$rc $(gens)" "123 2" "--max-no-progress-restarts 1: one restart, then 123"
rm -f gens
PLAUNCH_MAX_NO_PROGRESS_RESTARTS=0 run_plaunch --nproc-per-node 1 --max-restarts 5 ./fail.sh
is "$rc $(gens)" "1 6" "PLAUNCH_MAX_NO_PROGRESS_RESTARTS=0: all 5 restarts, the worker's status"
# the budget running out at the same failure: its ending stands (the worker's status, as before)
rm -f gens
run_plaunch --nproc-per-node 1 --max-restarts 3 ./fail.sh
is "$rc $(gens)" "1 4" "--max-restarts 3 with K 3: the budget's ending (status 1) stands"

# 3. progress by time: each generation runs past --no-progress-time: the whole budget is spent
rm -f gens
SLEEP=1.2 run_plaunch --nproc-per-node 1 --max-restarts 5 --no-progress-time 0.8 ./slow.sh
is "$rc $(gens)" "3 6" "generations that run past --no-progress-time progress: all 5 restarts"

# 4. progress by steps: each generation reports steps beyond the last one's: all 5 restarts; a step that never
# goes beyond the best is no progress, however long the generation ran
rm -f gens
run_plaunch --nproc-per-node 1 --max-restarts 5 --hang-timeout 4 --no-progress-time 0.1 ./steps.sh
is "$rc $(gens)" "4 6" "new steps each generation: progress, all 5 restarts"
rm -f gens
FIXED_STEP=7 run_plaunch --nproc-per-node 1 --max-restarts 5 --hang-timeout 4 --no-progress-time 0.1 ./steps.sh
is "$rc $(gens)" "123 5" "the same step every generation: generation 0 progressed, then 3 restarts without: 123"
like "$err" "no step beyond 7" "... saying no step went beyond the best"

# 5. two nodes in network namespaces: the same rule job-wide
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then
    for i in 1 2 3 4; do echo "ok $((13 + i)) # SKIP network namespaces need root"; done
    exit 0
fi
NS="pq$$"; NS=${NS:0:8}; NET=76; PORT=29476
netns_down "$NS" 2 >/dev/null 2>&1
trap 'mn_kill_all; netns_down "$NS" 2; _bb_cleanup' EXIT
netns_up "$NS" 2 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
rm -f gens; t0=$(date +%s)
for i in 1 2; do mn_node $i --nnodes 2 --nproc-per-node 1 --max-restarts 50 ./fail.sh; done
mn_wait 1 60; r1=$wrc; mn_wait 2 60; r2=$wrc
el=$(( $(date +%s) - t0 ))
is "$r1 $r2" "123 123" "two nodes: every node exits 123 ($el s)"
is "$(gens)" 4 "... after 3 restarts"
like "$(cat log1/$PLOG)" "restarts made no progress" "the coordinator's log has the root cause"
mn_kill_all; rm -rf gens log1 log2
for i in 1 2; do SLEEP=1.5 mn_node $i --nnodes 2 --nproc-per-node 1 --max-restarts 4 --no-progress-time 1 ./slow.sh; done
mn_wait 1 90; r1=$wrc; mn_wait 2 90; r2=$wrc
is "$r1 $r2 $(gens)" "3 3 5" "two nodes with progress between failures: all 4 restarts, the worker's status"
done_testing
