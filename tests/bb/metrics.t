#!/bin/bash
# metrics.t: --metrics-port on a 2-node job on loopback (the second plaunch joins the first's coordinator): a live
# scrape passes `promtool check metrics`; only GET /metrics is served; a real Prometheus (started here on
# loopback, its storage in the temp dir) scrapes both nodes and answers `up`, the restart counter after an injected
# worker failure and a per-rank gauge; then hostile scrapers (1,000 idle connections, a slowloris client, a 10 MB
# request line) hit the coordinator's node while a second failure is injected: the restart takes as long as
# without them, no heartbeat is late (heartbeats every 0.2 s, --heartbeat-timeout 2: one stall of either loop
# past 2 s would lose a node; the margin is for a loaded 2-core machine), plaunch's RSS stays bounded, and
# /metrics answers again after them.
. "$(dirname "$0")/lib.sh"
A="$PLAUNCH_SRC/tests/bb/metrics_attack.py"
for p in promtool prometheus; do
    if ! command -v $p >/dev/null; then
        [ "$(id -u)" = 0 ] && apt-get install -y prometheus >/dev/null 2>&1
        command -v $p >/dev/null || { echo "1..0 # SKIP $p is not installed and apt-get cannot install prometheus"; exit 0; }
    fi
done
if ! ldconfig -p | grep -q libmicrohttpd.so.12; then
    [ "$(id -u)" = 0 ] && apt-get install -y libmicrohttpd12 >/dev/null 2>&1
    ldconfig -p | grep -q libmicrohttpd.so.12 || { echo "1..0 # SKIP libmicrohttpd.so.12 cannot be installed"; exit 0; }
fi
plan 26

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CPORT=$(free_port); M1=$(free_port); M2=$(free_port); PPORT=$(free_port)
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
kill_all() { local f; for f in "$T"/pid.*; do [ -e "$f" ] && kill_reap "$(cat "$f")"; done; rm -f "$T"/pid.*; }
trap 'kill_all; _bb_cleanup' EXIT

# Each rank reports a step every 0.1 s until the test's go; rank 1 fails once fail.GENERATION exists.
cat >w.sh <<W
#!/bin/bash
g=\$PLAUNCH_GENERATION
date +%s%N >"$T/start.\$g.\$RANK"
i=0
for _ in \$(seq 1 1800); do
    [ -e "$T/go" ] && exit 0
    i=\$((i + 1)); echo \$i >"\$PLAUNCH_PROGRESS_FILE"
    if [ "\$RANK" = 1 ] && [ -e "$T/fail.\$g" ]; then date +%s%N >"$T/failed.\$g"; exit 3; fi
    sleep 0.1
done
exit 1
W
chmod +x w.sh

# ---- the options, and what happens when /metrics cannot be served: a warning, the job runs ----
printf 'metrics-port = 9999\nmetrics-addr = ::1\n' >m.ini
cfg=$("$PLAUNCH" --config m.ini --print-config true; PLAUNCH_METRICS_PORT=123 "$PLAUNCH" --print-config true)
like "$(echo "$cfg" | grep -- --metrics | sed 's/^ *//' | tr -s ' ' | tr '\n' '|')" \
    '^--metrics-port 9999 m.ini:1: metrics-port\|--metrics-addr ::1 m.ini:2: metrics-addr\|--metrics-port 123 environment PLAUNCH_METRICS_PORT\|--metrics-addr 127.0.0.1 default\|$' \
    "--metrics-port and --metrics-addr come from the INI file and PLAUNCH_METRICS_* too"
run_plaunch --metrics-addr localhost true
like "$rc:$(echo $err)" "^2:.*--metrics-addr 'localhost': expected an IPv4 or IPv6 address" "a bad address is refused (exit 2)"
python3 -c 'import socket, sys, time; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
time.sleep(30)' "$M2" &
echo $! >pid.taken
until_ok 10 sh -c "ss -Hltn '( sport = :$M2 )' | grep -q LISTEN"
run_plaunch --metrics-port "$M2" true
kill_reap "$(cat pid.taken)"; rm -f pid.taken
like "$rc:$(echo $err)" "^0:.*warning: metrics: cannot listen on 127.0.0.1 port $M2 \(Address already in use\).*the job runs without /metrics" \
    "a port in use: one warning, the job runs"
lib=$(ldconfig -p | awk '/libmicrohttpd.so.12 .*x86-64/ {print $NF; exit}')
# libmicrohttpd absent: hidden in a mount namespace of this command alone
out=$(unshare -m sh -c "mount --bind /dev/null '$lib' && exec '$PLAUNCH' --metrics-port $M2 --log-dir nolib true" 2>&1)
like "$?:$(echo $out)" "^0:.*warning: metrics: cannot load libmicrohttpd.so.12 .*install libmicrohttpd12" \
    "libmicrohttpd absent: the warning names the package, the job runs"

