#!/bin/bash
# metrics_mn.t: a 2-node job in network namespaces scraped by a real Prometheus running in a third namespace (the
# monitoring host), as a cluster's would: node 1 serves /metrics on every interface (--metrics-addr 0.0.0.0),
# node 2 on its own address; Prometheus's API answers `up` for both, a per-rank gauge of the second node's rank,
# and the restart counter of the coordinator's node after an injected worker failure; the exposition seen across
# the network passes `promtool check metrics`.
. "$(dirname "$0")/lib.sh"
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP network namespaces need root"; exit 0; fi
for p in promtool prometheus; do
    command -v $p >/dev/null || apt-get install -y prometheus >/dev/null 2>&1
    command -v $p >/dev/null || { echo "1..0 # SKIP $p is not installed and apt-get cannot install prometheus"; exit 0; }
done
ldconfig -p | grep -q libmicrohttpd.so.12 || apt-get install -y libmicrohttpd12 >/dev/null 2>&1
ldconfig -p | grep -q libmicrohttpd.so.12 || { echo "1..0 # SKIP libmicrohttpd.so.12 cannot be installed"; exit 0; }
plan 8

NS="pq$$"; NS=${NS:0:8}; NET=70; PORT=29470; MPORT=9470; PPORT=9090
netns_down "$NS" 3 >/dev/null 2>&1
kill_all() { local f; for f in "$T"/pid.*; do [ -e "$f" ] && kill_reap "$(cat "$f")"; done; rm -f "$T"/pid.*; }
trap 'kill_all; netns_down "$NS" 3; _bb_cleanup' EXIT
netns_up "$NS" 3 $NET || { echo "Bail out! cannot create network namespaces"; exit 1; }
H1=$(netns_addr "$NS" 1); H2=$(netns_addr "$NS" 2)
MASTER="$H1:$PORT"
export PLAUNCH_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

cat >w.sh <<W
#!/bin/bash
g=\$PLAUNCH_GENERATION
i=0
for _ in \$(seq 1 1800); do
    [ -e "$T/go" ] && exit 0
    i=\$((i + 1)); echo \$i >"\$PLAUNCH_PROGRESS_FILE"
    if [ "\$RANK" = 1 ] && [ -e "$T/fail.\$g" ]; then exit 3; fi
    sleep 0.1
done
exit 1
W
chmod +x w.sh
job=(--nnodes 2 --nproc-per-node 1 --job-id metrics-mn --max-restarts 2 --metrics-port $MPORT)
mn_node 1 "${job[@]}" --metrics-addr 0.0.0.0 ./w.sh
mn_node 2 "${job[@]}" --metrics-addr "$H2" ./w.sh

cat >prom.yml <<Y
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: plaunch
    static_configs: [{targets: ['$H1:$MPORT', '$H2:$MPORT']}]
Y
ip netns exec "${NS}3" prometheus --config.file=prom.yml --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$PPORT" >prom.log 2>&1 &
echo $! >"$T/pid.prom"
in3() { ip netns exec "${NS}3" "$@"; }
q() { in3 curl -sf -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1"; }
targets_up() { [ "$(in3 curl -sf "http://127.0.0.1:$PPORT/api/v1/targets" | jq '[.data.activeTargets[] |
    select(.health == "up")] | length' 2>/dev/null)" = 2 ]; }
until_ok 90 targets_up
ok $? "Prometheus in the monitoring namespace scrapes both nodes across the network"
is "$(q 'sum(up{job="plaunch"})' | jq -r '.data.result[0].value[1]')" 2 "up is 1 for both nodes"
rank1() { [ "$(q "plaunch_rank_step{rank=\"1\",instance=\"$H2:$MPORT\"} > 0" | jq '.data.result | length')" = 1 ]; }
until_ok 30 rank1
ok $? "the per-rank gauge plaunch_rank_step of rank 1, from node 2's address"
in3 curl -sf "http://$H1:$MPORT/metrics" >scrape.txt
pout=$(promtool check metrics <scrape.txt 2>&1); prc=$?
is "$prc:$pout" "0:" "promtool check metrics passes on the coordinator node's exposition, scraped across the network"

touch fail.0
restarts() { [ "$(q "plaunch_job_restarts_total{instance=\"$H1:$MPORT\"}" | jq -r '.data.result[0].value[1]')" = 1 ]; }
until_ok 60 restarts
ok $? "after the injected failure, Prometheus has plaunch_job_restarts_total 1 from the coordinator's node"
gen() { [ "$(q 'min(plaunch_generation)' | jq -r '.data.result[0].value[1]')" = 1 ]; }
until_ok 30 gen
ok $? "... and both nodes' plaunch_generation is 1"

touch go
mn_wait 1 60; rc1=$wrc; mn_wait 2 60; rc2=$wrc
is "$rc1:$rc2" "0:0" "the job succeeds on both nodes"
is "$(grep -aE 'Sanitizer|runtime error:' err1 err2 | head -3)" "" "no sanitizer report"
done_testing
