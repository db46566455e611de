#!/bin/bash
# logsafe.t: plaunch (often root) never writes through links planted in the log directory, never truncates a file
# that is not its own, refuses log and run directories other users control, and starts nothing when it refuses.
. "$(dirname "$0")/lib.sh"
plan 35

echo precious >victim
cat >w.sh <<'W'
#!/bin/bash
touch "$OUTDIR/started.$RANK"
echo "rank $RANK ran"
W
chmod +x w.sh
export OUTDIR=$T

# refused LOGDIR WHAT PATTERN: plaunch exits 2 naming the problem, the victim is intact, no worker started.
refused() {
    rm -f started.*
    run_plaunch --log-dir "$1" --nproc-per-node 2 ./w.sh
    is "$rc" 2 "$2: exit 2"
    like "$err" "$3" "$2: the message names the path and the problem"
    is "$(cat victim)" precious "$2: the link's target is intact"
    is "$(ls started.* 2>/dev/null | wc -l)" 0 "$2: no worker started"
}

mkdir -p d1 && ln -s ../victim d1/workerlog.1 && echo "old run" >d1/workerlog.0
refused d1 "a symlink planted as workerlog.1" "$T/d1/workerlog.1 is a symbolic link.*remove it"
is "$(cat d1/workerlog.0)" "old run" "a refused start empties no old workerlog"

mkdir -p d2 && ln -s ../victim d2/plaunch.log
refused d2 "a symlink planted as plaunch.log" "$T/d2/plaunch.log is a symbolic link"

mkdir -p d3 && ln victim d3/workerlog.0
refused d3 "a hard link planted as workerlog.0" "$T/d3/workerlog.0 has 2 hard links"

mkdir -p d4 && mkfifo d4/workerlog.0
refused d4 "a FIFO planted as workerlog.0" "$T/d4/workerlog.0 is not a regular file \(a FIFO\)"

# A log directory that only its owner can change, with a sticky bit for the others, is fine; so are old logs.
mkdir -p d5 && chmod 1777 d5 && echo "old run" >d5/workerlog.0
run_plaunch --log-dir d5 --nproc-per-node 2 ./w.sh
is "$rc" 0 "a sticky world-writable log directory of this user: accepted"
is "$(head -1 d5/workerlog.0) / $(tail -n 1 d5/workerlog.0)" "old run / rank 0 ran" \
    "an old workerlog of this user is kept: the run appends after its marker line"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    # Another user's directory with links planted in it: the attack of issue 8 (root truncated the targets).
    mkdir -p d6 && ln -s ../victim d6/workerlog.0 && chown -h nobody d6/workerlog.0 && chown nobody d6
    refused d6 "a log directory owned by nobody" "log directory $T/d6 belongs to uid [0-9]+ \(nobody\)"
    mkdir -p d7 && ln -s ../victim d7/plaunch.log && chmod 0777 d7
    refused d7 "a world-writable log directory without the sticky bit" "log directory $T/d7 is writable by every user \(mode 0777\)"
    mkdir -p d8 && echo theirs >d8/workerlog.0 && chown nobody d8/workerlog.0
    run_plaunch --log-dir d8 ./w.sh
    is "$rc" 2 "a workerlog owned by nobody: exit 2"
    is "$(cat d8/workerlog.0)" theirs "a workerlog owned by nobody: not truncated"
    # The run directory (the agent's socket) is made only where no one else can replace it.
    mkdir -p tmp1 && chmod 0777 tmp1
    TMPDIR=$T/tmp1 run_plaunch --log-dir d9 ./w.sh
    like "$rc $err" "^2 .*TMPDIR\) $T/tmp1 is writable by every user" "a world-writable TMPDIR: exit 2, named"
    mkdir -p tmp2 && chown nobody tmp2
    TMPDIR=$T/tmp2 run_plaunch --log-dir d9 ./w.sh
    like "$rc $err" "^2 .*TMPDIR\) $T/tmp2 belongs to uid [0-9]+ \(nobody\)" "a TMPDIR owned by nobody: exit 2, named"
else
    for i in $(seq 1 12); do ok 0 "# SKIP needs root and user nobody (chown)"; done
fi

# On a multi-node job the ranks, so the names, are known only when the coordinator assigns them: refused then.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p d11 && ln -s ../victim d11/workerlog.0
rm -f started.*
run_plaunch --nnodes 1 --master "127.0.0.1:$port" --token "$(printf '%064d' 7)" --log-dir d11 ./w.sh
is "$rc" 125 "multi-node: a planted workerlog ends the job when ranks are assigned (exit 125)"
like "$err" "$T/d11/workerlog.0 is a symbolic link" "multi-node: the message names it"
is "$(cat victim) $(ls started.* 2>/dev/null | wc -l)" "precious 0" "multi-node: the target is intact, no worker started"

# The run directory is fresh, 0700 and ours.
cat >rd.sh <<'W'
#!/bin/bash
d=${PLAUNCH_AGENT#ipc://}; d=${d%/agent}
stat -c '%a %u' "$d"
W
chmod +x rd.sh
run_plaunch --log-dir d10 ./rd.sh
is "$out" "[rank 0] 700 $(id -u)" "the run directory is 0700 and belongs to the user running plaunch"
done_testing
