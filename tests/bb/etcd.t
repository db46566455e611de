#!/bin/bash
# etcd.t: the coordinator elected through a real etcd (Debian's etcd-server, run here in a network namespace with a
# temporary data dir): three nodes rendezvous through it (barriers work), the job's keys are there during the job
# and gone after; SIGKILL of the node that holds the coordinator's lease: the others elect a new one and run the
# next generation (kill -> its first progress, measured); etcd restarted mid-job: the job goes on; etcd
# unreachable: exit 2 at once; TLS with client certificates to etcd.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
command -v etcd >/dev/null && command -v etcdctl >/dev/null && command -v openssl >/dev/null &&
    command -v curl >/dev/null ||
    { echo "1..0 # SKIP no etcd, etcdctl, openssl or curl (make deps installs them)"; exit 0; }
plan 29

NS="pe$$"; NS=${NS:0:8}; NET=80; N=4 # host 1 runs etcd, hosts 2-4 run plaunch
netns_down "$NS" $N >/dev/null 2>&1
trap 'mn_kill_all; [ -n "${EPID:-}" ] && kill_reap "$EPID"; netns_down "$NS" $N; _bb_cleanup' EXIT
netns_up "$NS" $N $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
EA=$(netns_addr "$NS" 1)
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
PW="$PLAUNCH_BUILD/tests/tools/pl_worker"
HB="--heartbeat 0.25 --heartbeat-timeout 2"

# etcd_up [SCHEME [EXTRA...]]: etcd on host 1 (data in $T/etcd, kept across restarts), /health polled.
etcd_up() {
    local scheme=${1:-http}; shift
    ip netns exec "${NS}1" etcd --name t --data-dir "$T/etcd" --listen-client-urls "$scheme://$EA:2379" \
        --advertise-client-urls "$scheme://$EA:2379" --listen-peer-urls "http://$EA:2380" \
        --initial-advertise-peer-urls "http://$EA:2380" --initial-cluster "t=http://$EA:2380" "$@" \
        >>"$T/etcd.log" 2>&1 &
    EPID=$!
    local curl_tls=() i=0
    [ "$scheme" = https ] && curl_tls=(--cacert "$T/pki/ca.pem" --cert "$T/pki/cl.pem" --key "$T/pki/cl.key")
    until ip netns exec "${NS}2" curl -fsS -m 1 "${curl_tls[@]}" "$scheme://$EA:2379/health" 2>/dev/null |
          grep -q '"health":"true"'; do
        i=$((i + 1)); [ $i -ge 300 ] && return 1; sleep 0.1
    done
}
etcd_down() { kill "$EPID" 2>/dev/null; wait "$EPID" 2>/dev/null; EPID=; }
ectl() { ip netns exec "${NS}2" env ETCDCTL_API=3 etcdctl --endpoints "$EA:2379" --dial-timeout 2s "$@"; }
# node I ARGS...: plaunch on host I (2..4) through etcd.
node() {
    local i=$1; shift
    MASTER="etcd://$EA:2379" mn_node "$i" "$@"
}

etcd_up || { echo "Bail out! etcd did not start (see $T/etcd.log)"; cat "$T/etcd.log" >&2; exit 1; }

# ---- three nodes rendezvous through etcd; a barrier across them; the keys during and after -------------------
IDS=""; have_nccl && IDS=ids:8 # NCCL ids need ncclGetUniqueId (libnccl.so.2)
for i in 2 3 4; do
    NCCL_COMM_ID=127.0.0.1:1 node $i --nnodes 3 --job-id ej1 $HB --tee all sh -c '"$0" barrier:b:30000 $2 &&
        : >"$1/up.$RANK" && while [ ! -e "$1/go1" ]; do sleep 0.05; done' "$PW" "$T" "$IDS"
done
wait_for 3 "$T/up.*" 60
ok $? "three nodes rendezvous through etcd and pass a barrier"
keys=$(ectl get --prefix /plaunch/ej1/ --keys-only | grep -v '^$')
like "$keys" "/plaunch/ej1/coordinator" "etcdctl get --prefix shows the coordinator's key during the job"
is "$(echo "$keys" | grep -c /plaunch/ej1/members/)" 3 "  ... a membership key per node"
like "$(ectl get /plaunch/ej1/state --print-value-only)" '"generation":0' "  ... and the job's state (generation 0)"
touch "$T/go1"
for i in 2 3 4; do mn_wait $i 60; eval rc$i=\$wrc; done
is "$rc2 $rc3 $rc4" "0 0 0" "the job ends with 0 on every node"
is "$(cat "$T"/out[234] | grep -c "barrier b: OK")" 3 "  ... every rank's barrier said OK"
if [ -n "$IDS" ]; then
    is "$(cat "$T"/out[234] | grep -c "ids: 0 of 8 failed")" 3 "  ... and every rank got its 8 NCCL ids"
else ok 0 "# SKIP no libnccl.so.2 here: NCCL ids need ncclGetUniqueId"; fi
is "$(ectl get --prefix /plaunch/ej1/ --keys-only | grep -c .)" 0 "the job's keys are gone after the job"

