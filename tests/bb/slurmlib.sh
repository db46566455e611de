# slurmlib.sh: a real Slurm cluster (slurmctld, N slurmd, one munged) in namespaces, started and removed by a
# black-box test of plaunch under Slurm; sourced after lib.sh (bash, root). Debian packages: slurmctld, slurmd,
# slurm-client, slurm-wlm-basic-plugins (all pulled in by slurm-wlm), munge, iproute2, util-linux.
#
# Layout: a bridge ${SL_ID}br with no host address; the controller in network namespace ${SL_ID}c (host name
# slurmctl, 198.18.NET.254); node K in ${SL_ID}nK (host name nodeK, 198.18.NET.K), each with a UTS namespace of
# its own. Daemons, steps and every slurm command share one private mount namespace in which /etc/slurm and
# /etc/hosts are bind-mounted from $SL_DIR: commands find the config without SLURM_CONF, node names resolve inside
# steps, and the host's /etc is never written. munged runs in the host's namespaces with its own key and socket
# under $SL_DIR. The UTS and mount namespaces are kept by ns files bind-mounted under $SL_DIR/ns, itself a
# private bind mount (unshare refuses ns files on a shared mount, as / is under systemd). Client commands run in
# the controller's namespace: the nodes reach srun there (198.18.NET.254) with no address on the host.
#
# API (a function that cannot do what it says returns non-zero with a message on stderr):
#   slurm_up N [NET]          N nodes (1..250) on 198.18.NET.0/24 (NET 0..255, default 0), every node idle in sinfo
#                             within $SLURM_UP_TIMEOUT s (default 60); on failure the daemons' log tails as TAP
#                             comments. Per node CPUs=$SL_CPUS (4), Gres=gpu:$SL_GPUS (4; fake character devices).
#                             $SL_CONF_EXTRA: lines appended to slurm.conf. Sets SL_N, SL_NET. One cluster per test.
#   slurm_down                kills every process in the cluster's namespaces (daemons, slurmstepd, tasks, srun,
#                             escapees the job left), munged (pid files trusted after /proc/PID/comm), removes
#                             namespaces, mounts, bridge, veths and $SL_DIR. Idempotent; this file installs
#                             trap 'slurm_down; _bb_cleanup' EXIT (a test that sets its own EXIT trap must call it)
#                             and makes HUP/INT/TERM exit, so an interrupted test cleans up too.
#   slurm_cmd CMD...          CMD (srun, sbatch, scancel, squeue, sinfo, scontrol, anything) in the controller's
#                             network + UTS namespaces and the cluster's mount namespace, working directory and
#                             stdin kept; its exit status. A signal to the test is handled at once, even while
#                             srun runs. Bound long sruns with `slurm_cmd timeout S srun ...`.
#   slurm_spawn CMD...        the same in the background; SL_PID is CMD's own pid (nsenter and the subshell exec),
#                             to signal srun itself and `wait` for it. Redirect the call: slurm_spawn srun >out.
#   slurm_node_cmd K CMD...   CMD in node K's network, UTS and mount namespaces, working directory kept.
#   slurm_wait_gone JOB SECS  polls squeue (0.1 s) until JOB is in a final state (COMPLETED, CANCELLED, FAILED...)
#                             or purged; 1 after SECS. Faster than sbatch --wait, which polls every 2 to 10 s.
#   slurm_procs_of REGEX      "nodeK PID CMDLINE" for every process in a node's network namespace whose command
#                             line (arguments joined by spaces) matches the ERE; nothing when none does. So "no
#                             task left on any node" is [ -z "$(slurm_procs_of '^sleep 300$')" ].
#   slurm_node_pids K         every pid in node K's network namespace (as `ip netns pids`).
#   slurm_addr K              198.18.NET.K (slurm_addr 254 is the controller).
#   slurm_logs [LINES]        the last LINES (20) lines of every daemon's log, as TAP comments.
# Names come from the test's pid ($$): netns ${SL_ID}c ${SL_ID}n1.., bridge ${SL_ID}br, host-side veths
# ${SL_ID}v0.. with SL_ID=psl<pid>. slurm_up first removes what a crashed run (SIGKILLed, no trap) left: clusters
# under /tmp/plaunch-bb.*/slurm whose owner (pid + start time in slurm/owner) is gone, and psl<pid> namespaces and
# links whose pid is dead.
# What Slurm 22.05 does (environment, exit codes, signals, scancel, timings), measured here: the end of this file.

