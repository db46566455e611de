#!/bin/bash
# stacks.t: `plaunch __stacks` on real stuck processes (tests/tools/pl_stuck, built with -g): the function and
# file:line a C worker blocks in, every thread of a threaded one, a process tree, a stopped process left stopped;
# per-pid errors, never a stall, for a pid that is gone, not ours, a zombie, traced by another tracer, or blocked
# where ptrace cannot stop it (a vfork parent); a stand-in py-spy that answers and one that hangs; a CPython
# worker's faulthandler dump after SIGABRT parsed back to its function and line; and the ranks grouped as the
# coordinator will (tests/tools/pl_hang).
. "$(dirname "$0")/lib.sh"
STUCK=$PLAUNCH_BUILD/tests/tools/pl_stuck
HANG=$PLAUNCH_BUILD/tests/tools/pl_hang
if [ ! -x "$STUCK" ] || [ ! -x "$HANG" ]; then
    echo "1..0 # SKIP $STUCK or $HANG not built (make unit)"
    exit 0
fi
if ! ldconfig -p | grep -q 'libdw.so.1'; then
    echo "1..0 # SKIP libdw.so.1 is not installed (make deps)"
    exit 0
fi
plan 52
SRC=$PLAUNCH_SRC/tests/tools/pl_stuck.c
line_of() { grep -n "$1" "$SRC" | cut -d: -f1; }
MAIN_LINE=$(line_of STUCK_MAIN_LINE)
THREAD_LINE=$(line_of STUCK_THREAD_LINE)
CHILD_LINE=$(line_of STUCK_CHILD_LINE)
PARENT_LINE=$(line_of STUCK_PARENT_LINE)

