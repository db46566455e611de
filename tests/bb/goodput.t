#!/bin/bash
# goodput.t: the incident ledger. A job whose rank 1 fails at a known time while every rank reports steps: one
# incident in LOG_DIR/goodput.jsonl with every phase in order, times that add up to the wall clock within 1 %, and
# a Goodput block whose numbers are the ledger's. Then a node lost from a 2-node elastic job (network namespaces):
# one node-loss incident, every phase through the survivors' first progress.
. "$(dirname "$0")/lib.sh"
plan 24

export OUTDIR=$T
# Steps every 0.1 s; generation 1 resumes from a "checkpoint" at step 10; rank 1 fails after step 15 of generation 0.
cat >w.sh <<'W'
#!/bin/bash
s=0; [ "$PLAUNCH_GENERATION" -ge 1 ] && s=10
for i in $(seq 1 15); do s=$((s + 1)); echo $s > "$PLAUNCH_PROGRESS_FILE"; echo "step $s"; sleep 0.1; done
if [ "$RANK" = 1 ] && [ "$PLAUNCH_GENERATION" = 0 ]; then echo "$EPOCHREALTIME" > "$OUTDIR/fail_at"; exit 3; fi
exit 0
W
chmod +x w.sh

# jv FILE EXPR: a value of the ledger (python3 over its JSON lines: inc = the incidents, sm = the summary line)
jv() {
    python3 - "$1" "$2" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
inc = [r for r in recs if r["type"] == "incident"]
sm = [r for r in recs if r["type"] == "summary"]
sm = sm[0] if sm else {}
v = eval(sys.argv[2])
print(v if not isinstance(v, float) else "%.6f" % v)
PY
}
# within A B FRAC [ABS]: |A - B| <= FRAC * max(|A|, |B|) + ABS
within() { python3 -c "import sys; a, b, f, e = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= f * max(abs(a), abs(b)) + e else 1)" "$1" "$2" "$3" "${4:-0}"; }

t0=$(date +%s.%N)
run_plaunch --nproc-per-node 2 --max-restarts 1 --hang-timeout 2 --log-dir log ./w.sh
t1=$(date +%s.%N)
L=log/goodput.jsonl
is "$rc" 0 "the job restarts once after rank 1's failure and ends well"
is "$(jv $L 'len(inc), len(sm) > 0, len(open(sys.argv[1]).readlines())')" "(1, True, 2)" \
    "goodput.jsonl: one incident line, then the job's summary line (nothing written twice)"
is "$(jv $L 'inc[0]["cause"], inc[0]["rank"], inc[0]["node"], inc[0]["exit_code"], inc[0]["generation"], inc[0]["final"]')" \
    "('worker-failure', 1, 0, 3, 0, False)" "the incident: worker failure of rank 1 on node 0, exit 3, in generation 0"
marks=$(jv $L '" ".join(str(inc[0]["marks"][k]) for k in ["occurred", "detected", "teardown_done", "rendezvous_done", "workers_started", "first_progress"])')
ok $(python3 -c "import sys; v = sys.argv[1].split(); sys.exit(0 if 'None' not in v and all(float(a) <= float(b) for a, b in zip(v, v[1:])) else 1)" "$marks"; echo $?) \
    "every phase mark is there, in order: occurred <= detected <= teardown <= rendezvous <= started <= first progress ($marks)"
is "$(jv $L 'inc[0]["end"] == inc[0]["marks"]["first_progress"]')" True "the incident ends at the next generation's first progress"
occ=$(jv $L 'inc[0]["occurred_unix_ms"] / 1000.0')
within "$occ" "$(cat fail_at)" 0 0.25
ok $? "it occurred when the rank failed ($occ vs $(cat fail_at), 0.25 s)"
sum=$(jv $L 'sm["startup_s"] + sm["running_s"] + sm["lost_total_s"] + sm["ending_s"]')
wall=$(jv $L 'sm["wall_s"]')
within "$sum" "$wall" 0.01
ok $? "startup + running + lost + ending = wall within 1 % ($sum vs $wall s)"
phases=$(jv $L 'sum(v for v in inc[0]["phases_s"].values())')
within "$phases" "$(jv $L 'inc[0]["lost_s"]')" 0.01 0.002
ok $? "the incident's phases add up to its lost time ($phases s)"
within "$wall" "$(python3 -c "print($t1 - $t0)")" 0.1
ok $? "the ledger's wall clock is the job's ($wall s vs $(python3 -c "print(round($t1 - $t0, 3))") s measured outside)"
ok $([ "$(jv $L 'sm["steps_reported"] and sm["steps_lost"] > 0 and inc[0]["step_before"] >= 10')" = True ]; echo $?) \
    "steps are reported: steps lost to the restart counted ($(jv $L 'sm["steps_lost"]'), from step $(jv $L 'inc[0]["step_before"]'))"

