#!/bin/bash
# k8s.t: the manifests of docs/k8s/ run for real, one "pod" per index, each with its own namespaces: network (an
# address on one bridge, a default route), UTS (the pod's host name), mount (a private /etc/hosts and
# /etc/resolv.conf bind-mounted from files in $T, as the kubelet writes them) and PID (plaunch is the container's
# PID 1); the container's command and environment are what the controller and the kubelet would give that pod
# (tests/bb/k8s_pod.py reads the manifest). Index 0's DNS name appears late: the other pods must wait for it, then
# all form one world; with 4 pods and --relay-fanout 2, indexes 2 and 3 join index 1's relay by the name each
# derives from its own (the ranked join). Also: the Secret's placeholder and a missing token (exit 2),
# --print-config in a pod (the node hosts derived, or why not), SIGTERM to every pod as the kubelet sends it.
#
# Replaced, because it cannot run here: the image's program (an environment printer or a sleeper after the
# manifest's `--`), `--gpus all` (no GPUs: `--nproc-per-node 2`), volume paths (Secret, ConfigMap and claim
# volumes become folders in $T, laid out as the kubelet does), the cluster DNS (entries appended to the pods'
# /etc/hosts; the pods' resolver asks 127.0.0.1, where nothing answers), the Secret's placeholder (a test token).
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network, UTS, mount and PID namespaces need root"; exit 0; fi
PY=""
for p in /usr/bin/python3 python3; do "$p" -c 'import yaml' 2>/dev/null && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "1..0 # SKIP no python3 with PyYAML (Debian: python3-yaml)"; exit 0; }
plan 59

NS="pk$$"; NS=${NS:0:8}; NET=19; PODS=4 # 3 but in the ranked join
K8S=$PLAUNCH_SRC/docs/k8s
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p pods bin
# The pods' namespaces are kept as bind mounts of their nsfs files; those must sit on a private mount.
mount --bind "$T/pods" "$T/pods" && mount --make-private "$T/pods" || { echo "Bail out! cannot mount in $T"; exit 1; }