# stacks ARGS...: plaunch __stacks under a 60 s cap, for this shell's children (timeout is its parent, this
# shell theirs; a later --parent wins); $src, $ms (wall time), the document in $T/out.json.
stacks() {
    local t0
    t0=$(date +%s%N)
    timeout -k 5 60 "$PLAUNCH" __stacks --parent $$ "$@" >"$T/out.json" 2>"$T/stacks.err"
    src=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
}
# js EXPR: EXPR in Python over the last document d; helpers: proc(pid), frames(pid, tid) as "fn file:line" lines.
js() {
    python3 - "$T/out.json" "$1" <<'EOF'
import json, os, sys
d = json.load(open(sys.argv[1]))
def proc(pid):
    return next(p for p in d["procs"] if p["pid"] == pid)
def frames(pid, tid=None, py=False):
    p = proc(pid)
    ths = p.get("py_threads" if py else "threads", [])
    t = next(t for t in ths if tid is None or t["tid"] == tid)
    return "\n".join("%s %s:%s" % (f.get("fn", "?"), os.path.basename(f.get("file", "")), f.get("line", 0))
                     for f in t.get("frames", []))
print(eval(sys.argv[2]))
EOF
}
# start_stuck MODE NAME [ARGS...]: pl_stuck in the background, waited for until it is where it blocks; $pid.
start_stuck() {
    local mode=$1 name=$2
    shift 2
    "$STUCK" "$mode" "$T/$name.ready" "$@" &
    pid=$!
    wait_for 1 "$T/$name.ready" 20 || echo "# pl_stuck $mode did not get ready"
}
state_of() { awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
tracer_of() { awk '/^TracerPid:/ {print $2}' "/proc/$1/status" 2>/dev/null; }

# ---- a C worker blocked in a named function ------------------------------------------------------------------
start_stuck named one
stacks "$pid"
is "$src" 0 "one thread: exit 0"
is "$(js 'len(d["procs"])')" 1 "one thread: one process"
is "$(js "proc($pid)['comm'] + ' ' + str(proc($pid)['threads_total']) + ' ' + proc($pid)['state']")" "pl_stuck 1 S" \
    "one thread: comm, thread count and its state before the capture (S, not the tracer's t)"
like "$(js "frames($pid, $pid)")" "^pause .*
stuck_in_named_function pl_stuck.c:$MAIN_LINE
main pl_stuck.c:[0-9]+" "one thread: pause <- stuck_in_named_function at pl_stuck.c:$MAIN_LINE <- main"
like "$(js "proc($pid)['threads'][0]['frames'][1]['module'] + ' ' + str(proc($pid)['threads'][0]['frames'][1]['offset'] > 0)")" \
    "^pl_stuck True$" "one thread: frames name their module and offset"
is "$(state_of "$pid")/$(tracer_of "$pid")" "S/0" "one thread: let go afterwards (sleeping, no tracer)"
kill_reap "$pid"

# ---- threads ---------------------------------------------------------------------------------------------------
start_stuck named threads 5
stacks "$pid"
is "$(js "len(proc($pid)['threads'])")/$(js "proc($pid)['threads_total']")" "6/6" "6 threads: all unwound"
is "$(js "proc($pid)['threads'][0]['tid']")" "$pid" "6 threads: the main thread first"
is "$(js "sum(1 for t in proc($pid)['threads'] if 'thread_waits_in_named_function pl_stuck.c:$THREAD_LINE' in frames($pid, t['tid']))")" \
    5 "6 threads: the other five in thread_waits_in_named_function at pl_stuck.c:$THREAD_LINE"
like "$(js "frames($pid, $pid)")" "stuck_in_named_function pl_stuck.c:$MAIN_LINE" "6 threads: the main one where it is"
echo "# 6 threads captured in $ms ms"
kill_reap "$pid"

# ---- a process tree ------------------------------------------------------------------------------------------
start_stuck tree tree
child=$(cat "$T/tree.ready")
stacks "$pid"
is "$(js "[(p['pid'], p['ppid'], p['root']) for p in d['procs']] == [($pid, $$, $pid), ($child, $pid, $pid)]")" True \
    "tree: the worker and its child, each with its parent and root"
like "$(js "frames($pid)")" "parent_waits_in_named_function pl_stuck.c:$PARENT_LINE" "tree: the parent waits in its function"
like "$(js "frames($child)")" "child_stuck_in_named_function pl_stuck.c:$CHILD_LINE" "tree: the child is in its own"
stacks --parent "$pid" "$child"
is "$(js "frames($child).split()[2]")" "child_stuck_in_named_function" "tree: the child alone with --parent"
kill_reap "$child" "$pid"

# ---- a stopped process is captured and stays stopped ---------------------------------------------------------
start_stuck named stopped 2
kill -STOP "$pid"
until_ok 10 test "$(state_of "$pid")" = T
stacks "$pid"
like "$(js "frames($pid, $pid)")" "stuck_in_named_function" "stopped: its stack is read"
is "$(js "proc($pid)['state']")" T "stopped: reported as stopped"
is "$(state_of "$pid")/$(tracer_of "$pid")" "T/0" "stopped: still stopped afterwards, no tracer"
kill -CONT "$pid"
until_ok 10 test "$(state_of "$pid")" = S
is "$(state_of "$pid")" S "stopped: SIGCONT goes on as before"
kill_reap "$pid"

# ---- pids that fail, each on its own -------------------------------------------------------------------------
start_stuck named mixed
sleep 1000 &
gone=$!
kill_reap "$gone"
stacks "$pid" "$gone" 1
is "$src" 0 "failures: exit 0 with a document"
like "$(js "frames($pid, $pid)")" "stuck_in_named_function" "failures: the good pid is captured"
like "$(js "proc($gone)['error']")" "^pid $gone: no such process" "failures: a pid that is gone"
like "$(js "proc(1)['error']")" "^pid 1 is not a child of pid $$ .*not ours, left alone" \
    "failures: a pid that is not ours is refused (not touched)"
kill_reap "$pid"
start_stuck zombie zombie
zombie=$(cat "$T/zombie.ready")
until_ok 10 test "$(state_of "$zombie")" = Z
stacks --parent "$pid" "$zombie"
like "$(js "proc($zombie)['error']")" "is a zombie" "failures: a zombie"
kill_reap "$pid"
start_stuck leaderless leaderless 2
stacks "$pid"
is "$(js "proc($pid)['state'] + ' ' + str(proc($pid)['threads_total'])")" "Z 4" \
    "leaderless: a main thread that exited leaves a zombie leader and three threads"
live=$(js "sum(1 for t in proc($pid)['threads'] if 'thread_waits_in_named_function' in frames($pid, t['tid']))")
is "$live/$(js "'zombie' in proc($pid)['threads'][0].get('error', '')")" \
    "3/True" "leaderless: the live threads are unwound, the leader is named a zombie"
kill_reap "$pid"
start_stuck traced traced
traced=$(cat "$T/traced.ready")
stacks --parent "$pid" --deadline-ms 5000 "$traced"
like "$(js "proc($traced)['error']")" "already traced by pid $pid" "traced: another tracer's process is named as such"
ok "$([ "$ms" -lt 3000 ] && echo 0 || echo 1)" "traced: answered at once ($ms ms)"
is "$(tracer_of "$traced")" "$pid" "traced: the other tracer still holds it"
kill_reap "$traced" "$pid"

# ---- a process ptrace cannot stop (a vfork parent): the deadline holds ---------------------------------------
start_stuck vfork vfork
read -r vparent vchild <"$T/vfork.ready"
until_ok 10 test "$(state_of "$vparent")" = D
stacks --deadline-ms 4000 --stop-ms 500 "$vparent"
is "$src" 0 "vfork: exit 0"
ok "$([ "$ms" -lt 4000 ] && echo 0 || echo 1)" "vfork: within the deadline ($ms ms, --stop-ms 500)"
like "$(js "proc($vparent)['error']")" "did not stop within [0-9]+ ms \(state D, in [a-z_]+\): it waits in the kernel" \
    "vfork: the parent's error says where it waits"
like "$(js "frames($vchild)")" "^pause .*
main pl_stuck.c" "vfork: its child is still captured"
is "$(tracer_of "$vparent")/$(tracer_of "$vchild")" "0/0" "vfork: nobody is left traced"
kill_reap "$vchild" "$vparent"

# ---- ten of them at once (4 captures at a time): the run's deadline holds for all --------------------------------
vps=() vcs=()
for i in 0 1 2 3 4 5 6 7 8 9; do
    start_stuck vfork "vf$i"
    read -r vp vc <"$T/vf$i.ready"
    vps+=("$vp") vcs+=("$vc")
done
stacks --deadline-ms 4000 --per-pid-ms 4000 --stop-ms 9000 "${vps[@]}"
ok "$([ "$src" = 0 ] && [ "$ms" -lt 5500 ] && echo 0 || echo 1)" "ten vfork parents: the run ends in time ($ms ms for 4000)"
is "$(js "sum(1 for p in d['procs'] if p['pid'] in ($(IFS=,; echo "${vps[*]}")) and 'did not stop' in p.get('error', ''))")" \
    10 "ten vfork parents: each says it did not stop"
kids=$(IFS=,; echo "${vcs[*]}")
is "$(js "sum(1 for p in d['procs'] if p['pid'] in ($kids) and p.get('threads') and 'pause' in frames(p['pid']))")" 10 \
    "ten vfork parents: each one's child is still captured (a parent that never stops takes half the time at most)"
kill_reap "${vcs[@]}" "${vps[@]}"

# ---- CPython: native frames, a stand-in py-spy, faulthandler after SIGABRT -----------------------------------
cat >"$T/stuck.py" <<'EOF'
import sys, threading, time

def loader_waits(ev):
    ev.wait()

def blocked_in_named_function():
    open(sys.argv[1], "w").close()
    while True:
        time.sleep(1000)  # PY_STUCK_LINE

ev = threading.Event()
threading.Thread(target=loader_waits, args=(ev,), name="loader", daemon=True).start()
blocked_in_named_function()
EOF
PY_LINE=$(grep -n PY_STUCK_LINE "$T/stuck.py" | cut -d: -f1)
PYTHONFAULTHANDLER=1 python3 "$T/stuck.py" "$T/py.ready" >"$T/workerlog.0" 2>&1 &
pypid=$!
wait_for 1 "$T/py.ready" 30
stacks --no-py-spy "$pypid"
is "$(js "proc($pypid)['python']")/$(js "len(proc($pypid)['threads'])")" "True/2" "python: CPython, two threads"
like "$(js "frames($pypid, $pypid)")" "time_sleep|clock_nanosleep" "python: the native main thread sleeps"
mkdir -p "$T/bin"
cat >"$T/bin/py-spy" <<EOF
#!/bin/sh
[ "\$1 \$2 \$4" = "dump --pid --json" ] || exit 3
echo '[{"pid":'\$3',"thread_id":140000,"thread_name":"MainThread","os_thread_id":'\$3',"active":true,"owns_gil":false,
 "frames":[{"name":"blocked_in_named_function","filename":"$T/stuck.py","module":null,"short_filename":"stuck.py",
 "line":$PY_LINE,"locals":null}],"process_info":null}]'
