#!/bin/bash
# auth.t: both control-plane credential modes (token, job CA) run a two-node job; bad peers (wrong token, plaintext
# ZeroMQ, random bytes, another protocol version or job id, a certificate of another CA, expired or missing) are
# refused with the reason in the coordinator's plaunch.log while the coordinator keeps serving good nodes.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
CLIENT="$PLAUNCH_BUILD/tests/tools/pl_client"
[ -x "$CLIENT" ] || { echo "Bail out! $CLIENT is missing: build it with make unit"; exit 1; }
plan 41

NS="pa$$"; NS=${NS:0:8}; NET=7; PORT=29471; HOSTS=6
netns_down "$NS" $HOSTS >/dev/null 2>&1
trap 'netns_down "$NS" $HOSTS; _bb_cleanup' EXIT
netns_up "$NS" $HOSTS $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
MASTER="$(netns_addr "$NS" 1):$PORT"
# Only what each command line says: no credentials from the caller's environment or home directory.
for v in $(env | sed -n 's/^\(PLAUNCH_[A-Z_]*\)=.*/\1/p'); do
    case $v in PLAUNCH_BUILD | PLAUNCH_SRC) ;; *) unset "$v" ;; esac
done
export HOME=$T
RDZV=2 # how long a bad agent waits for its rendezvous before it gives up

# addr_re I: host I's address as an extended regular expression
addr_re() { local a; a=$(netns_addr "$NS" "$1"); echo "${a//./\\.}"; }
# wait_pid PID SECONDS: waits for a background process; sets $wrc to its exit code (124 after the time is up)
wait_pid() {
    local i=0
    while kill -0 "$1" 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$1" 2>/dev/null; then wrc=124; else wait "$1"; wrc=$?; fi
}
# log_count REGEX: lines of the coordinator's log matching REGEX
log_count() {
    local n
    n=$(grep -aEc -- "$1" "$COORD_LOG" 2>/dev/null)
    echo "${n:-0}"
}
# wait_log REGEX SECONDS [MORE_THAN]: waits until more than MORE_THAN (default 0) lines of the log match
wait_log() {
    local i=0
    while [ "$(log_count "$1")" -le "${3:-0}" ]; do
        [ $i -ge $(($2 * 10)) ] && return 1
        sleep 0.1; i=$((i + 1))
    done
}

# start_coord NAME CREDENTIALS...: the coordinator of job 'authjob' (2 nodes) on host 1, in the background
start_coord() {
    local dir=$T/$1; shift
    COORD_LOG=$dir/$PLOG
    ip netns exec "${NS}1" timeout -k 5 120 "$PLAUNCH" --nnodes 2 --master "$MASTER" --nproc-per-node 1 \
        --job-id authjob --rdzv-timeout 90 --log-dir "$dir" "$@" true >"$dir.out" 2>"$dir.err" &
    coord_pid=$!
    wait_log "coordinator listening" 10 || echo "# the coordinator did not start: $(tail -3 "$dir.err")"
}
# agent I ARGS...: a plaunch agent on host I; sets $rc and $err (its stderr, repeated lines once)
agent() {
    local i=$1; shift
    timeout -k 5 60 ip netns exec "$NS$i" "$PLAUNCH" --nnodes 2 --master "$MASTER" --nproc-per-node 1 \
        --rdzv-timeout "$RDZV" --log-dir "$T/agent$i" "$@" true >"$T/.out" 2>"$T/.err"
    rc=$?
    err=$(uniq "$T/.err")
    cat "$T/.err" >>"$T/stderr.all"
}
# client I ARGS...: pl_client on host I against the coordinator; sets $rc and $out
client() {
    local i=$1; shift
    timeout -k 5 30 ip netns exec "$NS$i" "$CLIENT" --endpoint "tcp://$MASTER" --timeout 10 "$@" >"$T/.out" 2>&1
    rc=$?
    out=$(cat "$T/.out")
    cat "$T/.out" >>"$T/stderr.all"
}
# send_bytes I PRINTF_FORMAT: writes bytes to the coordinator's port from host I and hangs up
send_bytes() {
    timeout -k 2 10 ip netns exec "$NS$1" bash -c 'printf "$1" >"/dev/tcp/${2%:*}/${2#*:}"' _ "$2" "$MASTER"
}

