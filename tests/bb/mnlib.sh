# mnlib.sh: helpers for multi-node black-box tests: plaunch nodes in network namespaces (scripts/netns.sh).
# Needs from the caller: NS (namespace prefix), MASTER (coordinator HOST:PORT), T (work dir).

# mn_node I ARGS...: starts plaunch on host I in the background (log dir $T/logI); its pid goes to $T/pid.I.
# `ip netns exec` execs plaunch, so that pid is plaunch's own.
mn_node() {
    local i=$1; shift
    ip netns exec "$NS$i" "$PLAUNCH" --master "$MASTER" --log-dir "$T/log$i" --quiet "$@" >"$T/out$i" 2>"$T/err$i" &
    echo $! >"$T/pid.$i"
}
# mn_wait I SECONDS: waits for node I's plaunch; sets $wrc to its exit code (124 when still running after SECONDS).
mn_wait() {
    local pid n=0
    pid=$(cat "$T/pid.$1")
    while kill -0 "$pid" 2>/dev/null && [ $n -lt $(($2 * 10)) ]; do sleep 0.1; n=$((n + 1)); done
    if kill -0 "$pid" 2>/dev/null; then wrc=124; else wait "$pid"; wrc=$?; fi
}
# mn_kill_all: ends every plaunch a test started (used between scenarios and at exit).
mn_kill_all() {
    local f
    for f in "$T"/pid.*; do [ -e "$f" ] && kill_reap "$(cat "$f")"; done
    rm -f "$T"/pid.*
}
# mn_alive_in GLOB: how many pids listed in files matching GLOB still run.
mn_alive_in() {
    local n=0 f
    for f in $1; do [ -e "$f" ] && alive "$(cat "$f")" && n=$((n + 1)); done
    echo $n
}
# mn_go_worker FILE: writes the worker most multi-node tests run: it records its rank and world size for each
# generation in $OUTDIR/start.GENERATION.NODE_RANK, then waits for the file $OUTDIR/go (polled).
mn_go_worker() {
    cat >"$1" <<'W'
#!/bin/bash
echo "$RANK $WORLD_SIZE" > "$OUTDIR/start.$PLAUNCH_GENERATION.$PLAUNCH_NODE_RANK"
while [ ! -e "$OUTDIR/go" ]; do sleep 0.05; done
W
    chmod +x "$1"
}
# mn_up NET COUNT PREFIX PORT: COUNT hosts in namespaces PREFIX<pid>1..COUNT on 198.18.NET.0/24 (removed at exit
# with every plaunch started), MASTER on host 1 at PORT, a fresh PLAUNCH_TOKEN. Bails out when they cannot be made.
mn_up() {
    NS="$3$$"; NS=${NS:0:8}; NET=$1
    netns_down "$NS" "$2" >/dev/null 2>&1
    trap "mn_kill_all; netns_down '$NS' $2; _bb_cleanup" EXIT
    netns_up "$NS" "$2" "$NET" || { echo "Bail out! cannot create network namespaces"; exit 1; }
    MASTER="$(netns_addr "$NS" 1):$4"
    export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
}
