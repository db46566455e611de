#!/bin/bash
# signals.t: TERM, INT, USR1 to plaunch reach every worker group; a worker ignoring TERM dies after --grace;
# what plaunch says after Ctrl-C is whole lines, in one-node words, naming the signal it sent.
. "$(dirname "$0")/lib.sh"
plan 21

cat >catcher.sh <<'W'
#!/bin/bash
# Records each signal it gets; USR1 keeps it running, TERM and INT end it.
for s in TERM INT USR1; do
    trap "echo $s >> '$OUTDIR/sig.$RANK'; [ $s = USR1 ] || exit 0" $s
done
sleep 60 & child=$!
touch "$OUTDIR/ready.$RANK"
while :; do wait $child && break; done
W
chmod +x catcher.sh
export OUTDIR=$T

# start_job ARGS...: starts plaunch in the background with 4 catchers; waits until all are ready.
start_job() {
    rm -f sig.* ready.*
    "$PLAUNCH" --nproc-per-node 4 "$@" ./catcher.sh >/dev/null 2>"$T/.err" &
    job=$!
    wait_for 4 "ready.*" 10
}
count_sig() { cat sig.* 2>/dev/null | grep -cx "$1"; }

for sig in TERM INT; do
    start_job
    kill -$sig $job
    wait $job; rc=$?
    is "$(count_sig $sig)" 4 "SIG$sig reaches all 4 workers"
    code=$((128 + $(kill -l $sig)))
    is "$rc" "$code" "plaunch stopped by SIG$sig exits $code"
done

# Ctrl-C on a one-node job: every line whole and prefixed (the summary once ran into the next line), the
# signal named, no multi-node words in the terminal or in plaunch.log.
start_job
kill -INT $job
wait $job
err=$(cat "$T/.err")
is "$(printf '%s\n' "$err" | grep -v -e '^plaunch: ' -e '^  ')" "" "after SIGINT every stderr line is a whole 'plaunch:' line"
like "$err" "^plaunch: job [^ ]+ stopped: plaunch got SIGINT$" "the summary names SIGINT in one-node words"
like "$err" "^plaunch: exit status 130$" "... and the exit status"
is "$(printf '%s\n' "$err" | grep -ci -e 'every node' -e 'coordinator')" 0 "no multi-node wording on the terminal"
is "$(grep -c -e 'connected to the coordinator' -e 'every node' log/plaunch.log)" 0 "nor in plaunch.log"

start_job
kill -USR1 $job
wait_for 4 "sig.*" 10
until_ok 10 eval '[ "$(count_sig USR1)" = 4 ]'
is "$(count_sig USR1)" 4 "SIGUSR1 reaches all 4 workers"
alive $job; ok $? "the job goes on after SIGUSR1"
kill -TERM $job
wait $job
is "$(count_sig TERM)" 4 "then SIGTERM still reaches all 4"

cat >stubborn.sh <<'W'
#!/bin/bash
trap '' TERM
echo $$ > "$OUTDIR/pid.$RANK"
sleep 60
W
chmod +x stubborn.sh
rm -f pid.*
"$PLAUNCH" --nproc-per-node 2 --grace 1 ./stubborn.sh >/dev/null 2>"$T/.err" &
job=$!
wait_for 2 "pid.*" 10
t0=$(date +%s.%N)
kill -TERM $job
wait $job; rc=$?
t1=$(date +%s.%N)
is "$rc" 143 "a worker ignoring SIGTERM: plaunch still exits 143"
elapsed=$(echo "$t1 - $t0" | bc)
ok "$(echo "$elapsed >= 0.9 && $elapsed < 4" | bc | grep -qx 1; echo $?)" "it was killed after --grace 1 (took ${elapsed}s)"
left=0
for f in pid.*; do alive "$(cat "$f")" && left=1; done
is "$left" 0 "no stubborn worker survives"
like "$(cat "$T/.err")" "SIGKILL" "plaunch says it escalated to SIGKILL"

sed -i 's/trap .. TERM/trap "" TERM INT/' stubborn.sh
rm -f pid.*
"$PLAUNCH" --nproc-per-node 2 --grace 30 ./stubborn.sh >/dev/null 2>"$T/.err" &
job=$!
wait_for 2 "pid.*" 10
t0=$(date +%s)
kill -INT $job
until_ok 10 grep -q "got SIGINT" "$T/.err" # plaunch took the signal and is waiting for its workers
alive $job; ok $? "workers ignoring SIGINT: plaunch waits for them within --grace"
kill -INT $job
wait $job; rc=$?
is "$rc" 130 "a second SIGINT kills them at once: exit 130"
ok $(( $(date +%s) - t0 < 10 ? 0 : 1 )) "... well before the 30 s grace"

rm -f pid.*
"$PLAUNCH" --nproc-per-node 2 --grace 1 ./stubborn.sh >/dev/null 2>"$T/.err" &
job=$!
wait_for 2 "pid.*" 10
kill -INT $job
wait $job; rc=$?
is "$rc" 130 "workers ignoring a single SIGINT past --grace 1: exit 130"
like "$(cat "$T/.err")" "2 workers still running 1s after SIGINT: sending SIGKILL" \
    "the escalation names SIGINT, the signal that was sent"
done_testing