EOF
chmod +x "$T/bin/py-spy"
PATH="$T/bin:$PATH" stacks "$pypid"
is "$(js "proc($pypid)['py_source']")" py-spy "py-spy: its answer is used"
is "$(js "frames($pypid, $pypid, py=True)")" "blocked_in_named_function stuck.py:$PY_LINE" "py-spy: its frames"
is "$(js "proc($pypid)['py_threads'][0]['current']")" True "py-spy: the thread of the pid is the current one"
printf '#!/bin/sh\necho $$ >%s\nexec sleep 1000\n' "$T/slow.pid" >"$T/bin/py-spy"
PATH="$T/bin:$PATH" stacks --deadline-ms 3000 "$pypid"
ok "$([ "$src" = 0 ] && [ "$ms" -lt 4500 ] && echo 0 || echo 1)" "py-spy hangs: the run still ends ($ms ms for 3000)"
like "$(js "proc($pypid).get('py_error', '') + proc($pypid).get('error', '')")" "py-spy did not answer|killed" \
    "py-spy hangs: said so"
like "$(js "frames($pypid, $pypid)")" "time_sleep|clock_nanosleep" "py-spy hangs: the native stacks are kept"
ok "$(alive "$(cat "$T/slow.pid")" && echo 1 || echo 0)" "py-spy hangs: it was killed"
kill -ABRT "$pypid"
wait "$pypid" 2>/dev/null
is "$?" 134 "faulthandler: the worker died of SIGABRT"
"$HANG" pytb "$T/workerlog.0" >"$T/pytb.out"
like "$(cat "$T/pytb.out")" "thread 0x[0-9a-f]+ current=1 frames=2
  blocked_in_named_function $T/stuck.py:$PY_LINE
  <module> $T/stuck.py:[0-9]+" "faulthandler: the current thread is in blocked_in_named_function at line $PY_LINE"
