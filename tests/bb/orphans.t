#!/bin/bash
# orphans.t: no worker or worker child outlives plaunch: SIGKILL of plaunch, normal exit, restarts; with the job
# cgroup (root, cgroup v2) also a daemon that left its session and cleared its environment (setsid env -i).
. "$(dirname "$0")/lib.sh"
modes="0"
if [ "$(id -u)" = 0 ] && grep -q ' - cgroup2 ' /proc/self/mountinfo; then modes="0 1"; fi
plan $(($(echo $modes | wc -w) * 6 + 3))

cat >forker.sh <<'W'
#!/bin/bash
# A worker with a child in its group, one that left with setsid, a grandchild, and a daemon without the
# worker's environment (its pid goes to a file of its own: only the job cgroup finds it after a SIGKILL).
sleep 300 & echo $! >> "$OUTDIR/pids"
setsid sleep 301 & echo $! >> "$OUTDIR/pids"
bash -c 'sleep 302 & echo $! >> "$OUTDIR/pids"; wait' &
setsid env -i sleep 303 & echo $! >> "$OUTDIR/daemons"
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
    for p in $(cat "$@"); do alive "$p" && n=$((n + 1)); done
    echo $n
}
lines_are() { [ "$(cat "$2" 2>/dev/null | wc -l)" = "$1" ]; }
none_alive() { [ "$(survivors "$@")" = 0 ]; }

for mode in $modes; do
    rm -f pids daemons ready.*
    PLAUNCH_CGROUP=$mode "$PLAUNCH" --nproc-per-node 3 --quiet ./forker.sh >/dev/null 2>&1 &
    job=$!
    wait_for 3 "ready.*" 10; ok $? "PLAUNCH_CGROUP=$mode: workers and their children are running"
    until_ok 10 lines_are 12 pids; ok $? "PLAUNCH_CGROUP=$mode: 12 processes recorded"
    { kill -9 $job; wait $job; } 2>/dev/null
    until_ok 10 none_alive pids; ok $? "PLAUNCH_CGROUP=$mode: SIGKILL plaunch: no descendant alive (waited up to 10 s)"
    rundir=$(sed 's|^ipc://||; s|/agent$||' agent)
    ok $([ -n "$rundir" ] && until_ok 10 test ! -e "$rundir"; echo $?) "PLAUNCH_CGROUP=$mode: ... and its run directory ($rundir) is removed"
    if [ "$mode" = 0 ]; then
        ok 0 "# SKIP without the job cgroup a setsid env -i daemon outlives a SIGKILL of plaunch (docs/design.md)"
        ok 0 "# SKIP no job cgroup to remove"
    else
        until_ok 10 none_alive daemons; ok $? "PLAUNCH_CGROUP=$mode: ... nor the 3 setsid env -i daemons (the sentinel ends the job cgroup)"
        cg=$(sed -n "s/.*ended with the job's cgroup \(.*\) (cgroup.*/\1/p" log/plaunch.log)
        ok $([ -n "$cg" ] && until_ok 10 test ! -e "$cg"; echo $?) "PLAUNCH_CGROUP=$mode: ... and the sentinel removes the cgroup (${cg:-none named in plaunch.log})"
    fi
    for p in $(cat daemons); do kill -9 "$p" 2>/dev/null; done # what a failure left behind
done

rm -f pids daemons ready.*
EXIT_AT_ONCE=1 timeout 30 "$PLAUNCH" --nproc-per-node 2 --quiet ./forker.sh >/dev/null 2>&1
is "$?" 0 "workers that exit 0 leaving children behind: exit 0"
is "$(survivors pids daemons)" 0 "their leftover children, setsid env -i daemons too, are killed when the job ends"
for p in $(cat daemons); do kill -9 "$p" 2>/dev/null; done

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
