#!/bin/bash
# gloo.t: a real torch gloo job across two namespace hosts whose host name resolves to a loopback address (as
# Debian's installer writes /etc/hosts): without GLOO_SOCKET_IFNAME gloo binds loopback and the ranks of the two
# hosts cannot reach each other; plaunch gives every worker the interface that routes to MASTER_ADDR, and the
# all_reduce works. Each host has its own mount namespace with a private /etc/hosts from $T.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP network namespaces need root"; exit 0; }
PY=/usr/bin/python3
$PY -c 'import torch.distributed' 2>/dev/null || { echo "1..0 # SKIP no torch for $PY (python3-torch)"; exit 0; }
plan 7

NS="pg$$"; NS=${NS:0:8}; NET=23; PORT=29431
netns_down "$NS" 2 >/dev/null 2>&1
trap 'netns_down "$NS" 2; _bb_cleanup' EXIT
netns_up "$NS" 2 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
# This host's name resolves to 127.0.1.1 on both hosts, as on a stock Debian or Ubuntu machine.
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$(hostname)" >"$T/hosts"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') OUTDIR=$T
cat >ar.py <<'W'
import datetime, os, sys, torch, torch.distributed as dist
if os.environ.get("DROP_IFNAME"):
    os.environ.pop("GLOO_SOCKET_IFNAME", None)
with open(os.path.join(os.environ["OUTDIR"], "env.%s" % os.environ["RANK"]), "w") as f:
    f.write("".join("%s=%s\n" % kv for kv in os.environ.items()))
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "60"))))
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("sum", int(t.item()))
dist.destroy_process_group()
W
# host I ARGS...: plaunch on namespace host I, in a mount namespace of its own that sees $T/hosts as /etc/hosts.
host() {
    local i=$1; shift
    ip netns exec "$NS$i" unshare --mount --propagation private sh -c \
        'mount --bind "$0" /etc/hosts && exec "$@"' "$T/hosts" \
        "$PLAUNCH" --nnodes 2 --node-rank $((i - 1)) --master "$(netns_addr "$NS" 1):$PORT" --nproc-per-node 2 \
        --tee all --log-dir "$T/log$i" "$@" >"$T/out$i" 2>"$T/err$i" &
    echo $! >"$T/pid.$i"
}
# wait_host I SECONDS: sets $wrc (124 when still running)
wait_host() {
    local pid n=0
    pid=$(cat "$T/pid.$1")
    while kill -0 "$pid" 2>/dev/null && [ $n -lt $(($2 * 10)) ]; do sleep 0.1; n=$((n + 1)); done
    if kill -0 "$pid" 2>/dev/null; then kill_reap "$pid"; wrc=124; else wait "$pid"; wrc=$?; fi
}

ip netns exec "${NS}1" unshare --mount sh -c 'mount --bind "$0" /etc/hosts && getent hosts "$(hostname)"' "$T/hosts" |
    grep -q '^127\.0\.1\.1 '
ok $? "inside a host, its name resolves to 127.0.1.1"

host 1 $PY ar.py; host 2 $PY ar.py
wait_host 1 120; rc1=$wrc; wait_host 2 120; rc2=$wrc
is "$rc1 $rc2" "0 0" "a gloo all_reduce across the two hosts: both nodes exit 0"
is "$(cat out1 out2 | grep -c 'sum 10$')" 4 "every rank of both hosts got 1+2+3+4 = 10"
is "$(sed -n 's/^GLOO_SOCKET_IFNAME=//p' env.0 env.3 | sort -u)" "eth0" \
    "GLOO_SOCKET_IFNAME names the interface that routes to MASTER_ADDR, on node 0 and node 1"
is "$(sed -n 's/^NCCL_SOCKET_IFNAME=//p' env.2 | sort -u)" "=eth0" "NCCL_SOCKET_IFNAME names it exactly"

# The same job where each worker drops the variable: gloo binds 127.0.1.1 and the hosts cannot meet.
rm -f env.*
DROP_IFNAME=1 PG_TIMEOUT=8 host 1 $PY ar.py; DROP_IFNAME=1 PG_TIMEOUT=8 host 2 $PY ar.py
wait_host 1 120; rc1=$wrc; wait_host 2 120; rc2=$wrc
ok $([ "$rc1" != 0 ] && [ "$rc2" != 0 ] && [ "$rc1" != 124 ]; echo $?) \
    "without GLOO_SOCKET_IFNAME the same job fails on both hosts (exit $rc1 $rc2): what plaunch's default prevents"

# A value the user chose is kept.
rm -f env.*
GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth host 1 $PY ar.py; GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth host 2 $PY ar.py
wait_host 1 120; wait_host 2 120
is "$(sed -n 's/^NCCL_SOCKET_IFNAME=//p' env.* | sort -u)" "eth" "a user's NCCL_SOCKET_IFNAME is kept"
done_testing
