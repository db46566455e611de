#!/bin/bash
# status.t: the live view. `plaunch status` on a running job and on a finished log directory; `--master` asks the
# coordinator of a 2-node job (network namespaces) from the other node, with the job's token, and a wrong token is
# refused; `plaunch top` under tmux shows every rank and follows a restart, q quits and restores the terminal; the
# console's status line appears under a terminal (tmux) and never in a pipe.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "1..0 # SKIP tmux is needed (scripts/deps.sh installs it)"; exit 0; }
plan 21

export OUTDIR=$T
TMUX_SOCK="pst$$"
tm() { tmux -L "$TMUX_SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; _bb_cleanup' EXIT
# pane_has SECONDS REGEX: polls the tmux pane until it shows REGEX
pane_has() {
    local n=0
    until tm capture-pane -p -t st 2>/dev/null | grep -Eq -- "$2"; do
        [ $n -ge $(($1 * 10)) ] && return 1
        sleep 0.1; n=$((n + 1))
    done
}

# Steps every 0.1 s for RUN_S seconds; rank 1 fails once after FAIL_S seconds of generation 0 when FAIL_S is set.
cat >w.sh <<'W'
#!/bin/bash
n=$(awk "BEGIN { print int(${RUN_S:-4} * 10) }"); f=$(awk "BEGIN { print int(${FAIL_S:-0} * 10) }")
for i in $(seq 1 "$n"); do
    echo "$i" > "$PLAUNCH_PROGRESS_FILE"; echo "rank $RANK step $i"; sleep 0.1
    if [ "$RANK" = 1 ] && [ "$PLAUNCH_GENERATION" = 0 ] && [ "$i" = "$f" ]; then exit 3; fi
done
W
chmod +x w.sh

# 1. a running job, then the same log directory once it is done
RUN_S=5 "$PLAUNCH" --nproc-per-node 2 --hang-timeout 2 --log-dir log ./w.sh >out.1 2>err.1 &
job=$!
until_ok 20 grep -q '"step_rate":[0-9]' log/status.json 2>/dev/null
s=$("$PLAUNCH" status log); src=$?
is "$src" 0 "plaunch status LOG_DIR on a running job exits 0"
like "$s" "^job job-[0-9a-f]+ +running +generation 0 +world 2" "it says the job runs, its generation and world"
like "$s" "rank 0 .*[0-9]+ +[0-9.]+ +[0-9.]+ s" "rank 0 with its step, step rate and output age"
like "$s" "rank 1 " "and rank 1"
is "$("$PLAUNCH" status log --json | jq -r '.version, .state' | tr '\n' ' ')" "1 running " \
    "--json prints the status document (version 1)"
wait "$job"
s=$("$PLAUNCH" status log); src=$?
like "$src $s" "^0 job job-[0-9a-f]+ +done +generation 0" "on the finished log directory it says done"
s=$("$PLAUNCH" status nowhere 2>&1); src=$?
like "$src $s" "^1 plaunch status: nowhere/status.json: no such file" "no status.json: exit 1 and a sentence"

# 2. the console status line: under a terminal it is there while the job runs, and gone after; never in a pipe
tm new-session -d -s st -x 150 -y 40 "cd '$T' && TERM=xterm RUN_S=4 '$PLAUNCH' --nproc-per-node 2 --hang-timeout 2 \
    --log-dir log2 --tee 3 ./w.sh; echo JOB-EXITED \$?; sleep 60"
pane_has 20 "^plaunch: generation 0 \| 2 ranks on 1 node \| running"
ok $? "under a terminal the last line is the status line (generation, ranks, state)"
pane_has 20 "JOB-EXITED 0"
ok $? "the job ends"
pane=$(tm capture-pane -p -t st)
ok $(printf '%s\n' "$pane" | grep -q "| goodput"; [ $? != 0 ]; echo $?) "and its status line is gone"
printf '%s\n' "$pane" | grep "| goodput" | sed 's/^/# left: /'
tm kill-session -t st
RUN_S=2 run_plaunch --nproc-per-node 2 --hang-timeout 2 --log-dir log3 --tee 3 ./w.sh
ok $(printf '%s' "$err$out" | grep -q -e "| goodput" -e $'\033\[K'; [ $? != 0 ]; echo $?) \
    "in a pipe: no status line and no terminal control sequence"

# 3. plaunch top under tmux: every rank, a restart followed, q quits and the terminal comes back
RUN_S=8 FAIL_S=2 "$PLAUNCH" --nproc-per-node 2 --max-restarts 1 --hang-timeout 2 --log-dir log4 ./w.sh >out.4 2>err.4 &
job=$!
until_ok 20 test -s log4/status.json
tm new-session -d -s st -x 150 -y 40 "cd '$T' && TERM=xterm '$PLAUNCH' top log4 --interval 0.3; echo TOP-EXITED \$?; sleep 60"
pane_has 20 "generation 0 +world 2" && pane_has 10 "rank 0 " && pane_has 10 "rank 1 "
ok $? "top shows the job and every rank"
pane_has 30 "generation 1 +world 2 +restarts 1"
ok $? "top follows the restart (generation 1, 1 restart)"
pane_has 10 "q quits"
ok $? "and says how to quit"
tm send-keys -t st q
pane_has 10 "TOP-EXITED 0"
ok $? "q quits top with exit status 0"
ok $(tm capture-pane -p -t st | grep -q "q quits"; [ $? != 0 ]; echo $?) "the terminal is restored (top's screen is gone)"
tm kill-session -t st
wait "$job"

# 4. --master: the coordinator of a 2-node job asked from the other node, with the job's token; the other node's
# own view in its log directory
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then
    for i in 1 2 3 4; do echo "ok $((_tap_n + i)) # SKIP network namespaces need root"; done
    exit $_tap_failed
fi
tm kill-server 2>/dev/null
mn_up 66 2 ps 29661
export RUN_S=8
for i in 1 2; do mn_node $i --nnodes 2 --nproc-per-node 1 --hang-timeout 2 ./w.sh; done
until_ok 30 grep -q '"nranks":1.*"nranks":1' log1/status.json 2>/dev/null
s=$(ip netns exec "${NS}2" "$PLAUNCH" status --master "$MASTER" 2>&1); src=$?
is "$src" 0 "status --master from node 2 exits 0"
like "$s" "generation 0 +world 2" "the coordinator answers with the job's generation and world"
like "$(printf '%s\n' "$s" | grep -E '^[01] ' | wc -l)" "^2$" "both nodes are listed"
s=$(PLAUNCH_TOKEN=00112233445566778899aabbccddeeff ip netns exec "${NS}2" "$PLAUNCH" status --master "$MASTER" --timeout 5 2>&1); src=$?
like "$src $s" "^1 plaunch status: TLS with the coordinator failed" "a wrong token is refused (exit 1, says TLS failed)"
s=$("$PLAUNCH" status log2 2>&1)
like "$s" "running .*world 2.*
.*
.*
1 .* running .*
  rank 1 " "on node 2, plaunch status LOG_DIR shows that node's own view (status.NODE.json)"
mn_wait 1 30; mn_wait 2 30
done_testing