# ---- the monitor's GPU gauges, from the stand-in NVML of the monitor's tests (tests/bb/fake_nvml.c) ----
FAKE=$T/libfake_nvml.so
cc -I"$PLAUNCH_SRC" -shared -fPIC -o "$FAKE" "$PLAUNCH_SRC/tests/bb/fake_nvml.c" "$PLAUNCH_SRC/tests/bb/fake_nvml_script.c"
{
    echo "gpu 0 util=75 mem_used=30000 mem_total=81559 proc=local0:20000"
    echo "gpu 1 util=5 mem_used=1000 mem_total=81559 proc=local1:512"
} >gpus.txt
env CUDA_VISIBLE_DEVICES=0,1 PLAUNCH_NVML_LIBRARY=$FAKE FAKE_NVML_SCRIPT=$T/gpus.txt timeout -k 5 60 "$PLAUNCH" \
    --gpus all --monitor 0.2 --job-id gpu-t --log-dir gpulog --metrics-port "$M1" \
    sh -c "for i in \$(seq 1 300); do [ -e '$T/gpu.done' ] && exit 0; sleep 0.1; done" >gpu.out 2>&1 &
echo $! >pid.gpu
gpu_gauges() { curl -sf "http://127.0.0.1:$M1/metrics" >gpu.txt && grep -q '^plaunch_rank_gpu_memory_bytes{.*gpu="1"' gpu.txt; }
until_ok 30 gpu_gauges
touch gpu.done
wait "$(cat pid.gpu)"; rm -f pid.gpu # its port is free again for node 1
g=$(grep -E '^plaunch_rank_gpu_(utilization_ratio|memory_bytes|device_memory_total_bytes)\{' gpu.txt | sed 's/job_id="gpu-t",node="[^"]*",//' | sort | tr '\n' '|')
is "$g" 'plaunch_rank_gpu_device_memory_total_bytes{rank="0",local_rank="0",gpu="0"} 85520809984|plaunch_rank_gpu_device_memory_total_bytes{rank="1",local_rank="1",gpu="1"} 85520809984|plaunch_rank_gpu_memory_bytes{rank="0",local_rank="0",gpu="0"} 20971520000|plaunch_rank_gpu_memory_bytes{rank="1",local_rank="1",gpu="1"} 536870912|plaunch_rank_gpu_utilization_ratio{rank="0",local_rank="0",gpu="0"} 0.75|plaunch_rank_gpu_utilization_ratio{rank="1",local_rank="1",gpu="1"} 0.05|' \
    "the monitor's GPU gauges per rank, with the gpu label (stand-in NVML)"
pout=$(promtool check metrics <gpu.txt 2>&1); prc=$?
is "$prc:$pout" "0:" "promtool check metrics passes on a GPU job's exposition"

node() { # node I METRICS_PORT
    timeout -k 5 300 "$PLAUNCH" --nnodes 2 --master "127.0.0.1:$CPORT" --nproc-per-node 1 --job-id metrics-t \
        --max-restarts 3 --heartbeat 0.2 --heartbeat-timeout 2 --monitor 0.5 --log-dir "$T/log$1" \
        --metrics-port "$2" ./w.sh >"$T/out$1" 2>"$T/err$1" &
    echo $! >"$T/pid.$1"
}
node 1 "$M1"
until_ok 20 curl -sf -o /dev/null "http://127.0.0.1:$M1/metrics"
node 2 "$M2"
is "$(ss -Hltn "( sport = :$M1 )" | awk '{print $4}')" "127.0.0.1:$M1" "by default /metrics listens on loopback only"
has_step() { curl -sf "http://127.0.0.1:$1/metrics" | grep -q "^plaunch_rank_step{.*rank=\"$2\""; }
until_ok 60 has_step "$M1" 0 && until_ok 30 has_step "$M2" 1
ok $? "both nodes serve /metrics with their rank's reported step"
until_ok 20 sh -c "curl -sf http://127.0.0.1:$M1/metrics | grep -q '^plaunch_rank_resident_memory_bytes{'"
curl -sf "http://127.0.0.1:$M1/metrics" >scrape1.txt
pout=$(promtool check metrics <scrape1.txt 2>&1); prc=$?
is "$prc:$pout" "0:" "promtool check metrics passes on the coordinator node's live scrape"
curl -sf "http://127.0.0.1:$M2/metrics" >scrape2.txt
pout=$(promtool check metrics <scrape2.txt 2>&1); prc=$?
is "$prc:$pout" "0:" "... and on the other node's"
like "$(cat scrape1.txt)" '^plaunch_workers_running\{job_id="metrics-t",node="[^"]+"\} 1$' \
    "samples carry the job_id and node labels"
like "$(cat scrape1.txt)" 'plaunch_job_incidents_total\{job_id="metrics-t",node="[^"]+",cause="worker-failure"\} 0' \
    "the coordinator's node serves the job's families"
like "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$M1/metrics") $(curl -s -o /dev/null \
    -w '%{http_code}' "http://127.0.0.1:$M1/other")" '^405 404$' "POST is refused (405), other paths are not found (404)"