like "$(cat "$T/pytb.out")" "  loader_waits $T/stuck.py:4" "faulthandler: the loader thread too"

# ---- grouped as the coordinator will -------------------------------------------------------------------------
for r in 0 1 2; do
    start_stuck named "g$r"
    g[$r]=$pid
done
start_stuck tree g3
g3child=$(cat "$T/g3.ready")
g[3]=$pid
stacks "${g[@]}"
"$HANG" group "$T/out.json" 0="${g[0]}":node-a:0 1="${g[1]}":node-a:1 2="${g[2]}":node-b:0 3="${g[3]}":node-b:1 \
    >"$T/group.out"
want="summary: ranks 0-2 share stack A \(stuck_in_named_function in pl_stuck.c:$MAIN_LINE\); "
want+="rank 3: stack B \(parent_waits_in_named_function in pl_stuck.c:$PARENT_LINE\) <- the odd one out"
like "$(cat "$T/group.out")" "$want" \
    "group: three ranks share a stack, rank 3 is the odd one out"
is "$(grep '^odd:' "$T/group.out")" "odd: 3" "group: the odd rank"
like "$(cat "$T/group.out")" "  rank 3  node node-b  GPU 1  pid ${g[3]}" "group: ranks with node, GPU and pid"
like "$(cat "$T/group.out")" "child_stuck_in_named_function  pl_stuck .*pl_stuck.c:$CHILD_LINE" \
    "group: the odd rank's full stacks include its child process"
kill_reap "$g3child" "${g[@]}"
done_testing