# gave_up WHAT REGEX: the last agent exited non-zero by itself (not by our timeout or a sanitizer) saying REGEX
gave_up() {
    case $rc in 0 | 98 | 99 | 124 | 137) ok 1 "$1: the agent exits non-zero (got $rc)" ;;
        *) ok 0 "$1: the agent exits non-zero ($rc)" ;; esac
    like "$err" "$2" "$1: the agent says why"
}
# refused WHAT REGEX: the coordinator logs a refusal matching REGEX (waits up to 5 s for it)
refused() {
    wait_log "refused $2" 5
    like "$(grep -a 'refused' "$COORD_LOG" | cut -d' ' -f3- | uniq)" "refused $2" "$1: the coordinator logs why"
}
# todo RESULT NAME REASON: a TAP TODO test (a known launcher bug): reported, not counted as a failure
todo() {
    _tap_n=$((_tap_n + 1))
    if [ "$1" = 0 ]; then echo "ok $_tap_n - $2 # TODO $3"; else echo "not ok $_tap_n - $2 # TODO $3"; fi
}
# good_job WHAT ARGS...: a good agent on host 2 joins; the job runs and both nodes exit 0
good_job() {
    local what=$1; shift
    RDZV=30 agent 2 "$@"
    is "$rc" 0 "$what: after the bad peers a good agent joins and its node exits 0"
    wait_pid "$coord_pid" 30
    is "$wrc" 0 "$what: the coordinator's node exits 0"
    is "$(grep -acE 'joined for generation 0: 2 of 2|job authjob over: exit status 0' "$COORD_LOG")" 2 "$what: the job ran on both nodes"
}

# ---- token mode -------------------------------------------------------------------------------------------------
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
OTHER_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
start_coord token --token "$TOKEN"

agent 3 --token "$OTHER_TOKEN"
gave_up "wrong token" "token mismatch"
refused "wrong token" "$(addr_re 3): TLS handshake failed: .*token mismatch"

agent 4 --insecure
gave_up "plaintext ZeroMQ agent (--insecure)" "refused this node: this coordinator requires TLS"
refused "plaintext ZeroMQ agent" "$(addr_re 4): its first frame is not a TLS ClientHello"

agent 5 --token "$TOKEN" --job-id other
is "$rc" 2 "another job id: the agent exits 2"
like "$err" "job 'other'.*start every node with the same job id" "another job id: the agent says why"
refused "another job id" "an agent \($(addr_re 5)\): .*is in job 'other', coordinator .* runs job 'authjob'"

client 6 --token "$TOKEN" --proto-version 6
is "$rc" 0 "another protocol version: pl_client is refused"
like "$out" "REFUSE BAD_VERSION: .*speaks protocol 6, .*speaks protocol 5" "another protocol version: REFUSE says why"
refused "another protocol version" "an agent \($(addr_re 6)\): .*speaks protocol 6, coordinator .* speaks protocol 5"