# ---- SIGKILL of the node that coordinates: the others elect a new one and run the next generation -------------
rm -f "$T"/prog.*
for i in 2 3 4; do
    node $i --nnodes 2:3 --job-id ej2 $HB --max-restarts 0 sh -c 'while [ ! -e "$1/go2" ]; do
        echo "$PLAUNCH_GENERATION $(date +%s.%N)" >>"$1/prog.$PLAUNCH_NODE_RANK.$$"; sleep 0.1; done' sh "$T"
done
wait_for 3 "$T/prog.*" 60
ok $? "a 3-node elastic job runs through etcd"
coord=$(ectl get /plaunch/ej2/coordinator --print-value-only); victim=${coord%%:*}; victim=${victim##*.}
ok $([ "$victim" -ge 2 ] && [ "$victim" -le 4 ]; echo $?) "  ... its coordinator is on host $victim ($coord)"
# another program takes the coordinator's port on the other nodes: the next coordinator must publish another one
busy=""
for i in 2 3 4; do
    [ "$i" = "$victim" ] && continue
    ip netns exec "$NS$i" python3 -c 'import socket, time
s = socket.socket(); s.bind(("0.0.0.0", 6170)); s.listen(); time.sleep(120)' &
    busy="$busy $!"
done
portbusy() { for i in 2 3 4; do [ "$i" = "$victim" ] && continue
    ip netns exec "$NS$i" ss -ltn | grep -q ':6170 ' || return 1; done; }
until_ok 10 portbusy
t_kill=$(date +%s.%N)
kill_reap "$(cat "$T/pid.$victim")"
prog_after() { cat "$T"/prog.* 2>/dev/null | awk -v t="$t_kill" '$1 >= 1 && $2 > t' | grep -q .; }
until_ok 60 prog_after; r=$?
ok $r "the other nodes run the next generation after the coordinator's node was killed"
[ $r = 0 ] || for i in 2 3 4; do tail -n 25 "$T/log$i"/plaunch.*.log | sed "s/^/# node $i: /" >&2; done
t_prog=$(cat "$T"/prog.* | awk -v t="$t_kill" '$1 >= 1 && $2 > t {print $2}' | sort -n | head -1)
took=$(echo "$t_prog $t_kill" | awk '{printf "%.2f", $1 - $2}')
echo "# kill -> next generation's first progress: $took s (heartbeat timeout 2 s; goal <= 4 s)"
new=$(ectl get /plaunch/ej2/coordinator --print-value-only)
ok $([ -n "$new" ] && [ "$new" != "$coord" ] && [ "${new##*:}" != 6170 ]; echo $?) \
    "  ... a new coordinator holds the key ($new, was $coord; port 6170 was taken there)"
kill_reap $busy
like "$(ectl get --prefix /plaunch/ej2/incidents/ --print-value-only)" "the coordinator at $coord was lost" \
    "  ... and the takeover is recorded in etcd as an incident"
touch "$T/go2"
rcs=""; for i in 2 3 4; do [ "$i" = "$victim" ] && continue; mn_wait $i 60; rcs="$rcs $wrc"; done
is "$rcs" " 0 0" "the two remaining nodes end the job with 0"
left=0; for i in 2 3 4; do left=$((left + $(ip netns pids "$NS$i" | wc -l))); done
is "$left" 0 "  ... and no worker is left on any node"
is "$(ectl get --prefix /plaunch/ej2/ --keys-only | grep -c .)" 0 "  ... and the job's keys are gone after it"

# ---- the restart budget survives the takeover: one restart spent before it leaves none after it ---------------
for i in 2 3 4; do
    node $i --nnodes 2:3 --job-id ej7 $HB --max-restarts 1 sh -c 'g=$PLAUNCH_GENERATION
        echo "$g" >>"$1/p7.$RANK.$$"
        [ "$g" = 0 ] && [ "$RANK" = 0 ] && exit 1
        [ "$g" -ge 2 ] && [ "$RANK" = 0 ] && exit 3
        while :; do sleep 0.1; done' sh "$T"
done
state7() { ectl get /plaunch/ej7/state --print-value-only | grep -q '"generation":1,"restarts_used":1'; }
until_ok 60 state7
ok $? "a worker failure restarts the job once (etcd's state: generation 1, 1 restart spent)"
coord=$(ectl get /plaunch/ej7/coordinator --print-value-only); victim=${coord%%:*}; victim=${victim##*.}
gen1_everywhere() { [ "$(cat "$T"/p7.* | grep -c "^1$")" -ge 3 ]; }
until_ok 30 gen1_everywhere
kill_reap "$(cat "$T/pid.$victim")"
rcs=""; for i in 2 3 4; do [ "$i" = "$victim" ] && continue; mn_wait $i 60; rcs="$rcs $wrc"; done
is "$rcs" " 3 3" "after the takeover the next failure ends the job (exit 3): no restart was left"
is "$(cat "$T"/p7.* | sort -u | tr '\n' ' ')" "0 1 2 " "  ... generations 0, 1 and 2 ran, no generation 3"
like "$(cat "$T"/log[234]/plaunch.*.log)" "restart budget exhausted \(1 restart\)" \
    "  ... the new coordinator's verdict went on from the restart its predecessor spent"

# ---- the coordinator lost during the first rendezvous: the node waiting elects another, newcomers join it ------
for i in 2 3; do node $i --nnodes 3 --job-id ej9 $HB true; done
members9() { [ "$(ectl get --prefix /plaunch/ej9/members/ --keys-only | grep -c .)" = 2 ]; }
until_ok 30 members9
coord=$(ectl get /plaunch/ej9/coordinator --print-value-only); victim=${coord%%:*}; victim=${victim##*.}
kill_reap "$(cat "$T/pid.$victim")"
node 4 --nnodes 3 --job-id ej9 $HB true                    # a third node, and the killed one back
node "$victim" --nnodes 3 --job-id ej9 $HB true
for i in 2 3 4; do mn_wait $i 60; eval rc$i=\$wrc; done
is "$rc2 $rc3 $rc4" "0 0 0" "the coordinator killed before the world formed: another is elected, the job runs on 3 nodes"

# ---- etcd restarted during the job: the job goes on ---------------------------------------------------------
for i in 2 3 4; do
    node $i --nnodes 3 --job-id ej3 $HB sh -c ': >"$1/up3.$RANK"; while [ ! -e "$1/go3" ]; do sleep 0.05;
        done' sh "$T"
done
wait_for 3 "$T/up3.*" 60
etcd_down; sleep 1; etcd_up
ok $? "etcd restarted during the job"
touch "$T/go3"
for i in 2 3 4; do mn_wait $i 60; eval rc$i=\$wrc; done
is "$rc2 $rc3 $rc4" "0 0 0" "  ... and the job went on to its end on every node"

# ---- etcd unreachable at start: exit 2 at once --------------------------------------------------------------
start=$(date +%s%N)
ip netns exec "${NS}2" timeout -k 5 60 "$PLAUNCH" --master "etcd://$EA:2399" --nnodes 2 --job-id ej4 true \
    >"$T/out4" 2>"$T/err4"
rc=$?; ms=$(( ($(date +%s%N) - start) / 1000000 ))
is "$rc" 2 "etcd unreachable: exit status 2 (${ms} ms)"
like "$(cat "$T/err4")" "cannot elect the coordinator through etcd .*$EA:2399.*start etcd there" \
    "  ... with a sentence naming etcd's address and the fix"

# ---- several endpoints: one that does not answer hands each call to the next --------------------------------
for i in 2 3; do
    MASTER="etcd://$EA:2399,$EA:2379" mn_node $i --nnodes 2 --job-id ej8 $HB true
done
mn_wait 2 60; rc2=$wrc; mn_wait 3 60; rc3=$wrc
is "$rc2 $rc3" "0 0" "etcd://DEAD,LIVE: the nodes elect through the endpoint that answers"

# ---- TLS to etcd with client certificates --------------------------------------------------------------------
mkdir -p "$T/pki"; P="$T/pki"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 1 -subj /CN=etcd-test-ca \
    >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -keyout "$P/srv.key" -out "$P/srv.csr" -subj /CN=etcd >/dev/null 2>&1
printf 'subjectAltName=IP:%s\n' "$EA" >"$P/srv.ext"
openssl x509 -req -in "$P/srv.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/srv.pem" -days 1 \
    -extfile "$P/srv.ext" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -keyout "$P/cl.key" -out "$P/cl.csr" -subj /CN=plaunch >/dev/null 2>&1
openssl x509 -req -in "$P/cl.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/cl.pem" -days 1 \
    >/dev/null 2>&1
etcd_down
etcd_up https --cert-file "$P/srv.pem" --key-file "$P/srv.key" --client-cert-auth --trusted-ca-file "$P/ca.pem"
ok $? "etcd serves https with client certificates"
for i in 2 3 4; do
    MASTER="etcd://https://$EA:2379" mn_node $i --nnodes 3 --job-id ej5 $HB --etcd-cacert "$P/ca.pem" \
        --etcd-cert "$P/cl.pem" --etcd-key "$P/cl.key" true
done
for i in 2 3 4; do mn_wait $i 60; eval rc$i=\$wrc; done
is "$rc2 $rc3 $rc4" "0 0 0" "three nodes elect through etcd over TLS with client certificates"
ip netns exec "${NS}2" timeout -k 5 60 "$PLAUNCH" --master "etcd://https://$EA:2379" --etcd-cacert "$P/ca.pem" \
    --nnodes 2 --job-id ej6 true >"$T/out6" 2>"$T/err6"
rc=$?
is "$rc" 2 "  ... without a client certificate etcd refuses the node: exit 2 ($(grep -o 'etcd at [^;]*' "$T/err6" | head -1))"
done_testing
