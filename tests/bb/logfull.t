#!/bin/bash
# logfull.t: a full log file system is reported at once on stderr, counted per rank, marked in the log, and shown
# in the exit status; the root-cause block never quotes lines from before the loss as the "last lines". Root: a
# 256 KiB tmpfs mounted under the test's temporary directory (unmounted at exit).
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
    echo "1..0 # SKIP needs root (mounts a small tmpfs)"
    exit 0
fi
plan 17

mkdir full
mount -t tmpfs -o size=256k plaunch-logfull "$T/full" || { echo "Bail out! cannot mount a tmpfs"; exit 1; }
trap 'umount "$T/full" 2>/dev/null; _bb_cleanup' EXIT
mkfifo idle
export OUTDIR=$T

# The worker: early lines, then (once the test has filled the file system) many late lines, then its exit code;
# with RECOVER set it waits again (the test frees space) and writes a few last lines.
cat >w.sh <<'W'
#!/bin/bash
wait_file() { while [ ! -e "$OUTDIR/$1" ]; do read -r -t 0.05 <>"$OUTDIR/idle" || true; done; }
for i in $(seq 1 50); do echo "early line $i"; done
touch "$OUTDIR/early.$RANK"
wait_file full.go
for i in $(seq 1 3000); do echo "late line $i of rank $RANK, which the full file system refuses"; done
touch "$OUTDIR/late.$RANK"
if [ -n "${RECOVER:-}" ]; then
    wait_file space.go
    echo "after recovery 1"; echo "after recovery 2"
fi
exit "${CODE:-0}"
W
chmod +x w.sh

# fill: takes every free block of the tmpfs.
fill() { dd if=/dev/zero of="$T/full/filler" bs=4k 2>/dev/null; }
start_job() { # LOGDIR ARGS...: plaunch in the background, stderr to err.txt
    rm -f early.* late.* full.go space.go "$T/full/filler"
    local d=$1; shift
    "$PLAUNCH" --log-dir "$T/full/$d" --tee none "$@" ./w.sh >out.txt 2>err.txt &
    pl=$!
}
# early_logged LOGDIR RANKS...: polls until each rank's early lines are in its log.
early_logged() {
    local d=$1 r i; shift
    for r in "$@"; do
        for i in $(seq 1 600); do grep -q "early line 50" "$T/full/$d/workerlog.$r" 2>/dev/null && break; sleep 0.05; done
    done
}
end_job() { # waits (60 s at most) for plaunch and sets rc and err
    local i
    for i in $(seq 1 1200); do alive "$pl" || break; sleep 0.05; done
    alive "$pl" && kill -KILL "$pl"
    wait "$pl"; rc=$?
    err=$(cat err.txt)
}

# 1. Workers that succeed while their output is lost: the loss is said at once, and the job does not exit 0.
start_job a --nproc-per-node 2
early_logged a 0 1
fill
touch full.go
wait_for 2 "late.*" 30
ok $? "both workers went on writing into a full file system"
said=1
for _ in $(seq 1 200); do grep -q "rank 1's output is being lost" err.txt && { said=0; break; }; sleep 0.05; done
is "$said" 0 "the loss is reported on stderr while the job still runs"
like "$(cat err.txt)" "cannot write $T/full/a/workerlog.0: No space left on device: rank 0's output is being lost" \
    "the message names the file, the cause and the rank"
end_job
is "$rc" 125 "every worker exited 0 but the logs lost output: exit 125"
like "$err" "the logs in $T/full/a are incomplete .*rank 0 lost [0-9]+ bytes, rank 1 lost [0-9]+ bytes" \
    "the end says how many bytes each rank lost"
like "$err" "exit status 125 although every worker exited 0" "and why the exit status is 125"

# 2. A failing worker whose last lines were lost: no stale "last lines" in the root cause.
export CODE=3
start_job b --nproc-per-node 1
early_logged b 0
fill
touch full.go
end_job
is "$rc" 3 "the failing worker's exit code stays the job's"
block=$(printf '%s\n' "$err" | sed -n '/root cause/,/every node exits/p')
like "$block" "last lines of its log:.*" "the root-cause block is printed"
like "$block" "\[plaunch: no tail: the last [0-9]+ bytes rank 0 wrote were lost \(No space left on device\)\]" \
    "it says that the tail was lost"
ok "$(printf '%s\n' "$block" | grep -qE 'early line|late line'; echo $((1 - $?)))" \
    "it quotes no line from before the loss"
unset CODE

# 3. Space comes back: the log marks the gap, later lines are written, and the tail quotes only those.
export CODE=4 RECOVER=1
start_job c --nproc-per-node 1
early_logged c 0
fill
touch full.go
wait_for 1 "late.0" 30
rm -f "$T/full/filler"
touch space.go
end_job
is "$rc" 4 "a worker failing after the loss: its exit code"
log=$(cat "$T/full/c/workerlog.0")
like "$log" "^==== plaunch: [0-9]+ bytes of rank 0's output were lost here \(No space left on device\) ====$" \
    "the log marks the gap"
is "$(printf '%s\n' "$log" | sed -n '/lost here/,$p' | tail -n 2)" "$(printf 'after recovery 1\nafter recovery 2')" \
    "the lines written after the gap are in the log, after its marker"
like "$err" "rank 0's log is written again after [0-9]+ bytes were lost" "the recovery is reported"
block=$(printf '%s\n' "$err" | sed -n '/root cause/,/every node exits/p')
like "$block" "\[plaunch: incomplete: [0-9]+ bytes of this generation's output were lost before the lines below" \
    "the root cause says the tail is incomplete"
is "$(printf '%s\n' "$block" | grep -E '^    \| [^[]' | tail -n 2)" "$(printf '    | after recovery 1\n    | after recovery 2')" \
    "and quotes the lines after the gap"
ok "$(printf '%s\n' "$block" | grep -q 'early line'; echo $((1 - $?)))" "but none from before it"
done_testing