# The Goodput block on the terminal says what the ledger says.
blk=$(printf '%s\n' "$err" | sed -n '/===== goodput/,/steps lost/p')
like "$blk" "goodput [0-9.]+ % of [0-9.]+ s wall" "a Goodput block ends the terminal summary"
is "$(printf '%s\n' "$blk" | sed -n 's/.*goodput \([0-9.]*\) % of \([0-9.]*\) s wall.*/\1 \2/p')" \
    "$(jv $L '"%.1f %.1f" % (sm["goodput"] * 100, sm["wall_s"])')" "its goodput and wall time are the ledger's"
got=$(printf '%s\n' "$blk" | sed -n 's/.*lost by phase: //p' | sed 's/; slowest.*//')
is "$got" "$(jv $L '", ".join("%s %.1f s" % (k, sm["lost_s"][k]) for k in ["detect", "teardown", "rendezvous", "start", "init"])')" \
    "its lost time per phase is the ledger's"
is "$(printf '%s\n' "$blk" | sed -n 's/.*slowest: \([a-z]*\).*/\1/p')" "$(jv $L 'sm["slowest_phase"]')" "the slowest phase is named"
is "$(printf '%s\n' "$blk" | sed -n 's/.*steps lost to restarts: \([0-9]*\).*/\1/p')" "$(jv $L 'sm["steps_lost"]')" \
    "the steps lost are the ledger's"
like "$blk" "incident 0  worker-failure rank 1 node 0 \([^)]*\) exit 3, generation 0" "the incident is named with its cause"
is "$(jq -r '.state + " " + (.generation|tostring) + " " + (.restarts|tostring)' log/status.json)" "done 1 1" \
    "the last status.json says the job is done, in generation 1 after 1 restart"

# plaunch report: the same block in its text, the ledger in its JSON, a Goodput section in its HTML
rep=$("$PLAUNCH" report log 2>&1)
is "$(printf '%s\n' "$rep" | sed -n '/===== goodput/,/steps lost/p')" "$blk" "plaunch report prints the same Goodput block"
is "$("$PLAUNCH" report log --json - | jq -r '[.goodput.goodput, .goodput.wall_s, (.goodput.incident_records | length)] | map(tostring) | join(" ")')" \
    "$(jq -rs '.[1].goodput, .[1].wall_s, 1' $L | tr '\n' ' ' | sed 's/ $//')" "plaunch report --json carries the ledger's summary and incident"
like "$("$PLAUNCH" report log --html - | tr '\n' ' ')" "<h2>Goodput</h2> <pre id=\"goodput\">plaunch: ===== goodput" \
    "plaunch report --html has a Goodput section"

# A node lost: 2 nodes in network namespaces, elastic 1:2; node 2's plaunch killed during generation 0.
. "$PLAUNCH_SRC/scripts/netns.sh"
. "$PLAUNCH_SRC/tests/bb/mnlib.sh"
if [ "$(id -u)" != 0 ]; then
    for i in 1 2 3 4; do echo "ok $((_tap_n + i)) # SKIP network namespaces need root"; done
    exit $_tap_failed
fi
mn_up 65 2 pg 29651
cat >n.sh <<'W'
#!/bin/bash
echo "$EPOCHREALTIME" > "$OUTDIR/start.$PLAUNCH_GENERATION.$PLAUNCH_NODE_RANK"
if [ "$PLAUNCH_GENERATION" -ge 1 ]; then echo "generation $PLAUNCH_GENERATION"; sleep 1.5; exit 0; fi
while :; do echo tick; sleep 0.2; done
W
chmod +x n.sh
for i in 1 2; do mn_node $i --nnodes 1:2 --nproc-per-node 1 ./n.sh; done
wait_for 2 "start.0.*" 30
kill_reap "$(cat pid.2)"
mn_wait 1 40
is "$wrc" 0 "node 2 killed: the survivor restarts alone and ends well"
L=log1/goodput.jsonl
is "$(jv $L 'len(inc), inc[0]["cause"], inc[0]["node"], inc[0]["final"], sm["exit_status"]')" "(1, 'node-loss', 1, False, 0)" \
    "the ledger has one node-loss incident of node 1, closed by the survivors' progress"
marks=$(jv $L '" ".join(str(inc[0]["marks"][k]) for k in ["occurred", "detected", "teardown_done", "rendezvous_done", "workers_started", "first_progress"])')
ok $(python3 -c "import sys; v = sys.argv[1].split(); sys.exit(0 if 'None' not in v and all(float(a) <= float(b) for a, b in zip(v, v[1:])) else 1)" "$marks"; echo $?) \
    "every phase of the node loss, in order ($marks)"
like "$("$PLAUNCH" status log1)" "1 +[^ ]+ +1 +lost" "plaunch status of the finished job shows node 1 lost"
done_testing