case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac # slurmctld, slurmd, munged
SL_ID="psl$$"
SL_DIR="$T/slurm"
SL_N=0
SL_NET=0
SL_PID=
SL_FG_PID=
SL_CPUS=${SL_CPUS:-4}
SL_GPUS=${SL_GPUS:-4}

_sl_err() { echo "# slurmlib: $*" >&2; }
_sl_starttime() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }
# _sl_comm_is PID NAME: PID runs and its command name is NAME (a pid file is trusted only after this)
_sl_comm_is() { [ -n "$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]; }
_sl_netns_of() { ip netns list 2>/dev/null | awk -v id="$1" '$1 ~ "^" id "(c|n[0-9]+)$" { print $1 }'; }
_sl_links_of() {
    ip -o link show 2>/dev/null | awk -F': ' -v id="$1" '{ sub(/@.*/, "", $2) } $2 ~ "^" id "(br|v[0-9]+)$" { print $2 }'
}

# _sl_ns_pids DIR [NETNS...]: pids whose mount namespace is DIR's or whose network namespace is one of NETNS.
_sl_ns_pids() {
    local dir=$1 want="" f
    shift
    for f in "$dir/ns/mnt" "${@/#//run/netns/}"; do
        mountpoint -q "$f" 2>/dev/null && want="$want $(stat -L -c '%d:%i' "$f" 2>/dev/null)"
    done
    [ -n "${want// /}" ] || return 0
    stat -L -c '%d:%i %n' /proc/[0-9]*/ns/mnt /proc/[0-9]*/ns/net 2>/dev/null |
        awk -v want="$want" -v self="$$" 'BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) ok[w[i]] = 1 }
            ok[$1] { split($2, p, "/"); if (p[3] != self && !seen[p[3]]++) print p[3] }'
}

# _sl_kill_ns DIR [NETNS...]: SIGKILL until no process is left in those namespaces (10 s at most; SIGKILL
# cannot be refused, only a process stuck in the kernel outlives it).
_sl_kill_ns() {
    local dir=$1 end=$((EPOCHSECONDS + 10)) pids
    shift
    while pids=$(_sl_ns_pids "$dir" "$@") && [ -n "$pids" ]; do
        [ "$EPOCHSECONDS" -ge "$end" ] && { _sl_err "still alive in the cluster's namespaces: $pids"; return 1; }
        # shellcheck disable=SC2086
        kill -9 $pids 2>/dev/null
        sleep 0.05
    done
}

# _sl_stop_pidfile FILE COMM: SIGTERM the daemon named in FILE if it is COMM, SIGKILL after 5 s.
_sl_stop_pidfile() {
    local pid _
    pid=$(cat "$1" 2>/dev/null) || return 0
    _sl_comm_is "$pid" "$2" || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do alive "$pid" || return 0; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null
    for _ in $(seq 1 100); do alive "$pid" || return 0; sleep 0.05; done
    _sl_err "$2 (pid $pid) does not die"
    return 1
}

# _sl_remove_dir DIR [NETNS...]: removes the cluster rooted at DIR (its processes, munged, mounts, files) and the
# network namespaces NETNS. The daemons go first (by pid file, SIGKILL: nothing of their state is kept), so that
# no new slurmstepd starts while the namespaces are swept.
_sl_remove_dir() {
    local dir=$1 f m rc=0
    shift
    for f in "$dir"/run/slurmctld.pid "$dir"/run/slurmd-*.pid; do
        [ -f "$f" ] || continue
        case $f in *slurmctld.pid) m=slurmctld ;; *) m=slurmd ;; esac
        _sl_comm_is "$(cat "$f")" "$m" && kill -9 "$(cat "$f")" 2>/dev/null
    done
    _sl_kill_ns "$dir" "$@" || rc=1
    _sl_stop_pidfile "$dir/munge/pid" munged || rc=1
    # innermost first: the ns files, then the bind mount that holds them
    for m in $(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || { _sl_err "cannot unmount $m"; rc=1; }
    done
    for f in "$@"; do ip netns del "$f" 2>/dev/null; done
    # (removing ns/ also detaches any copy of its bind mount that propagated into another mount namespace)
    rm -rf "$dir" 2>/dev/null || { _sl_err "cannot remove $dir"; rc=1; }
    return $rc
}

# _sl_reap_stale: what earlier runs that died without their trap (SIGKILL) left.
_sl_reap_stale() {
    local f pid st id l
    for f in "${T%/*}"/plaunch-bb.*/slurm/owner; do
        [ -f "$f" ] && [ "$f" != "$SL_DIR/owner" ] || continue
        read -r pid st <"$f" 2>/dev/null || continue
        [ -n "$pid" ] && [ "$(_sl_starttime "$pid")" = "$st" ] && continue # the owner still runs
        _sl_err "removing the cluster of a dead run (pid $pid): ${f%/owner}"
        # shellcheck disable=SC2046 # one word per namespace
        _sl_remove_dir "${f%/owner}" $(_sl_netns_of "psl$pid")
    done
    for id in $(ip netns list 2>/dev/null | sed -n 's/^\(psl[0-9]*\)\(c\|n[0-9]*\)\( .*\)\{0,1\}$/\1/p' | sort -u); do
        [ "$id" = "$SL_ID" ] || [ -d "/proc/${id#psl}" ] && continue
        for l in $(_sl_netns_of "$id"); do
            for pid in $(ip netns pids "$l" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
            ip netns del "$l" 2>/dev/null
        done
    done
    for l in $(_sl_links_of 'psl[0-9]+'); do
        id=${l%br} && id=${id%v*}
        [ "$id" = "$SL_ID" ] || [ -d "/proc/${id#psl}" ] || ip link del "$l" 2>/dev/null
    done
    return 0
}

slurm_down() {
    local rc=0 l p jobs end=$((EPOCHSECONDS + 5))
    # first what slurm_spawn or an interrupted slurm_cmd left to this shell, reaped quietly (no "Killed" notice);
    # only pids still in the job table: one the test has waited for may be someone else's now
    jobs=" $(jobs -p | tr '\n' ' ') "
    for p in ${SL_FG_PID:-} ${SL_PID:-}; do
        case $jobs in *" $p "*) { kill -9 "$p" && wait "$p"; } 2>/dev/null ;; esac
    done
    SL_FG_PID='' SL_PID=''
    # shellcheck disable=SC2046 # one word per namespace
    _sl_remove_dir "$SL_DIR" $(_sl_netns_of "$SL_ID") || rc=1
    for l in $(_sl_links_of "$SL_ID"); do ip link del "$l" 2>/dev/null; done
    # a namespace's veth goes with the namespace, asynchronously
    while [ -n "$(_sl_links_of "$SL_ID")$(_sl_netns_of "$SL_ID")" ]; do
        [ "$EPOCHSECONDS" -ge "$end" ] && { _sl_err "left behind: $(_sl_links_of "$SL_ID") $(_sl_netns_of "$SL_ID")"; rc=1; break; }
        sleep 0.05
    done
    SL_N=0
    return $rc
}

slurm_addr() { echo "198.18.$SL_NET.$1"; }

# _sl_enter NS UTS CMD...: execs CMD in network namespace NS, the UTS namespace in file ns/UTS and the cluster's
# mount namespace (nsenter execs too, so CMD keeps the caller's pid). Only ever called in a subshell.
_sl_enter() {
    local ns=$1 uts=$2
    shift 2
    exec nsenter --net="/run/netns/$ns" --uts="$SL_DIR/ns/$uts" --mount="$SL_DIR/ns/mnt" --wd="$PWD" -- "$@"
}
# _sl_fg CMD...: CMD in the background and a wait for it: bash runs a trap only after a foreground child ends,
# but interrupts `wait`, so an interrupted test reaches slurm_down at once. Stdin is passed on explicitly (a
# background command would read /dev/null).
_sl_fg() {
    local rc
    "$@" <&0 &
    SL_FG_PID=$!
    wait "$SL_FG_PID"
    rc=$?
    SL_FG_PID=
    return $rc
}
slurm_cmd() { _sl_fg _sl_enter "${SL_ID}c" utsc "$@"; }
slurm_spawn() {
    _sl_enter "${SL_ID}c" utsc "$@" <&0 &
    SL_PID=$!
}
slurm_node_cmd() {
    local k=$1
    shift
    _sl_fg _sl_enter "${SL_ID}n$k" "uts$k" "$@"
}
slurm_node_pids() { ip netns pids "${SL_ID}n$1" 2>/dev/null; }

slurm_wait_gone() {
    local job=$1 end=$((EPOCHSECONDS + $2)) st
    while [ "$EPOCHSECONDS" -lt "$end" ]; do
        if st=$(slurm_cmd timeout 10 squeue -h -t all -j "$job" -o %T 2>&1); then
            case $st in "" | COMPLETED | CANCELLED | FAILED | TIMEOUT | NODE_FAIL | PREEMPTED | BOOT_FAIL | \
                DEADLINE | OUT_OF_MEMORY | SPECIAL_EXIT | REVOKED) return 0 ;; esac
        else
            case $st in *"Invalid job id"*) return 0 ;; esac # purged after MinJobAge
        fi
        sleep 0.1
    done
    return 1
}

