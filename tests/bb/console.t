#!/bin/bash
# console.t: a reader of plaunch's stdout that stops reading (`plaunch ... | less` left alone) costs console lines,
# never the event loop: signals still work, the logs stay complete, the loss is counted and reported.
. "$(dirname "$0")/lib.sh"
plan 11

# The worker: rank 0 writes far more than a pipe and plaunch's console queue hold, says so, then waits for the
# test (or, without one, for plaunch's SIGTERM).
cat >chatty.sh <<'W'
#!/bin/bash
pad=$(printf '%0100d' 0)
for i in $(seq 1 20000); do echo "line $i $pad"; done
touch "$OUTDIR/wrote.$RANK"
while [ ! -e "$OUTDIR/go" ]; do read -r -t 0.05 <>"$OUTDIR/idle" || true; done
echo "after the gap"
W
chmod +x chatty.sh
mkfifo idle out.fifo
export OUTDIR=$T

# ends_within PID SECONDS: 0 when PID ends within SECONDS; otherwise kills it (and its workers) and returns 1.
ends_within() {
    local i
    for i in $(seq 1 $(($2 * 20))); do alive "$1" || return 0; sleep 0.05; done
    pkill -KILL -P "$1" 2>/dev/null
    kill -KILL "$1" 2>/dev/null
    return 1
}

# start_stalled NPROC LOGDIR ERRFILE: plaunch with stdout into a FIFO whose reader never reads; waits until every
# worker has written its lines. Sets pl (plaunch) and stalled (the reader).
start_stalled() {
    rm -f wrote.* go
    sleep 300 <out.fifo &
    stalled=$!
    "$PLAUNCH" --nproc-per-node "$1" --log-dir "$2" ./chatty.sh >out.fifo 2>"$3" &
    pl=$!
    wait_for "$1" "wrote.*" 30
    ok $? "$1 worker(s) wrote 20000 lines each while stdout was not read"
}

start_stalled 2 log err.txt
flags=$(awk '/^flags:/ { print $2 }' "/proc/$pl/fdinfo/1" 2>/dev/null)
is "$(( 8#${flags:-4000} & 8#4000 ))" 0 "plaunch's stdout (shared with the shell) is not left O_NONBLOCK"
kill -TERM "$pl"
ends_within "$pl" 15
ok $? "SIGTERM ends plaunch within 15 s although its stdout is stalled"
wait "$pl"
is "$?" 143 "exit 143 after SIGTERM"
is "$(grep -c '^line ' log/workerlog.0)" 20000 "workerlog.0 holds every line"
like "$(cat err.txt)" "plaunch: [0-9]+ console lines dropped \(stdout was not read\); every line is in $T/log/workerlog.N" \
    "the dropped lines are counted and reported on stderr at exit"
like "$(cat log/plaunch.log)" "info  [0-9]+ console lines dropped on stdout \(not read\)" "plaunch.log records them"
kill "$stalled" 2>/dev/null
wait "$stalled" 2>/dev/null

# The reader comes back: what was queued arrives, the gap is reported where it is, and later lines come through.
start_stalled 1 log2 err2.txt
cat out.fifo >got.txt &
reader=$!
for _ in $(seq 1 300); do grep -q 'console lines dropped' got.txt && break; sleep 0.05; done
touch go
ends_within "$pl" 30
wait "$pl"
is "$?" 0 "the job ends normally once the reader is back"
ends_within "$reader" 10
kill "$stalled" 2>/dev/null
wait "$stalled" 2>/dev/null
gap=$(grep -n 'console lines dropped' got.txt | cut -d: -f1)
last=$(grep -n '^\[rank 0\] line ' got.txt | tail -1 | cut -d: -f1)
after=$(grep -n '^\[rank 0\] after the gap$' got.txt | cut -d: -f1)
like "$([ -n "$gap" ] && sed -n "${gap}p" got.txt)" "^plaunch: [0-9]+ console lines dropped \(stdout was not read\); every line is in $T/log2/workerlog.N$" \
    "the notice is in stdout itself"
ok "$([ -n "$gap" ] && [ -n "$last" ] && [ -n "$after" ] && [ "$last" -lt "$gap" ] && [ "$gap" -lt "$after" ]; echo $?)" \
    "the notice stands where lines are missing: after the lines that got through, before the later ones"
done_testing