# Bytes that are no ZeroMQ greeting. They are fixed: libzmq takes a stream whose first byte is not 0xff for a
# ZMTP 1.0 peer, so what the coordinator sees depends on the bytes (see the TODO tests below).
ZMTP_BAD="not a ZeroMQ peer"
n=$(log_count "$ZMTP_BAD")
send_bytes 6 '\x9d\x44\x79\x5d\xd3\x9c\xd7\xf5\x68\x5f\xf5\x86\x1a\x2b\x3c\x4d\x5e\x6f\x70\x81\x92\xa3\xb4\xc5'
wait_log "$ZMTP_BAD" 5 "$n"
ok $? "random bytes on the port: the coordinator logs a refused connection, not a ZeroMQ peer"
n=$(log_count "$ZMTP_BAD")
send_bytes 6 'GET / HTTP/1.0\r\n\r\n'
wait_log "$ZMTP_BAD" 5 "$n"
ok $? "an HTTP request on the port: the coordinator logs a refused connection, not a ZeroMQ peer"
n=$(log_count "refused")
send_bytes 6 '\x00\x02\x9c\x92\x8f\x37\xb7\x7b\xc3\x0f\xe8\x99'
wait_log "refused" 5 "$n"
ok $? "random bytes starting with 0x00 on the port (no ZeroMQ handshake failure event): the coordinator logs a refusal"
send_bytes 6 '\x05\x00abcd\x05\x00wxyz'
wait_log "refused $(addr_re 6): its first frame" 3
todo $? "bytes that parse as ZMTP 1.0 frames: the refusal names the sender's address" \
    "a peer that hangs up at once is gone before the monitor's ACCEPTED is read: its address is lost with it"

good_job "token mode" --token "$TOKEN"

# ---- job CA mode ------------------------------------------------------------------------------------------------
# Certificates are named by the node's address: each agent picks DIR/<its address>.crt.
CA=$T/ca OTHER=$T/other-ca ROGUE=$T/rogue
"$PLAUNCH" certs init "$CA" >/dev/null && "$PLAUNCH" certs issue "$CA" "$(netns_addr "$NS" 1)" \
    "$(netns_addr "$NS" 2)" >/dev/null
ok $? "plaunch certs init + issue make the job CA and the nodes' certificates"
"$PLAUNCH" certs init "$OTHER" >/dev/null && "$PLAUNCH" certs issue "$OTHER" "$(netns_addr "$NS" 3)" \
    "$(netns_addr "$NS" 6)" >/dev/null
# The rogue trusts the job CA but holds a certificate of another CA; host 6 lives in the other CA altogether.
mkdir -m 700 "$ROGUE" && cp -p "$CA/ca.crt" "$OTHER/$(netns_addr "$NS" 3)".* "$ROGUE/"
"$CLIENT" --write-expired-cert "$CA" "$(netns_addr "$NS" 4)" >/dev/null
ok $? "pl_client writes an expired certificate of the job CA for host 4"
start_coord ca --tls-dir "$CA"

agent 3 --tls-dir "$ROGUE"
gave_up "certificate from another CA" "rejected our certificate: not signed by its job CA"
refused "certificate from another CA" "$(addr_re 3): TLS handshake failed: .*'$(addr_re 3)' is not signed by the job CA"

agent 4 --tls-dir "$CA"
gave_up "expired certificate" "certificate expired"
refused "expired certificate" "$(addr_re 4): TLS handshake failed: .*'$(addr_re 4)' expired on"

client 5 --no-cert
is "$rc" 0 "no certificate: pl_client is refused"
like "$out" "refused: TLS: .*certificate required" "no certificate: the TLS alert says a certificate is required"
refused "no certificate" "$(addr_re 5): TLS handshake failed: .*sent no certificate"

agent 6 --tls-dir "$OTHER"
gave_up "agent of another job CA" "'$(addr_re 1)' is not signed by the job CA"
refused "agent of another job CA" "$(addr_re 6): TLS handshake failed: .*rejected our certificate"

good_job "CA mode" --tls-dir "$CA"

# ---- no credentials at all ----------------------------------------------------------------------------------------
mkdir -m 700 "$T/empty"
start=$(date +%s)
agent 2 --tls-dir "$T/empty"
is "$rc" 2 "no credentials: the agent exits 2"
like "$err" "no credentials.*--token-file.*--tls-dir.*--insecure" "no credentials: the message names the options"
ok $(($(date +%s) - start < 5 ? 0 : 1)) "no credentials: the agent exits at once, without waiting for a rendezvous"

is "$(for i in $(seq 1 $HOSTS); do ip netns pids "$NS$i"; done)" "" "no process is left in any host"
is "$(grep -aE 'Sanitizer|runtime error:' "$T/stderr.all" "$T"/*.err | head -3)" "" "no sanitizer report from any process"
done_testing