slurm_procs_of() {
    local k p args cmd
    for k in $(seq 1 "$SL_N"); do
        for p in $(slurm_node_pids "$k"); do
            mapfile -d '' args 2>/dev/null <"/proc/$p/cmdline" || continue
            cmd="${args[*]}"
            [ -n "$cmd" ] && [[ $cmd =~ $1 ]] && echo "node$k $p $cmd"
        done
    done
    return 0
}

slurm_logs() {
    local f
    for f in "$SL_DIR"/log/*.log "$SL_DIR/log/daemons.out" "$SL_DIR/munge/log"; do
        [ -s "$f" ] || continue
        echo "# ---- ${f#"$SL_DIR"/} (last ${1:-20} lines)"
        tail -n "${1:-20}" "$f" | sed 's/^/#   /'
    done
}

# _sl_detached CMD...: CMD with no descriptor of ours beyond 0-2 (an inherited lock descriptor would be held by a
# daemon) and stdio on a log, so that prove does not wait for a daemon's end of the TAP pipe.
_sl_detached() {
    (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
        done
        exec </dev/null >>"$SL_DIR/log/daemons.out" 2>&1
        "$@"
    )
}

# _sl_write_conf: slurm.conf, gres.conf and hosts for SL_N nodes on 198.18.SL_NET.0/24.
_sl_write_conf() {
    local k c=$SL_DIR/etc/slurm.conf gres=""
    [ "$SL_GPUS" -gt 0 ] && gres=" Gres=gpu:$SL_GPUS"
    # KillWait >= 5: with less, srun can say "Timed out waiting for job step to complete" and exit 0.
    # batch_sched_delay=0: a batch job starts within ~1 s instead of ~3 s.
    cat >"$c" <<EOF
# written by tests/bb/slurmlib.sh for one test run; removed by slurm_down
ClusterName=plaunch
SlurmctldHost=slurmctl($(slurm_addr 254))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SL_DIR/munge/sock
StateSaveLocation=$SL_DIR/state
SlurmdSpoolDir=$SL_DIR/spool/%n
SlurmctldPidFile=$SL_DIR/run/slurmctld.pid
SlurmdPidFile=$SL_DIR/run/slurmd-%n.pid
SlurmctldLogFile=$SL_DIR/log/slurmctld.log
SlurmdLogFile=$SL_DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
KillWait=5
TCPTimeout=2
MinJobAge=300
InactiveLimit=0
SchedulerParameters=batch_sched_delay=0
EOF
    for k in $(seq 1 "$SL_N"); do
        echo "NodeName=node$k NodeAddr=$(slurm_addr "$k") NodeHostname=node$k CPUs=$SL_CPUS CoresPerSocket=$SL_CPUS" \
            "RealMemory=1024$gres" >>"$c"
    done
    echo "PartitionName=main Nodes=node[1-$SL_N] Default=YES MaxTime=INFINITE State=UP" >>"$c"
    [ -z "${SL_CONF_EXTRA:-}" ] || printf '%s\n' "$SL_CONF_EXTRA" >>"$c"
    # File= is required: Count= alone leaves 22.05's nodes INVAL
    echo "AutoDetect=off" >"$SL_DIR/etc/gres.conf"
    [ -z "$gres" ] || echo "NodeName=node[1-$SL_N] Name=gpu File=$SL_DIR/dev/fakegpu[0-$((SL_GPUS - 1))]" \
        >>"$SL_DIR/etc/gres.conf"
    {
        printf '127.0.0.1 localhost\n%s slurmctl\n' "$(slurm_addr 254)"
        for k in $(seq 1 "$SL_N"); do echo "$(slurm_addr "$k") node$k"; done
    } >"$SL_DIR/hosts"
}

# _sl_netns NAME K UTS HOST ADDR: network namespace NAME on the bridge (host-side veth ${SL_ID}vK) with address
# ADDR, and a UTS namespace kept by file ns/UTS whose host name is HOST.
_sl_netns() {
    local name=$1 k=$2 uts=$3 host=$4 addr=$5
    ip netns add "$name" &&
        ip link add "${SL_ID}v$k" type veth peer name eth0 netns "$name" &&
        ip link set "${SL_ID}v$k" master "${SL_ID}br" up &&
        ip -n "$name" addr add "$addr/24" dev eth0 &&
        ip -n "$name" link set eth0 up &&
        ip -n "$name" link set lo up &&
        : >"$SL_DIR/ns/$uts" &&
        unshare --uts="$SL_DIR/ns/$uts" hostname "$host"
}

# _sl_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds; 1 after SECONDS of wall-clock time (a slurm
# command can take a second to start on a loaded 2-core machine, so a count of tries would not bound the time)
_sl_until() {
    local end=$((EPOCHSECONDS + $1))
    shift
    until "$@"; do
        [ "$EPOCHSECONDS" -ge "$end" ] && return 1
        sleep 0.1
    done
}
_sl_munge_ok() { munge -n -S "$SL_DIR/munge/sock" 2>/dev/null | unmunge -S "$SL_DIR/munge/sock" >/dev/null 2>&1; }
_sl_ctl_up() { slurm_cmd timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }
_sl_all_idle() { [ "$(slurm_cmd timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$')" = "$SL_N" ]; }
_sl_fail() {
    _sl_err "slurm_up: $*"
    slurm_logs 15 >&2
    return 1
}

slurm_up() {
    local n=$1 net=${2:-0} k secs=${SLURM_UP_TIMEOUT:-60}
    case $n$net in *[!0-9]*) _sl_err "slurm_up: '$n' nodes, NET '$net': numbers expected"; return 2 ;; esac
    [ "$n" -ge 1 ] && [ "$n" -le 250 ] && [ "$net" -le 255 ] ||
        { _sl_err "slurm_up: need 1..250 nodes and NET 0..255 (got $n, $net)"; return 2; }
    [ "$(id -u)" = 0 ] || { _sl_err "slurm_up: needs root (namespaces, mounts)"; return 1; }
    _sl_reap_stale
    slurm_down >/dev/null 2>&1
    SL_N=$n SL_NET=$net
    mkdir -p "$SL_DIR"/{etc,ns,state,run,log,dev,munge} && chmod 700 "$SL_DIR/munge" || return 1
    for k in $(seq 1 "$n"); do mkdir -p "$SL_DIR/spool/node$k" || return 1; done
    echo "$$ $(_sl_starttime $$)" >"$SL_DIR/owner"
    for k in $(seq 0 $((SL_GPUS - 1))); do mknod "$SL_DIR/dev/fakegpu$k" c 1 3 || return 1; done
    _sl_write_conf || return 1

    # munged: its own key and socket (--force: $T is 0700, which munged calls inaccessible to other users);
    # ready when a credential round-trips
    mungekey -c -k "$SL_DIR/munge/key" -b 1024 >/dev/null 2>&1 || _sl_fail "mungekey failed" || return 1
    _sl_detached munged --force --socket="$SL_DIR/munge/sock" --key-file="$SL_DIR/munge/key" \
        --pid-file="$SL_DIR/munge/pid" --log-file="$SL_DIR/munge/log" --seed-file="$SL_DIR/munge/seed" ||
        _sl_fail "munged did not start" || return 1
    _sl_until "$secs" _sl_munge_ok || _sl_fail "munged does not answer on $SL_DIR/munge/sock" || return 1

    # namespaces: the private holder of the ns files, the mount namespace, the network and the host names
    mount --bind "$SL_DIR/ns" "$SL_DIR/ns" && mount --make-private "$SL_DIR/ns" ||
        _sl_fail "cannot bind-mount $SL_DIR/ns" || return 1
    : >"$SL_DIR/ns/mnt"
    unshare --mount="$SL_DIR/ns/mnt" --propagation private sh -c \
        "mount --bind '$SL_DIR/etc' /etc/slurm && mount --bind '$SL_DIR/hosts' /etc/hosts" ||
        _sl_fail "cannot make the mount namespace (/etc/slurm, /etc/hosts)" || return 1
    ip link add "${SL_ID}br" type bridge && ip link set "${SL_ID}br" up ||
        _sl_fail "cannot add bridge ${SL_ID}br" || return 1
    _sl_netns "${SL_ID}c" 0 utsc slurmctl "$(slurm_addr 254)" ||
        _sl_fail "cannot make the controller's namespaces" || return 1
    for k in $(seq 1 "$n"); do
        _sl_netns "${SL_ID}n$k" "$k" "uts$k" "node$k" "$(slurm_addr "$k")" ||
            _sl_fail "cannot make node$k's namespaces" || return 1
    done

    # slurmctld first (cold start, fresh state dir): a slurmd registers at once when the controller answers
    _sl_detached _sl_enter "${SL_ID}c" utsc slurmctld -c -i || _sl_fail "slurmctld did not start" || return 1
    _sl_until "$secs" _sl_ctl_up || _sl_fail "slurmctld does not answer scontrol ping within ${secs}s" || return 1
    for k in $(seq 1 "$n"); do
        _sl_detached _sl_enter "${SL_ID}n$k" "uts$k" slurmd -N "node$k" ||
            _sl_fail "slurmd on node$k did not start" || return 1
    done
    _sl_until "$secs" _sl_all_idle ||
        _sl_fail "not all $n nodes idle within ${secs}s: $(slurm_cmd timeout 5 sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' ')" ||
        return 1
}

trap 'slurm_down; _bb_cleanup' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- Slurm 22.05.8 as measured in this cluster (3 nodes, CPUs=4, gpu:4, select/cons_tres CR_Core,
# ---- proctrack/linuxproc, task/none, KillWait=5), December 2026
#
# What a step sees. `srun -N3 -n6` (no --ntasks-per-node) packs the first node: tasks 0-3 on node1, 4 on node2,
# 5 on node3. Every task: SLURM_TASKS_PER_NODE = SLURM_STEP_TASKS_PER_NODE = SLURM_JOB_CPUS_PER_NODE = 4,1(x2);
# SLURM_NTASKS_PER_NODE unset; SLURM_NTASKS = SLURM_NPROCS = SLURM_STEP_NUM_TASKS = 6; SLURM_NNODES =
# SLURM_JOB_NUM_NODES = SLURM_STEP_NUM_NODES = 3; SLURM_JOB_NODELIST = SLURM_NODELIST = SLURM_STEP_NODELIST =
# node[1-3]; SLURM_PROCID 0..5; SLURM_LOCALID 0..3 on node1, 0 elsewhere; SLURM_NODEID 0,0,0,0,1,2;
# SLURMD_NODENAME / SLURM_TOPOLOGY_ADDR node1..3; SLURM_GTIDS (global ids on this node) 0,1,2,3 | 4 | 5;
# SLURM_CPUS_ON_NODE 4 | 1 | 1; SLURM_JOB_ID = SLURM_JOBID; SLURM_STEP_ID = SLURM_STEPID = 0;
# SLURM_SRUN_COMM_HOST = SLURM_LAUNCH_NODE_IPADDR = 198.18.NET.254 (where srun runs); SLURM_SRUN_COMM_PORT =
# SLURM_STEP_LAUNCHER_PORT; SLURM_TASK_PID; SLURM_SUBMIT_HOST=slurmctl; SLURM_SUBMIT_DIR; SLURM_CLUSTER_NAME;
# SLURM_CONF=/etc/slurm/slurm.conf; SLURM_JOB_NAME/PARTITION/UID/GID/USER; SLURM_UMASK; SLURM_PRIO_PROCESS;
# SLURM_TOPOLOGY_ADDR_PATTERN=node; SLURM_WORKING_CLUSTER=plaunch:198.18.NET.254:6817:9728:109.
# -m cyclic spreads the ranks (0,1,2 on node1..3, then 3,4,5 on node1) with the same 4,1(x2) counts; -N2 -n8 gives
# 4(x2); -N2 -n3 gives 2,1. --ntasks-per-node=K is the only way to an even split: -N3 --ntasks-per-node=2 gives
# SLURM_TASKS_PER_NODE = SLURM_STEP_TASKS_PER_NODE = SLURM_JOB_CPUS_PER_NODE = 2(x3), SLURM_NTASKS_PER_NODE=2
# (set only when --ntasks-per-node is given), SLURM_CPUS_ON_NODE=2, ranks in blocks (0,1 node1; 2,3 node2 ...).
# GPUs: --gpus-per-node=2 gives CUDA_VISIBLE_DEVICES = SLURM_STEP_GPUS = GPU_DEVICE_ORDINAL = ROCR_VISIBLE_DEVICES =
# ZE_AFFINITY_MASK = 0,1 and SLURM_GPUS_ON_NODE=2 to every task of the node (not SLURM_JOB_GPUS, not
# SLURM_GPUS_PER_NODE); --gpus-per-task=1 -n2 gives each task its own (CUDA_VISIBLE_DEVICES 0 and 1,
# SLURM_STEP_GPUS likewise) with SLURM_GPUS_ON_NODE=2.
#
# What a batch script sees (sbatch -N3 --ntasks-per-node=2 --gpus-per-node=2; it runs on the first node): the job
# variables (SLURM_JOB_ID, SLURM_JOB_NODELIST=node[1-3], SLURM_NNODES=3, SLURM_NTASKS=6, SLURM_NTASKS_PER_NODE=2,
# SLURM_TASKS_PER_NODE=2(x3), SLURM_JOB_CPUS_PER_NODE=2(x3), SLURM_CPUS_ON_NODE=2), SLURM_PROCID=0,
# SLURM_LOCALID=0, SLURM_NODEID=0, SLURM_GTIDS=0, SLURMD_NODENAME=node1, SLURM_JOB_GPUS=0,1,
# CUDA_VISIBLE_DEVICES=0,1, SLURM_GPUS_PER_NODE=2, SLURM_GPUS_ON_NODE=2, SLURM_NODE_ALIASES=(null), and no
# SLURM_STEP_ID / SLURM_STEPID / SLURM_STEP_* / SLURM_SRUN_COMM_HOST: SLURM_STEP_ID tells a step from the batch
# shell. An srun inside inherits the job's shape from the environment: plain `srun` runs SLURM_NTASKS tasks
# (6, as 2(x3)); `srun --ntasks-per-node=1` is ignored with a warning because SLURM_NTASKS=6 is inherited (use
# `srun -n3` or `-N3 -n3`); a step inside a batch keeps SLURM_JOB_GPUS and adds SLURM_STEP_GPUS. Without -n in
# sbatch (sbatch -N2), there is no SLURM_NTASKS and srun runs one task per node.
#
# srun's exit status: the highest exit code of its tasks (codes 0,1,2 -> 2; 3 and 7 -> 7; 255 -> 255), but a task
# killed by a signal wins over any exit code: 128+signal (SEGV next to exit 200 -> 139; SIGKILL -> 137; SIGTERM ->
# 143). A task killed by SIGKILL or SIGTERM makes srun print "Force Terminated StepId=J.0" (not by SIGSEGV), yet
# the other tasks run on to their end either way. Program not found: 2 (slurmstepd: execve(): No such file or directory); not executable: 8 (ENOEXEC).
# --kill-on-bad-exit=1 (-K): the first task to exit non-zero or by a signal (exit 0 does not count) makes Slurm
# send SIGCONT+SIGTERM to the other tasks within 20-70 ms and SIGKILL ~5 s (KillWait) later; srun's status
# follows the rule above: 3 when the others then exit 0, 143 when they exit 143 on the TERM, 137 when they
# ignore it and are SIGKILLed. Without -K the others run to their end, whatever the first one did.
# Signals to srun (interactive): SIGTERM or SIGHUP -> "forcing job termination": every task SIGKILLed at once
# (no SIGTERM first), srun exits 137 within ~0.1 s. One SIGINT: a status line only ("interrupt (one more within 1
# sec to abort)"), the job runs on. Two SIGINTs within 1 s: SIGINT to every task, then they are killed, srun
# 137. SIGUSR1 to srun is forwarded to every task as SIGUSR1; the job runs on and srun exits 0.
#
# scancel (every delivery below took 10-40 ms):
# - `scancel JOB` of an srun job: SIGCONT then SIGTERM to every task; tasks that stay get SIGKILL 4.7-5.0 s after
#   the TERM (KillWait=5). srun: "Job step aborted: Waiting up to 7 seconds", exits 143 when the tasks exited 143
#   on TERM, 137 when they were killed.
# - `scancel JOB` of a batch job: SIGCONT+SIGTERM at the same moment to the batch script, its other children
#   and every task of its steps (the srun inside prints "got SIGCONT", "forcing job termination"); all still
#   there are SIGKILLed at KillWait. Job: CANCELLED, ExitCode 0:9 when the batch script was killed, 143:0 when
#   it exited 143.
# - `scancel --signal=USR1 JOB`: only the steps' tasks (not the batch script or its other children); the job
#   runs on. With --batch: only the batch script's own process (not its children). With --full: the batch script,
#   its children and the steps' tasks. `scancel --signal=TERM --full JOB`: the batch script and its children get
#   TERM, the srun inside gets it too and SIGKILLs its tasks (they see no TERM; srun returns 137); the batch
#   script that ignores TERM runs on and the job ends COMPLETED.
# - `scancel JOB.0`: the step's tasks are SIGKILLed at once (no TERM); the srun inside a batch returns 137 and
#   the batch script runs on (job COMPLETED 0:0).
# - Escapees: a process the batch script leaves running when it exits (exit 0 with a background child) or a
#   double-forked (setsid) one from a step survives the job's end (proctrack/linuxproc); the job is COMPLETED at
#   once. Slurm does not catch them here; the launcher must (slurm_down kills them).
# sbatch --wait: returns the batch script's exit code (exit 3 -> 3, JobState FAILED ExitCode 3:0); a step's task
# killed by a signal does not change it if the script exits 0. It polls every 2 s, then 10 s: 2-10 s for a job
# of 0 s; sbatch --parsable + slurm_wait_gone: ~1 s (3 s without batch_sched_delay=0; the first batch job after
# slurm_up can still take 3 s).
# Timings on this 2-core machine: slurm_up of 3 nodes 0.35-0.85 s, up to 1.6 s while a compile or other tests
# load it; slurm_down 0.15-0.65 s, up to 1.15 s loaded; `srun -N3 hostname` 40-100 ms; `srun -N3 -n6` of a shell
# script ~0.2 s; slurm_cluster.t 8-15 s in all (5 of them the KillWait of its scancel test).
