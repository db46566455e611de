#!/bin/bash
# strays.t: what workers leave behind is ended whole and nothing else is touched: a 150-deep chain of re-parented
# processes, a children list far longer than 4 KiB (in a PID namespace, beside processes whose pids are prefixes
# of the strays' pids), and process groups the sentinel must forget once they are reaped.
. "$(dirname "$0")/lib.sh"

# Each case runs without the job cgroup (PLAUNCH_CGROUP=0) and, where cgroup v2 is writable (root), with it
# through cgroup.kill and through the freeze-and-kill method of kernels before 5.14.
modes="0"
if [ "$(id -u)" = 0 ] && grep -q ' - cgroup2 ' /proc/self/mountinfo; then modes="0 1 freeze"; fi
nmodes=$(echo $modes | wc -w)
pidns=0
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then pidns=1; fi
plan $((nmodes * 4 + nmodes * 5 + 2))
export OUTDIR=$T PLAUNCH

# count_alive FILE: how many of the pids listed in FILE are alive.
count_alive() {
    local n=0 p
    for p in $(cat "$1" 2>/dev/null); do alive "$p" && n=$((n + 1)); done
    echo $n
}

# ---- a chain of 150 processes, each re-parented to plaunch only when the one above it dies -------------------
cat >chain.sh <<'W'
#!/bin/bash
# chain.sh N: this process, parent of a chain of N more; the last one sleeps.
echo $$ >> "$OUTDIR/chain"
if [ "$1" -gt 0 ]; then "$0" $(($1 - 1)) & wait; else touch "$OUTDIR/chain.done"; exec sleep 300; fi
W
cat >chainer.sh <<'W'
#!/bin/bash
# A worker that starts a 150-deep chain and exits 0 once its end runs.
"$OUTDIR/chain.sh" 150 &
for ((i = 0; i < 1200; i++)); do [ -e "$OUTDIR/chain.done" ] && exit 0; sleep 0.05; done
exit 1
W
chmod +x chain.sh chainer.sh
for mode in $modes; do
    rm -rf chain chain.done log
    PLAUNCH_CGROUP=$mode run_plaunch --nproc-per-node 1 ./chainer.sh
    is "$rc" 0 "PLAUNCH_CGROUP=$mode: a worker that leaves a 150-deep chain and exits 0: exit 0"
    is "$(wc -l < chain) $(count_alive chain)" "151 0" "PLAUNCH_CGROUP=$mode: all 151 processes of the chain are gone when plaunch exits"
    for p in $(cat chain); do kill -9 "$p" 2>/dev/null; done # what a failure left behind
    like "$(cat log/plaunch.log)" "processes left behind by workers: $([ "$mode" = 0 ] && echo 'no job cgroup' || echo "ended with the job's cgroup")" \
        "PLAUNCH_CGROUP=$mode: plaunch.log says how leftovers are ended"
    cg=$(sed -n "s/.*ended with the job's cgroup \(.*\) (cgroup.*/\1/p" log/plaunch.log)
    ok $([ -z "$cg" ] || [ ! -e "$cg" ]; echo $?) "PLAUNCH_CGROUP=$mode: no cgroup directory is left (${cg:-none})"
done

# ---- not allowed to create a cgroup: the job runs, and plaunch.log says why there is none ---------------------
if [ "$(id -u)" = 0 ] && [ "$modes" != 0 ] && command -v setpriv >/dev/null; then
    nb=$(mktemp -d /tmp/plaunch-bb-nobody.XXXXXX)
    chown 65534:65534 "$nb"
    (cd "$nb" && setpriv --reuid=65534 --regid=65534 --clear-groups "$PLAUNCH" --nproc-per-node 1 --quiet /bin/true)
    is "$?" 0 "as a user who may not create a cgroup: the job runs"
    like "$(cat "$nb/log/plaunch.log")" "no job cgroup \(cannot create a cgroup in .*: Permission denied\)" \
        "... and plaunch.log says why there is no job cgroup"
    rm -rf "$nb"
else
    ok 0 "# SKIP needs root (to run plaunch as nobody), cgroup v2 and setpriv(1)"
    ok 0 "# SKIP needs root (to run plaunch as nobody), cgroup v2 and setpriv(1)"
fi