# ---- a real Prometheus scrapes both nodes ----
cat >prom.yml <<Y
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: plaunch
    static_configs: [{targets: ['127.0.0.1:$M1', '127.0.0.1:$M2']}]
Y
prometheus --config.file=prom.yml --storage.tsdb.path="$T/tsdb" --web.listen-address="127.0.0.1:$PPORT" \
    >prom.log 2>&1 &
echo $! >"$T/pid.prom"
q() { curl -sf -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1"; }
targets_up() { [ "$(curl -sf "http://127.0.0.1:$PPORT/api/v1/targets" | jq '[.data.activeTargets[] |
    select(.health == "up")] | length' 2>/dev/null)" = 2 ]; }
until_ok 60 targets_up
ok $? "Prometheus scrapes both nodes (targets up)"
is "$(q 'sum(up{job="plaunch"})' | jq -r '.data.result[0].value[1]')" 2 "Prometheus: up is 1 for both nodes"
rank_gauge() { [ "$(q 'plaunch_rank_step{rank="1"} > 0' | jq '.data.result | length')" = 1 ]; }
until_ok 30 rank_gauge
ok $? "Prometheus: the per-rank gauge plaunch_rank_step of rank 1 (served by the other node)"

# ---- a failure: the restart counter ----
touch fail.0
wait_for 1 "start.1.1" 30
ms() { echo $(( ($(cat "$2") - $(cat "$1")) / 1000000 )); }
base=$(ms failed.0 start.1.1)
restarts() { [ "$(q 'plaunch_job_restarts_total' | jq -r '.data.result[0].value[1]')" = "$1" ]; }
until_ok 30 restarts 1
ok $? "Prometheus: plaunch_job_restarts_total is 1 after the injected failure"
like "$(q 'plaunch_job_incidents_total{cause="worker-failure"}' | jq -r '.data.result[0].value[1]')" '^1$' \
    "... and one worker-failure incident"

# ---- hostile scrapers at the coordinator's node during a second failure ----
pid1=$(cat pid.1); pl1=$(pgrep -P "$pid1" -x plaunch | head -1); pl1=${pl1:-$pid1}
rss() { awk '/^VmRSS/ {print $2}' "/proc/$pl1/status"; }
rss0=$(rss)
python3 "$A" slowloris 127.0.0.1 "$M1" 15 >slow.out 2>&1 &
echo $! >pid.slow
python3 "$A" longline 127.0.0.1 "$M1" 10000000 >long.out 2>&1 &
echo $! >pid.long
until_ok 30 grep -q longline long.out
(ulimit -n 4096; exec python3 "$A" idle 127.0.0.1 "$M1" 1000 12 >idle.out 2>&1) &
echo $! >pid.idle
# the failure comes once the idle connections hold every slot of the server
until_ok 30 sh -c "[ \$(ss -Htn state established '( sport = :$M1 )' | wc -l) -ge 32 ]"
touch fail.1
wait_for 1 "start.2.1" 30
hostile=$(ms failed.1 start.2.1)
rss1=$(rss)
echo "# restart: ${base} ms without scrapers, ${hostile} ms under 1,000 idle connections, slowloris, a 10 MB line"
ok $((hostile < base * 3 + 1000 ? 0 : 1)) "the restart under attack takes about as long as without ($hostile ms vs $base ms)"
for f in idle slow long; do until_ok 30 sh -c "! kill -0 \$(cat pid.$f) 2>/dev/null"; done
like "$(cat long.out)" "answer 'HTTP/1.1 414" "the 10 MB request line is refused early (414): $(cat long.out)"
growth=$(( $(rss) - rss0 ))
echo "# RSS of the attacked plaunch: ${rss0} KiB before, ${rss1} KiB during, $(rss) KiB after"
if nm -D "$PLAUNCH" 2>/dev/null | grep -q __asan_init; then # its quarantine keeps what was freed
    _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - plaunch's RSS # SKIP AddressSanitizer build (+$growth KiB)"
else
    ok $(( rss1 - rss0 < 8192 && growth < 8192 ? 0 : 1 )) "plaunch's RSS stays bounded (+$((rss1 - rss0)) KiB during, +$growth KiB after)"
fi
until_ok 30 curl -sf -o /dev/null "http://127.0.0.1:$M1/metrics"
ok $? "/metrics answers again once the hostile clients are gone"

touch go
for i in 1 2; do
    pid=$(cat pid.$i); n=0
    while kill -0 "$pid" 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
    wait "$pid"; eval "rc$i=$?"
done
is "$rc1:$rc2" "0:0" "the job succeeds on both nodes"
is "$(cat log1/*.log log2/*.log err1 err2 2>/dev/null | grep -c -- '--heartbeat-timeout')" 0 \
    "no heartbeat was late during the attack (no node or coordinator lost)"
is "$(ls start.*.0 | wc -l)" 3 "exactly the two injected restarts happened (three generations)"
is "$(grep -aE 'Sanitizer|runtime error:' err1 err2 gpu.out | head -3)" "" "no sanitizer report"
done_testing
