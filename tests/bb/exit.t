#!/bin/bash
# exit.t: plaunch's exit status is the first failing worker's; exec failures are 127/126 with a message; a
# --log-dir that cannot be a directory is refused before the job is announced; the root-cause block quotes a
# worker's log and error file with every byte a terminal would obey escaped (esc_term).
. "$(dirname "$0")/lib.sh"
plan 24

run_plaunch --nproc-per-node 3 sh -c '[ "$RANK" = 1 ] && exit 7; sleep 30'
is "$rc" 7 "a worker exiting 7 -> plaunch exits 7"
like "$err" "first failure +: rank 1 " "the root-cause block names rank 1"
like "$err" "status +: exit code 7" "the root-cause block names exit code 7"

start=$(date +%s)
run_plaunch --nproc-per-node 2 sh -c '[ "$RANK" = 0 ] && kill -SEGV $$; sleep 30'
is "$rc" 139 "a worker killed by SIGSEGV -> 139"
like "$err" "SIGSEGV" "the summary names the signal"
ok $(( $(date +%s) - start < 10 ? 0 : 1 )) "the other workers were stopped at once (not after their sleep)"

run_plaunch --nproc-per-node 2 /nonexistent/prog
is "$rc" 127 "missing program -> 127"
like "$err" "cannot run '/nonexistent/prog'" "the message names the missing program"

run_plaunch --nproc-per-node 2 no-such-command-plaunch
is "$rc" 127 "command not in PATH -> 127"

printf '#!/bin/sh\necho hi\n' >notexec.sh
chmod 644 notexec.sh
run_plaunch --nproc-per-node 2 ./notexec.sh
is "$rc" 126 "not executable -> 126"
like "$err" "permission denied" "the message says why"

mkdir adir
run_plaunch --nproc-per-node 2 ./adir
is "$rc" 126 "a directory as the program -> 126, as a shell"
like "$err" "cannot run './adir': it is a directory, not a program" "the message says it is a directory"

run_plaunch --nproc-per-node 4 true
is "$rc" 0 "all workers exit 0 -> 0"

printf 'keep\n' >afile
run_plaunch --log-dir afile --nproc-per-node 2 true
is "$rc" 2 "--log-dir naming a regular file -> 2 (bad input), not 125"
like "$err" "log directory 'afile' exists but is not a directory; choose another with --log-dir" "the message names it"
is "$(printf '%s\n' "$err" | grep -c '^plaunch: job ')$(cat afile)" "0keep" "refused before the job is announced; the file untouched"

rm -rf log # a run appends to the logs of earlier runs: count this run's markers only
run_plaunch --nproc-per-node 2 --max-restarts 3 /nonexistent/prog
is "$(grep -c 'generation' log/workerlog.0)" 1 "an exec failure is not retried (it would fail the same way)"
# A worker that prints escape sequences (CSI, OSC with BEL, a C1 CSI in UTF-8, invalid UTF-8) and whose torch
# error file holds some: the block shows them as \xNN and never sends the bytes themselves to the terminal.
cat >escfail.sh <<'W'
#!/bin/sh
printf 'boom \033[31mRED\033]0;title\007 \302\233X \377 done\n'
printf '{"message": "Bad\\u009b2J news \\u001b[1m"}' >"$TORCHELASTIC_ERROR_FILE"
exit 3
W
chmod +x escfail.sh
run_plaunch --nproc-per-node 1 --log-dir "$T/el" ./escfail.sh
is "$rc" 3 "a worker printing escape sequences and exiting 3 -> 3"
block=$(printf '%s\n' "$err" | grep -a -e '^    | ' -e '^    > ')
like "$block" '^    \| boom \\x1b\[31mRED\\x1b\]0;title\\x07 \\xc2\\x9bX \\xff done$' \
    "the log's last line: ESC, BEL, a C1 control and invalid UTF-8 shown as \\xNN"
like "$block" '^    > Bad\\xc2\\x9b2J news \?\[1m$' "the error file's message: its C1 control shown as \\xNN"
is "$(printf '%s' "$block" | LC_ALL=C grep -c -a -P '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|[\x80-\xff]')" 0 \
    "no control byte, C1 control or stray high byte in the quoted lines"
like "$(cat "$T/el/plaunch.log")" 'boom \\x1b\[31mRED' "plaunch.log keeps the same escaped block"
is "$(LC_ALL=C grep -c -a -P '\x1b' "$T/el/plaunch.log")" 0 "plaunch.log holds no raw ESC"
done_testing