# ---- PID namespace cases: small pids, reused on purpose (ns_last_pid) ----------------------------------------
cat >nslib.sh <<'W'
# Sourced by the scripts that run as pid 1 of a new PID namespace.
cd "$OUTDIR" || exit 1
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1; [ -n "$st" ] && [ "$st" != Z ]; }
W
cat >ns_long.sh <<'W'
#!/bin/bash
# 12 unrelated processes at pids 100-111, then plaunch at pid 10000 whose worker leaves 1200 children (pids
# 100xx-112xx: 6 bytes each in plaunch's children list, which then passes 4 KiB in the middle of a pid "10x...").
. "$OUTDIR/nslib.sh"
echo 99 > /proc/sys/kernel/ns_last_pid
for ((i = 0; i < 12; i++)); do sleep 300 & echo $! >> victims; done
echo 9999 > /proc/sys/kernel/ns_last_pid
timeout -k 5 120 "$PLAUNCH" --nproc-per-node 1 --quiet ./spawner.sh > plaunch.out 2>&1
echo $? > rc
for p in $(cat victims); do alive "$p" && echo "$p"; done > victims.alive
for p in $(cat strays); do alive "$p" && echo "$p"; done > strays.alive
W
cat >spawner.sh <<'W'
#!/bin/bash
for ((i = 0; i < 1200; i++)); do sleep 300 & echo $! >> "$OUTDIR/strays"; done
exit 0
W
cat >ns_forget.sh <<'W'
#!/bin/bash
# Generation 0's worker fails; once generation 1 runs, an unrelated process takes generation 0's pid as its own
# process group; then plaunch is SIGKILLed and its sentinel ends the job.
. "$OUTDIR/nslib.sh"
"$PLAUNCH" --nproc-per-node 1 --max-restarts 1 --quiet ./regen.sh > plaunch.out 2>&1 &
job=$!
for ((i = 0; i < 600; i++)); do [ -e ready ] && break; sleep 0.05; done
p0=$(cat gen0)
echo $((p0 - 1)) > /proc/sys/kernel/ns_last_pid
setsid sleep 300 &
victim=$!
for ((i = 0; i < 200; i++)); do [ "$(awk '{print $5}' /proc/$victim/stat)" = "$victim" ] && break; sleep 0.05; done
echo "$p0 $victim $(awk '{print $5}' /proc/$victim/stat)" > ids
{ kill -9 $job; wait $job; } 2>/dev/null # reaped here: no "Killed" notice later
sentinel() { grep -qx plaunch-sentinel /proc/[0-9]*/comm 2>/dev/null; }
for ((i = 0; i < 200; i++)); do sentinel || break; sleep 0.05; done
sentinel && echo "sentinel still running" > victim.state
alive "$victim" && echo alive >> victim.state || echo dead >> victim.state
W
cat >regen.sh <<'W'
#!/bin/bash
if [ "$PLAUNCH_GENERATION" = 0 ]; then echo $$ > "$OUTDIR/gen0"; exit 1; fi
touch "$OUTDIR/ready"
exec sleep 300
W
chmod +x ns_long.sh spawner.sh ns_forget.sh regen.sh

for mode in $modes; do
    if [ $pidns = 0 ]; then
        for i in 1 2 3 4 5; do ok 0 "# SKIP PID namespaces need root and unshare(1)"; done
        continue
    fi
    rm -f victims strays rc victims.alive strays.alive
    PLAUNCH_CGROUP=$mode timeout -k 5 180 unshare --pid --fork --mount-proc "$T/ns_long.sh"
    is "$(cat rc) $(wc -l < strays)" "0 1200" "PLAUNCH_CGROUP=$mode: a worker leaves 1200 children and exits 0: exit 0"
    is "$(wc -l < victims.alive)" 12 "PLAUNCH_CGROUP=$mode: unrelated processes whose pids are prefixes of strays' pids survive ($(tr '\n' ' ' < victims))"
    is "$(wc -l < strays.alive)" 0 "PLAUNCH_CGROUP=$mode: all 1200 children left behind are gone"

    rm -f gen0 ready ids victim.state
    PLAUNCH_CGROUP=$mode timeout -k 5 120 unshare --pid --fork --mount-proc "$T/ns_forget.sh"
    read -r p0 victim vgroup < ids
    is "$victim $vgroup" "$p0 $p0" "PLAUNCH_CGROUP=$mode: an unrelated process got generation 0's pid $p0 as its pid and process group"
    is "$(cat victim.state)" alive "PLAUNCH_CGROUP=$mode: SIGKILL of plaunch: the sentinel spares it (generation 0's group was forgotten)"
done
done_testing
