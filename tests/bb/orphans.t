#!/bin/bash
# orphans.t: no worker or worker child outlives plaunch: SIGKILL of plaunch, normal exit, restarts.
. "$(dirname "$0")/lib.sh"
plan 7

cat >forker.sh <<'W'
#!/bin/bash
# A worker with a child in its group, one that left with setsid, and a grandchild.
sleep 300 & echo $! >> "$OUTDIR/pids"
setsid sleep 301 & echo $! >> "$OUTDIR/pids"
bash -c 'sleep 302 & echo $! >> "$OUTDIR/pids"; wait' &
echo $$ >> "$OUTDIR/pids"
echo "$PLAUNCH_AGENT" > "$OUTDIR/agent"
touch "$OUTDIR/ready.$RANK"
[ "${EXIT_AT_ONCE:-0}" = 1 ] && exit 0
wait
W
chmod +x forker.sh
export OUTDIR=$T

survivors() {
    local n=0
    for p in $(cat pids); do alive "$p" && n=$((n + 1)); done
    echo $n
}

rm -f pids ready.*
"$PLAUNCH" --nproc-per-node 3 --quiet ./forker.sh >/dev/null 2>&1 &
job=$!
wait_for 3 "ready.*" 10; ok $? "workers and their children are running"
sleep 0.2
is "$(wc -l < pids)" 12 "12 processes recorded"
kill -9 $job
sleep 2
is "$(survivors)" 0 "SIGKILL plaunch: no descendant alive 2 s later"
rundir=$(sed 's|^ipc://||; s|/agent$||' agent)
ok $([ -n "$rundir" ] && [ ! -e "$rundir" ]; echo $?) "... and its run directory ($rundir) is removed"

rm -f pids ready.*
EXIT_AT_ONCE=1 timeout 30 "$PLAUNCH" --nproc-per-node 2 --quiet ./forker.sh >/dev/null 2>&1
is "$?" 0 "workers that exit 0 leaving children behind: exit 0"
is "$(survivors)" 0 "their leftover children are killed when the job ends"

rm -f pids ready.*
cat >failer.sh <<'W'
#!/bin/bash
# Generation 0 leaves children behind (one in the group, one that left it); generation 1 looks for them.
if [ "$PLAUNCH_GENERATION" = 0 ]; then
    sleep 300 & echo $! >> "$OUTDIR/pids.0"
    setsid sleep 301 & echo $! >> "$OUTDIR/pids.0"
    [ "$RANK" = 1 ] && { sleep 0.3; exit 3; }
    sleep 30
fi
for p in $(cat "$OUTDIR/pids.0"); do
    st=$(awk '{print $3}' /proc/$p/stat 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ] && echo "alive $p" >> "$OUTDIR/leak"
done
echo checked >> "$OUTDIR/checked"
W
chmod +x failer.sh
rm -f leak pids.0 checked
timeout 30 "$PLAUNCH" --nproc-per-node 2 --max-restarts 1 --quiet ./failer.sh >/dev/null 2>&1
is "$(cat leak 2>/dev/null)$(wc -l < pids.0)$(wc -l < checked)" "42" "a restart starts only after generation 0's children are gone"
done_testing