pod_ip() { netns_addr "$NS" $(($1 + 1)); }
# pod_procs I: processes in pod I's network, UTS or mount namespace.
pod_procs() {
    local i=$1 uts mnt p n
    n=$(ip netns pids "$NS$((i + 1))" 2>/dev/null | wc -l)
    [ -e "$T/pods/uts.$i" ] && mountpoint -q "$T/pods/uts.$i" || { echo "$n"; return; }
    uts="uts:[$(stat -L -c %i "$T/pods/uts.$i")]" mnt="mnt:[$(stat -L -c %i "$T/pods/mnt.$i")]"
    for p in /proc/[0-9]*; do
        case "$(readlink "$p/ns/uts" 2>/dev/null) $(readlink "$p/ns/mnt" 2>/dev/null)" in
            "$uts "* | *" $mnt") n=$((n + 1)) ;;
        esac
    done
    echo "$n"
}
all_pods_empty() { local i; for i in $(seq 0 $((PODS - 1))); do [ "$(pod_procs $i)" = 0 ] || return 1; done; }
# pod_down I: ends what still runs in pod I and drops its namespaces.
pod_down() {
    local i=$1 p
    for p in $(ip netns pids "$NS$((i + 1))" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for p in uts mnt; do mountpoint -q "$T/pods/$p.$i" 2>/dev/null && umount "$T/pods/$p.$i"; done
    rm -f "$T/pods/uts.$i" "$T/pods/mnt.$i"
}
k8s_cleanup() {
    local i
    for i in $(seq 0 $((PODS - 1))); do pod_down "$i"; done
    mountpoint -q "$T/pods" && umount "$T/pods"
    netns_down "$NS" $PODS
    _bb_cleanup
}
netns_down "$NS" $PODS >/dev/null 2>&1
trap k8s_cleanup EXIT
netns_up "$NS" $PODS $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
for i in $(seq 1 $PODS); do ip -n "$NS$i" route add default dev eth0; done # pods have a default route

# pod_up DIR I MANIFEST [k8s_pod.py options]: pod I of MANIFEST: DIR/pod.I.sh holds what k8s_pod.py printed
# (POD_CMD, POD_ENV, POD_HOSTNAME, ...); its namespaces hold the host name and the kubelet's files.
pod_up() {
    local dir=$1 i=$2 m=$3
    shift 3
    pod_down "$i"
    mkdir -p "$dir/root.$i" "$dir/shared"
    "$PY" "$PLAUNCH_SRC/tests/bb/k8s_pod.py" "$m" "$i" --root "$dir/root.$i" --shared "$dir/shared" \
        --pod-ip "$(pod_ip "$i")" "$@" >"$dir/pod.$i.sh" || return 1
    . "$dir/pod.$i.sh"
    printf '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n' \
        "$(pod_ip "$i")" "$POD_HOSTS_SELF" >"$T/pods/hosts.$i"
    printf 'search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 127.0.0.1\noptions ndots:5\n' \
        >"$T/pods/resolv.$i"
    : >"$T/pods/uts.$i"
    : >"$T/pods/mnt.$i"
    nsenter --net="/run/netns/$NS$((i + 1))" unshare --uts="$T/pods/uts.$i" --mount="$T/pods/mnt.$i" \
        --propagation private sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && mount --bind "$3" /etc/resolv.conf' \
        sh "$POD_HOSTNAME" "$T/pods/hosts.$i" "$T/pods/resolv.$i"
}
# publish DIR I: the cluster DNS now answers pod I's names (in every pod but I, whose own /etc/hosts has it).
publish() {
    local dir=$1 i=$2 k
    . "$dir/pod.$i.sh"
    for k in $(seq 0 $((PODS - 1))); do
        [ "$k" = "$i" ] || printf '%s\t%s\n' "$(pod_ip "$i")" "${POD_DNS[*]}" >>"$T/pods/hosts.$k"
    done
}
# pod_argv PROGRAM...: ARGV = POD_CMD with the test's replacements; 1 when the manifest's command is not
# `plaunch ... --gpus all ... -- PROGRAM`.
pod_argv() {
    local k gpus=0
    ARGV=()
    [ "${POD_CMD[0]}" = plaunch ] || return 1
    ARGV=("$PLAUNCH")
    for ((k = 1; k < ${#POD_CMD[@]}; k++)); do
        case "${POD_CMD[k]}" in
            --gpus) [ "${POD_CMD[k + 1]}" = all ] || return 1; ARGV+=(--nproc-per-node 2); k=$((k + 1)); gpus=1 ;;
            --) [ $gpus = 1 ] && [ $((k + 1)) -lt ${#POD_CMD[@]} ] || return 1; ARGV+=(-- "$@"); return 0 ;;
            *) ARGV+=("${POD_CMD[k]}") ;;
        esac
    done
    return 1
}
# pod_run DIR I [NAME=VALUE | -u NAME]... -- PROGRAM...: starts pod I's container in the background, its plaunch
# PID 1 of a PID namespace of its own as in a pod, with the environment changed as env(1) would and POD_EXTRA's
# options first (the pid of the unshare that waits for it in DIR/pid.I, output in DIR/out.I, DIR/err.I).
POD_EXTRA=()
pod_run() {
    local dir=$1 i=$2 envx=()
    shift 2
    while [ "$1" != -- ]; do envx+=("$1"); shift; done
    shift
    . "$dir/pod.$i.sh"
    pod_argv "$@" || { echo "# pod $i: the command is not 'plaunch ... --gpus all ... -- PROGRAM'"; return 1; }
    ARGV=("${ARGV[0]}" "${POD_EXTRA[@]}" "${ARGV[@]:1}")
    nsenter --net="/run/netns/$NS$((i + 1))" --uts="$T/pods/uts.$i" --mount="$T/pods/mnt.$i" --wd="$T" \
        unshare --pid --fork --kill-child --mount-proc \
        env -i "${POD_ENV[@]}" HOME="$T/home" env "${envx[@]}" "${ARGV[@]}" >"$dir/out.$i" 2>"$dir/err.$i" &
    echo $! >"$dir/pid.$i"
}
# pod_init DIR I: the host's pid of pod I's PID 1 (its plaunch), once unshare has started it.
pod_init() {
    local u n=0 c
    u=$(cat "$1/pid.$2")
    while c=$(cat "/proc/$u/task/$u/children" 2>/dev/null) && [ -z "$c" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
    echo $c
}
# pod_wait DIR I SECONDS: sets $wrc to pod I's exit code (124 when it still runs after SECONDS).
pod_wait() {
    local pid n=0
    pid=$(cat "$1/pid.$2")
    while kill -0 "$pid" 2>/dev/null && [ $n -lt $(($3 * 10)) ]; do sleep 0.1; n=$((n + 1)); done
    if kill -0 "$pid" 2>/dev/null; then wrc=124; else wait "$pid"; wrc=$?; fi
}
val() { sed -n "s/^$1=//p" "$2"; }
# secs LOGLINE: the Unix time of a plaunch.log line (2026-01-01T00:00:00.000Z ...).
secs() { date -d "$(printf '%s' "$1" | cut -d' ' -f1)" +%s.%N; }
mkdir -p home

cat >bin/envw <<'W'
#!/bin/sh
# the image's program, replaced: records the environment plaunch gave this rank
env > "$1/env.$RANK.tmp" && mv "$1/env.$RANK.tmp" "$1/env.$RANK"
W
cat >bin/sleeper <<'W'
#!/bin/sh
# a long training step; local rank 1 ignores SIGTERM (plaunch must SIGKILL it after --grace)
echo $$ > "$1/wpid.$RANK"
[ "$LOCAL_RANK" = 1 ] && trap '' TERM
exec sleep 300
W
chmod +x bin/envw bin/sleeper

# ---- each manifest: the pods wait for index 0's name, then form one world ---------------------------------
# world NAME MANIFEST DELAY SECRET: runs pods 0..2; index 0's DNS name appears DELAY s after they started.
world() {
    local name=$1 m=$2 delay=$3 secret=$4 d="$T/$1" i r bad="" waited="" host0 rcs="" tpub
    mkdir -p "$d"
    for i in 0 1 2; do pod_up "$d" $i "$m" --secret "$secret=$TOKEN" || return 1; done
    . "$d/pod.0.sh"; host0=$POD_HOSTNAME
    for i in 2 1 0; do pod_run "$d" $i -- "$T/bin/envw" "$d"; done
    sleep "$delay" # not a synchronisation: the cluster DNS is this late
    tpub=$(date +%s.%N)
    publish "$d" 0
    for i in 0 1 2; do pod_wait "$d" $i 60; rcs="$rcs $wrc"; done
    is "${rcs# }" "0 0 0" "$name: the three pods exit 0"

    # Pods 1 and 2 started before the name existed and joined only after it appeared (plaunch.log's clock).
    . "$d/pod.0.sh"
    local master_host=${POD_DNS[0]} logdir good=1 first join
    logdir=$(dirname "$(find "$d/shared" -name "plaunch.$host0.log" | head -1)")
    for i in 1 2; do
        . "$d/pod.$i.sh"
        first=$(head -1 "$logdir/plaunch.$POD_HOSTNAME.log")
        join=$(grep -m1 "joining the coordinator at $(pod_ip 0):" "$logdir/plaunch.$POD_HOSTNAME.log")
        if [ -n "$first" ] && [ -n "$join" ]; then
            waited="$waited $(printf '%.1f' "$(echo "$(secs "$join") - $(secs "$first")" | bc)")"
            [ "$(echo "$(secs "$first") < $tpub && $(secs "$join") >= $tpub - 0.01" | bc)" = 1 ] || good=0
        else
            waited="$waited ?" good=0
        fi
        # past 5 s, a line every 5 s says what the pod waits for
        [ "$delay" -lt 6 ] || grep -q "waiting for the coordinator's name '$master_host' to resolve" "$d/err.$i" || good=0
    done
    ok $((1 - good)) "$name: pods 1 and 2 waited for index 0's name (${delay} s late) and joined once it resolved (after${waited} s)"
    like "$(cat "$logdir/plaunch.$host0.log")" "hosting the coordinator on port [0-9]+ \(Kubernetes pod $host0" \
        "$name: index 0 hosts the coordinator without waiting for its own name"

    is "$(cat "$d"/env.* 2>/dev/null | sed -n 's/^RANK=//p' | sort -n | tr '\n' ' ')" "0 1 2 3 4 5 " \
        "$name: one world of 6 ranks (2 per pod)"
    for r in 0 1 2 3 4 5; do
        . "$d/pod.$((r / 2)).sh"
        for kv in WORLD_SIZE=6 GROUP_WORLD_SIZE=3 "GROUP_RANK=$((r / 2))" "LOCAL_RANK=$((r % 2))" \
            "MASTER_ADDR=$(pod_ip 0)" "HOSTNAME=$POD_HOSTNAME" GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME==eth0; do
            grep -qx -- "$kv" "$d/env.$r" 2>/dev/null || bad="$bad rank$r:$kv"
        done
    done
    is "$bad" "" "$name: ranks contiguous in index order, WORLD_SIZE 6, MASTER_ADDR index 0's address, eth0 for gloo/NCCL"
    for k in PLAUNCH_JOB_ID MASTER_PORT; do
        is "$(for r in 0 1 2 3 4 5; do val $k "$d/env.$r"; done | sort -u | wc -l)" 1 "$name: one $k on every rank"
    done
    local files=""
    for i in 0 1 2; do . "$d/pod.$i.sh"; [ -s "$logdir/plaunch.$POD_HOSTNAME.log" ] || files="$files plaunch.$POD_HOSTNAME.log"; done
    for r in 0 1 2 3 4 5; do [ -e "$logdir/workerlog.$r" ] || files="$files workerlog.$r"; done
    is "$files" "" "$name: the shared log volume holds plaunch.<host name>.log of every pod and workerlog.<rank>"
    until_ok 20 all_pods_empty
    ok $? "$name: nothing is left running in any pod"

    # What the manifest tells the controller about plaunch's exit codes, and the Secret as shipped.
    . "$d/pod.0.sh"
    case $POD_KIND in
        PyTorchJob) is "$POD_RESTART_POLICY" ExitCode "$name: restartPolicy ExitCode: exit codes 1-127 (2, 125) are not retried" ;;
        *) is "$POD_FAIL_ON_EXIT/$POD_RESTART_POLICY" 2/Never "$name: podFailurePolicy fails the Job on exit code 2 (restartPolicy Never)" ;;
    esac
    pod_up "$d/placeholder" 1 "$m" && pod_run "$d/placeholder" 1 -- "$T/bin/envw" "$d"
    pod_wait "$d/placeholder" 1 20
    is "$wrc $(grep -c 'token' "$d/placeholder/err.1")" "2 1" \
        "$name: applied with the Secret's placeholder, a pod exits 2 at once, the message naming the token"
}
world indexed-job "$K8S/indexed-job.yaml" 3 plaunch-demo-token/token
world jobset "$K8S/jobset.yaml" 6 plaunch-js-token/token
world pytorchjob "$K8S/pytorchjob.yaml" 3 plaunch-pt-token/token

# ---- index 0's name first points at an address nobody holds (a pod since replaced), then at index 0 ----------------
d="$T/moved"
mkdir -p "$d"
for i in 0 1 2; do pod_up "$d" $i "$K8S/indexed-job.yaml" --secret "plaunch-demo-token/token=$TOKEN" || break; done
. "$d/pod.0.sh"
stale=$(netns_addr "$NS" 250)
for k in 1 2; do printf '%s\t%s\n' "$stale" "${POD_DNS[*]}" >>"$T/pods/hosts.$k"; done
for i in 2 1 0; do pod_run "$d" $i -- "$T/bin/envw" "$d"; done
until_ok 30 grep -q "waiting for the coordinator at tcp://$stale:" "$d/err.1"
ok $? "moved: index 1 tries the address the name had ($stale) and says it waits"
for k in 1 2; do # rewritten in place: the file is bind-mounted into the pod
    { grep -v "^$stale" "$T/pods/hosts.$k"; printf '%s\t%s\n' "$(pod_ip 0)" "${POD_DNS[*]}"; } >"$T/pods/hosts.$k.new"
    cat "$T/pods/hosts.$k.new" >"$T/pods/hosts.$k"
done
rcs=""
for i in 0 1 2; do pod_wait "$d" $i 60; rcs="$rcs $wrc"; done
is "${rcs# }" "0 0 0" "moved: once the name resolves to index 0, every pod joins and the job exits 0"
like "$(cat "$d/err.1")" "now resolves to $(pod_ip 0) \(was $stale\): connecting there" \
    "moved: the pod says it follows the name to its new address"
until_ok 20 all_pods_empty

# ---- the ranked join: 4 pods and --relay-fanout 2 make index 1 a relay; indexes 2 and 3 go straight to it by the
# name each derives from its own (the manifest with 4 completions and --nnodes 4)
d="$T/ranked"
mkdir -p "$d"
sed -e 's/^\(  *\)completions: 3 /\1completions: 4 /' -e 's/^\(  *\)parallelism: 3 /\1parallelism: 4 /' \
    -e 's/^\(  *\)- "3"$/\1- "4"/' "$K8S/indexed-job.yaml" >"$d/job4.yaml"
POD_EXTRA=(--relay-fanout 2)
for i in 0 1 2 3; do pod_up "$d" $i "$d/job4.yaml" --secret "plaunch-demo-token/token=$TOKEN" || break; done
for i in 0 1 2 3; do publish "$d" $i; done # every pod's name resolves (the headless Service's records)
for i in 3 2 1 0; do pod_run "$d" $i -- "$T/bin/envw" "$d"; done
POD_EXTRA=()
rcs=""
for i in 0 1 2 3; do pod_wait "$d" $i 60; rcs="$rcs $wrc"; done
is "${rcs# }" "0 0 0 0" "ranked join: four pods with --relay-fanout 2 form one job and exit 0"
logdir=$(dirname "$(find "$d/shared" -name "plaunch.plaunch-demo-0.log" | head -1)")
ok $(for i in 2 3; do grep -q "node rank $i joins through its relay, rank 1, at tcp://plaunch-demo-1\.plaunch-demo:6171" \
    "$logdir/plaunch.plaunch-demo-$i.log" || echo 1; done | grep -c 1) \
    "ranked join: indexes 2 and 3 join their relay, index 1, at the name derived from their own"
like "$(cat "$logdir/plaunch.plaunch-demo-0.log")" \
    "census of generation 0: 1 session here \\(1 relay, 0 other nodes\\), 2 nodes behind relays, 0 fell back from their relay, 0 REDIRECTs sent" \
    "ranked join: the coordinator holds only the relay's session; no REDIRECT"
until_ok 20 all_pods_empty
ok $? "ranked join: nothing is left running in any pod"

# ---- credentials are required up front, on index 0 too ------------------------------------------------------
d=$T/notoken
mkdir -p "$d"
for i in 0 1; do pod_up "$d" $i "$K8S/indexed-job.yaml" --secret "plaunch-demo-token/token=$TOKEN" &&
    pod_run "$d" $i -u PLAUNCH_TOKEN -- "$T/bin/envw" "$d"; done
rcs=""
for i in 0 1; do pod_wait "$d" $i 20; rcs="$rcs $wrc"; done
is "${rcs# }" "2 2" "without PLAUNCH_TOKEN index 0 and index 1 exit 2 at once"
msg=$(cat "$d/err.0" "$d/err.1")
ok $([ "$(printf '%s\n' "$msg" | grep -c 'PLAUNCH_TOKEN.*--token-file')" = 2 ]; echo $?) \
    "... each with a message naming PLAUNCH_TOKEN and --token-file"
like "$(cat "$d/err.1")" "no credentials for the control plane of this Kubernetes job \(Kubernetes pod plaunch-demo-1" \
    "... and the pod"

# ---- plaunch --print-config in a pod: every value with its source ----------------------------------------------
d=$T/config
mkdir -p "$d"
POD_EXTRA=(--print-config)
pod_up "$d" 0 "$K8S/indexed-job.yaml" --secret "plaunch-demo-token/token=$TOKEN" && pod_run "$d" 0 -- true
pod_up "$d" 1 "$K8S/indexed-job.yaml" --secret "plaunch-demo-token/token=$TOKEN" && pod_run "$d" 1 -- true
pod_up "$d" 2 "$K8S/pytorchjob.yaml" --secret "plaunch-pt-token/token=$TOKEN" && pod_run "$d" 2 -- true
for i in 0 1 2; do pod_wait "$d" $i 20; done
POD_EXTRA=()
cfg1=$(cat "$d/out.1")
like "$cfg1" "scheduler: Kubernetes, Kubernetes pod plaunch-demo-1, JOB_COMPLETION_INDEX=1" \
    "--print-config names the scheduler and the pod"
like "$cfg1" "--node-rank +1 +Kubernetes: JOB_COMPLETION_INDEX=1" "... the node rank's source: JOB_COMPLETION_INDEX"
like "$(cat "$d/out.0")" "coordinator: plaunch-demo-0.plaunch-demo:6170, hosted by this node" \
    "... on index 0: the coordinator is hosted there"
cfg2=$(cat "$d/out.2")
ok $(printf '%s\n' "$cfg2" | grep -Eq -e '--node-rank +2 +Kubernetes: PET_NODE_RANK=2' &&
    printf '%s\n' "$cfg2" | grep -Eq -e '--nnodes +3 +Kubernetes: PET_NNODES=3' &&
    printf '%s\n' "$cfg2" | grep -Eq -e '--master-addr +plaunch-pt-master-0 +Kubernetes: PET_MASTER_ADDR'; echo $?) \
    "... in a PyTorchJob pod: node rank, node count and coordinator from the operator's PET_* variables"
# The ranked join's hosts: derived from the pod's name and the coordinator's (index 0's) name, the user's list
# winning, none where the name carries no index (a pod whose host name the manifest set).
like "$cfg1" "--node-hosts +plaunch-demo-\\[0-2\\] +Kubernetes: HOSTNAME=plaunch-demo-1 and the coordinator's host, each name \\+ '\\.plaunch-demo'" \
    "... node hosts derived from the Indexed Job pod's name, with their source"
like "$cfg1" "ranked join: the pods' hosts plaunch-demo-0\\.plaunch-demo \\.\\. plaunch-demo-2\\.plaunch-demo, derived" \
    "... every index's name, the headless Service's subdomain appended"
like "$cfg2" "--node-hosts +plaunch-pt-master-0,plaunch-pt-worker-\\[0-1\\] +Kubernetes: HOSTNAME=plaunch-pt-worker-1" \
    "... in a PyTorchJob pod: the master's name, then the workers'"
POD_EXTRA=(--print-config --node-hosts 'n[1-3]')
pod_up "$d/user" 1 "$K8S/indexed-job.yaml" --secret "plaunch-demo-token/token=$TOKEN" && pod_run "$d/user" 1 -- true
pod_wait "$d/user" 1 20
POD_EXTRA=(--print-config)
pod_up "$d/noindex" 1 "$K8S/indexed-job.yaml" --secret "plaunch-demo-token/token=$TOKEN" &&
    pod_run "$d/noindex" 1 HOSTNAME=trainer -- true
pod_wait "$d/noindex" 1 20
POD_EXTRA=()
ok $(grep -Eq -e '--node-hosts +n\[1-3\] +--node-hosts' "$d/user/out.1" &&
    grep -q "ranked join: the hosts given by --node-hosts; nothing derived" "$d/user/out.1"; echo $?) \
    "... a pod given --node-hosts keeps the user's list"
ok $(grep -Eq -e '--node-hosts +- +default' "$d/noindex/out.1" &&
    grep -q "ranked join: not used: the pod's host name 'trainer' does not end in -1" "$d/noindex/out.1"; echo $?) \
    "... a pod whose name has no index gets none, and --print-config says why"
grace=$(printf '%s\n' "$cfg1" | awk '$1 == "--grace" {print $2}')
. "$d/pod.1.sh"
ok $([ -n "$grace" ] && [ "$(echo "$POD_GRACE > $grace" | bc)" = 1 ]; echo $?) \
    "terminationGracePeriodSeconds ($POD_GRACE s) exceeds plaunch's --grace (${grace} s)"

# ---- SIGTERM from the kubelet to every pod ----------------------------------------------------------------------
# --grace 3 (PLAUNCH_GRACE, in place of the default 10 s) keeps the test short.
d=$T/sigterm
mkdir -p "$d"
for i in 0 1 2; do pod_up "$d" $i "$K8S/indexed-job.yaml" --secret "plaunch-demo-token/token=$TOKEN"; done
publish "$d" 0
for i in 0 1 2; do pod_run "$d" $i PLAUNCH_GRACE=3 -- "$T/bin/sleeper" "$d"; done
wait_for 6 "$d/wpid.*" 40
ok $? "three pods run a long job (6 workers)"
inits=$(for i in 0 1 2; do pod_init "$d" $i; done)
is "$(for p in $inits; do grep -s '^NSpid:' "/proc/$p/status" | awk '{print $NF}'; done | tr '\n' ' ')" "1 1 1 " \
    "in every pod plaunch is PID 1 of the container"
# The workers wrote their pids as their pods see them: find them on the host through their PID namespaces.
wpids=""
for i in 0 1 2; do
    pidns=$(readlink "/proc/$(pod_init "$d" $i)/ns/pid")
    for r in $((2 * i)) $((2 * i + 1)); do
        for p in /proc/[0-9]*; do
            [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$pidns" ] &&
                [ "$(awk '/^NSpid:/ {print $NF}' "$p/status" 2>/dev/null)" = "$(cat "$d/wpid.$r")" ] &&
                wpids="$wpids ${p#/proc/}"
        done
    done
done
workers_left() { local p; for p in $wpids; do alive "$p" && return 0; done; return 1; }
is "$(echo $wpids | wc -w)" 6 "... whose 6 workers are found on the host through the pods' PID namespaces"
t0=$(date +%s.%N)
for p in $inits; do kill -TERM "$p"; done # the kubelet signals each container's PID 1
until_ok 20 eval '! workers_left'
el=$(echo "$(date +%s.%N) - $t0" | bc)
rcs=""
for i in 0 1 2; do pod_wait "$d" $i 20; rcs="$rcs $wrc"; done
is "${rcs# }" "143 143 143" "SIGTERM to every pod: every plaunch exits 143 (128 + SIGTERM)"
ok $([ "$(echo "$el >= 2.5 && $el < 3 + 4" | bc)" = 1 ] && [ "$(cat "$d"/err.* | grep -c 'sending SIGKILL')" = 3 ]
    echo $?) "every worker ended within --grace 3 s + a margin, those ignoring SIGTERM by plaunch's SIGKILL (${el} s)"
until_ok 20 all_pods_empty
ok $? "no process is left in any pod's namespaces"
done_testing
