#!/bin/bash
# probe_report.t: `plaunch probe` without GPUs: --report on the fixtures (exit codes, verdicts, JSON shape, HTML in
# headless Chromium), input errors, the no-GPU refusal, and the one-GPU live path through a stand-in NVML/worker.
# Run by prove from the repo root with PLAUNCH_BUILD (absolute build dir) and PLAUNCH_SRC (repo root).
set -u
PLAUNCH_SRC="${PLAUNCH_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
PLAUNCH_BUILD="${PLAUNCH_BUILD:-$PLAUNCH_SRC/build}"
PLAUNCH_SRC=$(cd "$PLAUNCH_SRC" && pwd)
PLAUNCH_BUILD=$(cd "$PLAUNCH_BUILD" && pwd)
FIX=$PLAUNCH_SRC/tests/fixtures/probe
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
# The live probe runs the launcher, whose default --log-dir is ./log: run from the temporary directory, so that
# `make test` never touches the log/ of `make run` in the directory the test was started from.
start=$PWD
s_log_state() { find "$start/log" -maxdepth 1 -printf '%p %s %T@\n' 2>/dev/null | sort; }
log_before=$(s_log_state)
cd "$tmp" || exit 1

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
bail() { echo "Bail out! $*"; exit 1; }

# run NAME WANT_STATUS CMD...: runs CMD with output in $tmp/out, $tmp/err and checks its exit status.
run() {
    local name=$1 want=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" = "$want" ]; then ok "$name (exit $got)"; else not_ok "$name: exit $got, want $want" "$(head -c 600 "$tmp/err")"; fi
}
# has NAME FILE TEXT: FILE contains TEXT (fixed string).
has() {
    if grep -qF -- "$3" "$2"; then ok "$1"; else not_ok "$1: '$3' not in $(basename "$2")" "$(head -c 600 "$2")"; fi
}

PLAUNCH=$PLAUNCH_BUILD/bin/plaunch

# ---- --report on the fixtures ---------------------------------------------------------------------------
run "clean fixture reports no flag" 0 "$PLAUNCH" probe --report "$FIX/synthetic-h200x8-clean.json"
has "clean fixture: table says 0 flags" "$tmp/out" "Verdicts (0 flags)"
has "clean fixture: efficiency verdict" "$tmp/out" "scaling efficiency meets the thresholds"

# measured on the lent H200 machine (1 GPU) on 2026-12-02 by scripts/gpu-check.sh
run "measured H200 fixture re-analyses cleanly" 0 "$PLAUNCH" probe --report "$FIX/measured-h200x1-2026-12-02.json"
has "measured H200 fixture: CUDA 13.0 driver and runtime, NCCL 2.28.9" "$tmp/out" "CUDA driver 13.0 >= runtime 13.0"
run "PCIe fixture fires flags" 3 "$PLAUNCH" probe --report "$FIX/synthetic-pcie8-flags.json" \
    --json "$tmp/pcie.json" --html "$tmp/pcie.html"
has "PCIe fixture: mismatch verdict" "$tmp/out" "CUDA mismatch on host synthetic-pcie-box"
has "PCIe fixture: P2P verdict" "$tmp/out" "no P2P between ranks 2 and 5"
has "PCIe fixture: sublinear flag with its reason" "$tmp/out" "sublinear scaling at N=8: efficiency 0.62 is below the 0.75 threshold"

run "two-node fixture fires flags" 3 "$PLAUNCH" probe --report "$FIX/synthetic-2node-flags.json" -q
has "two-node fixture, -q: only the summary line" "$tmp/err" "2 flag(s) fired"
[ ! -s "$tmp/out" ] && ok "-q: no table on stdout" || not_ok "-q printed a table"
run "two-node fixture: table names the network" 3 "$PLAUNCH" probe --report "$FIX/synthetic-2node-flags.json"
has "two-node fixture: inter-node verdict" "$tmp/out" "the network is the bottleneck"

printf '[efficiency]\nmin_at_2 = 0.99\n' >"$tmp/strict.ini" # a file: a pipe such as <(...) is refused
run "stricter thresholds flag the clean fixture" 3 "$PLAUNCH" probe --report "$FIX/synthetic-h200x8-clean.json" \
    --thresholds "$tmp/strict.ini"
has "stricter thresholds: N=2 flagged" "$tmp/out" "sublinear scaling at N=2"

# ---- the JSON report: shape, nccl-tests definitions, round trip ---------------------------------------------
if python3 - "$tmp/pcie.json" >"$tmp/shape" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "plaunch-probe/1"
assert d["source"].startswith("synthetic:"), "fixtures must say they are synthetic"
assert isinstance(d["hosts"], list) and d["hosts"]
for k in ("min_bytes", "max_bytes", "grad_bytes", "iters"):
    assert isinstance(d["config"][k], int), k
for g in d["preflight"]["gpus"]:
    for k in ("rank", "host", "name", "memory_bytes", "compute_capability", "driver_cuda_version",
              "runtime_cuda_version", "nccl_version"):
        assert k in g, "gpu field " + k
for p in d["preflight"]["p2p"]:
    assert len(p["matrix"]) == len(p["ranks"]) and all(len(r) == len(p["ranks"]) for r in p["matrix"])
for s in d["sweeps"]:
    n = s["n"]
    for r in s["results"]:
        algbw = r["bytes"] / r["time_us"] / 1e3
        assert abs(r["algbw_gbps"] - algbw) <= 1e-6 * algbw, "algbw = bytes/time"
        assert abs(r["busbw_gbps"] - algbw * 2 * (n - 1) / n) <= 1e-6 * algbw, "busbw = algbw*2(n-1)/n"
        assert isinstance(r["verified"], bool)
n = len(d["preflight"]["gpus"])
assert len(d["pairwise"]["gbps"]) == n
for st in d["steps"]:
    assert st["step_time_us"] > 0 and st["throughput"] > 0
a = d["analysis"]
flags = [v for v in a["verdicts"] if v["severity"] == "flag"]
assert a["flags"] == len(flags) == 5 and a["exit_status"] == 3, a["flags"]
assert all(v["reason"] for v in flags), "every flag here has a reason in the data"
assert {g["n"] for g in a["groups"]} == {1, 2, 4, 8}
g8 = [g for g in a["groups"] if g["n"] == 8][0]
assert g8["efficiency_flag"] and g8["busbw_flag"] and abs(g8["threshold"] - 0.75) < 1e-12
print("shape ok")
EOF
then ok "JSON report has the schema's shape and nccl-tests' bandwidths"; else not_ok "JSON report shape" "$(cat "$tmp/shape")"; fi
run "JSON report reads back with --report" 3 "$PLAUNCH" probe --report "$tmp/pcie.json" --json "$tmp/pcie2.json" -q
if python3 -c 'import json,sys; a,b=(json.load(open(p))["analysis"] for p in sys.argv[1:]); sys.exit(a!=b)' \
    "$tmp/pcie.json" "$tmp/pcie2.json"; then ok "round trip gives the same analysis"; else not_ok "round trip changed the analysis"; fi

# ---- every collective: nccl-tests' busbw factors by hand, per op and placement ----------------------------------
run "every-op fixture reports no flag" 0 "$PLAUNCH" probe --report "$FIX/synthetic-h200x8-ops.json" \
    --json "$tmp/ops.json" --html "$tmp/ops.html"
for t in "# AllReduce (all_reduce_perf), N=8" "# AllGather (all_gather_perf), N=8" \
    "# ReduceScatter (reduce_scatter_perf), N=8" "# Broadcast (broadcast_perf), N=8" "# AlltoAll (alltoall_perf), N=8"; do
    has "every-op table: ${t#\# }" "$tmp/out" "$t"
done
has "every-op table: nccl-tests' Avg bus bandwidth line" "$tmp/out" "# Avg bus bandwidth    : "
has "every-op table: timing named" "$tmp/out" "timing: host wall clock around the timed loop, nccl-tests' method"
if python3 - "$tmp/ops.json" >"$tmp/ops.check" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
# busbw / algbw, written out by hand for the group sizes of the fixture (nccl-tests' src/*.cu getBw)
HAND = {"allreduce": {1: 0, 2: 1, 4: 1.5, 8: 1.75}, "allgather": {1: 0, 2: 0.5, 4: 0.75, 8: 0.875},
        "reducescatter": {1: 0, 2: 0.5, 4: 0.75, 8: 0.875}, "alltoall": {1: 0, 2: 0.5, 4: 0.75, 8: 0.875},
        "broadcast": {1: 1, 2: 1, 4: 1, 8: 1}}
seen = set()
for s in d["sweeps"]:
    f, figures = HAND[s["op"]][s["n"]], []
    seen.add(s["op"])
    for r in s["results"]:
        for p in (r, r["in_place"]):
            algbw = r["bytes"] / p["time_us"] / 1e3
            assert abs(p["algbw_gbps"] - algbw) <= 1e-6 * algbw, (s["op"], s["n"], "algbw")
            assert abs(p["busbw_gbps"] - algbw * f) <= 1e-6 * algbw, (s["op"], s["n"], "busbw")
            figures.append(p["busbw_gbps"])
    avg = sum(figures) / len(figures)
    assert abs(s["avg_busbw_gbps"] - avg) <= 1e-6 * (1 + avg), (s["op"], s["n"], "Avg bus bandwidth")
assert seen == set(HAND), seen
ag = [s for s in d["sweeps"] if s["op"] == "allgather" and s["n"] == 8][0]["results"][-1]
assert ag["bytes"] == 1 << 30 and ag["count"] == 1 << 25, ag  # 2^28 floats gathered from 8 ranks
g8 = [g for g in d["analysis"]["groups"] if g["n"] == 8][0]
assert set(g8["by_op"]) == set(HAND) and not g8["busbw_flag"]
assert d["analysis"]["timing"] == "host"
print("every op ok")
EOF
then ok "every-op JSON: algbw, busbw (factors by hand) and Avg bus bandwidth per op and placement"
else not_ok "every-op JSON" "$(cat "$tmp/ops.check")"; fi
run "FSDP fixture fires flags" 3 "$PLAUNCH" probe --report "$FIX/synthetic-fsdp8-flags.json"
has "FSDP fixture: the all-gather's busbw drop named" "$tmp/out" "AllGather busbw drop at N=8"
has "FSDP fixture: the step's collectives named" "$tmp/out" "the reduce-scatter + all-gather of 87.0 MB takes"
has "FSDP fixture: wrong in-place data named" "$tmp/out" "wrong AllGather result at N=4 (first-n): 1 of 11 sizes failed the check (in place)"
# measured on the lent H200 (1 GPU) on 2026-12-03: every collective, nccl-tests' timing
run "measured every-op H200 fixture re-analyses cleanly" 0 "$PLAUNCH" probe --report "$FIX/measured-h200x1-2026-12-03-ops.json"
n_tables=$(grep -c '^# .*_perf), N=1, first-n' "$tmp/out")
[ "$n_tables" = 5 ] && ok "measured every-op fixture: five nccl-tests tables" || not_ok "measured every-op fixture tables: $n_tables"
has "measured every-op fixture: verified" "$tmp/out" "verification: all 110 results were checked after timing and are correct"
run "schema-1 file: CUDA-event timing labelled" 0 "$PLAUNCH" probe --report "$FIX/measured-h200x1-2026-12-02.json"
has "schema-1 file: the label" "$tmp/out" "timing: CUDA events around the timed loop (--timing events; not nccl-tests' method)"

# ---- the HTML report in headless Chromium -------------------------------------------------------------------
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    "$PLAUNCH_SRC/scripts/deps.sh" --browser >/dev/null 2>&1 || true
fi
if command -v chromium >/dev/null 2>&1; then
    chrome() {
        timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --user-data-dir="$(mktemp -d "$tmp/chrome.XXXXXX")" "$@" 2>>"$tmp/chrome.err"
    }
    chrome --screenshot="$tmp/pcie.png" --window-size=1200,2000 "file://$tmp/pcie.html" >/dev/null
    read -r w h colours nonwhite < <(python3 "$PLAUNCH_SRC/tests/bb/probe_png.py" "$tmp/pcie.png" 2>&1)
    if [ "${colours:-0}" -gt 200 ] 2>/dev/null && python3 -c "import sys; sys.exit(not float('$nonwhite') > 0.05)"; then
        ok "HTML screenshot is not blank (${w}x$h, $colours colours, $nonwhite non-white)"
    else
        not_ok "HTML screenshot looks blank" "png: ${w:-?} ${h:-?} ${colours:-?} ${nonwhite:-?}" "$(tail -3 "$tmp/chrome.err")"
    fi
    chrome --dump-dom "file://$tmp/pcie.html" >"$tmp/dom.html"
    has "DOM has the busbw chart" "$tmp/dom.html" '<svg id="chart-busbw-allreduce"'
    has "DOM has the efficiency chart" "$tmp/dom.html" '<svg id="chart-efficiency"'
    has "DOM has the ideal line" "$tmp/dom.html" 'class="ideal"'
    has "DOM has the threshold markers" "$tmp/dom.html" '<g class="threshold">'
    has "DOM lists the flags" "$tmp/dom.html" '<li class="flag" data-kind="efficiency">'
    has "DOM shows the P2P flag text" "$tmp/dom.html" 'no P2P between ranks 2 and 5'
    lines=$(grep -o '<g class="series"' "$tmp/dom.html" | wc -l)
    [ "$lines" = 3 ] && ok "busbw chart has one line per N (N=2, 4, 8)" || not_ok "busbw chart lines: $lines, want 3"
    grep -qE '(src|href)="(https?:)?//' "$tmp/pcie.html" && not_ok "HTML loads something from outside" ||
        ok "HTML is self-contained"
    chrome --dump-dom "file://$tmp/ops.html" >"$tmp/dom-ops.html"
    charts=$(grep -o '<svg id="chart-busbw-[a-z]*"' "$tmp/dom-ops.html" | sort -u | wc -l)
    [ "$charts" = 5 ] && ok "every-op HTML: one busbw chart per collective" || not_ok "every-op HTML charts: $charts, want 5"
    tables=$(grep -o '<table class="sweep" data-op=' "$tmp/dom-ops.html" | wc -l)
    [ "$tables" = 20 ] && ok "every-op HTML: one nccl-tests table per sweep (5 ops x 4 N)" ||
        not_ok "every-op HTML tables: $tables, want 20"
else
    for t in screenshot busbw-chart efficiency-chart ideal thresholds flags p2p-text series self-contained op-charts op-tables; do
        skip "chromium cannot be installed here: HTML $t not checked"
    done
fi

# ---- input and usage errors: exit 2 and a message naming the file or field ------------------------------------
run "missing input file" 2 "$PLAUNCH" probe --report "$tmp/nope.json"
has "missing input: names the file" "$tmp/err" "cannot open measurement file '$tmp/nope.json'"
printf '{"schema": "plaunch-probe/1",\n "source": }\n' >"$tmp/bad.json"
run "invalid JSON" 2 "$PLAUNCH" probe --report "$tmp/bad.json"
has "invalid JSON: names file:line:column" "$tmp/err" "$tmp/bad.json:2:"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["sweeps"][1]["results"][0]["time_us"]; json.dump(d, open(sys.argv[2], "w"))' \
    "$FIX/synthetic-h200x8-clean.json" "$tmp/field.json"
run "missing field" 2 "$PLAUNCH" probe --report "$tmp/field.json"
has "missing field: names the field" "$tmp/err" "field sweeps[1].results[0].time_us is missing"
printf '[efficiency]\nmin_at_2 = 0.9\nmin_at_four = 0.8\n' >"$tmp/bad.ini"
run "unknown threshold key" 2 "$PLAUNCH" probe --report "$FIX/synthetic-h200x8-clean.json" --thresholds "$tmp/bad.ini"
has "unknown threshold key: names file:line" "$tmp/err" "$tmp/bad.ini:3: unknown key 'min_at_four' in [efficiency]"
run "unknown option" 2 "$PLAUNCH" probe --frobnicate
run "--report with a measurement option" 2 "$PLAUNCH" probe --report "$FIX/synthetic-h200x8-clean.json" -b 1M
run "bad size" 2 "$PLAUNCH" probe -e 12Q
has "bad size: names the value" "$tmp/err" "'12Q' is not a byte size for -e"
run "bad --op" 2 "$PLAUNCH" probe --op allreduce,all_gather
has "bad --op: names it and lists the valid ones" "$tmp/err" "--op 'allreduce,all_gather': 'all_gather' is not a collective; valid: allreduce, allgather, reducescatter, broadcast, alltoall, or all (every one), comma-separated"
run "empty --op entry" 2 "$PLAUNCH" probe --op allreduce,
run "bad -d" 2 "$PLAUNCH" probe -d fp8
has "bad -d: lists the valid ones" "$tmp/err" "-d 'fp8' is not a data type the probe measures; valid: float, half, bfloat16"
run "bad --timing" 2 "$PLAUNCH" probe --timing gpu
has "bad --timing: lists the valid ones" "$tmp/err" "--timing 'gpu': valid: host (nccl-tests' method, the default), events"
run "--report with --op" 2 "$PLAUNCH" probe --report "$FIX/synthetic-h200x8-clean.json" --op allgather
run "unwritable --html" 2 "$PLAUNCH" probe --report "$FIX/synthetic-h200x8-clean.json" --html /nonexistent/dir/r.html
has "unwritable --html: names the path" "$tmp/err" "/nonexistent/dir/r.html: cannot write"

# ---- no GPU: say so and exit non-zero ---------------------------------------------------------------------------
PLAUNCH_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 run "no GPU: refused" 1 "$PLAUNCH" probe
has "no GPU: says so" "$tmp/err" "no NVIDIA GPU here"
has "no GPU: points to --report" "$tmp/err" "plaunch probe --report FILE.json"
CUDA_VISIBLE_DEVICES= run "CUDA_VISIBLE_DEVICES empty: refused" 1 "$PLAUNCH" probe
has "CUDA_VISIBLE_DEVICES empty: says so" "$tmp/err" "hides every GPU"

# ---- one GPU, live: a stand-in NVML and worker check what plaunch hands the worker -------------------------------
if cc -I"$PLAUNCH_SRC" -shared -fPIC -o "$tmp/libfake_nvml.so" "$PLAUNCH_SRC/tests/bb/fake_nvml.c" "$PLAUNCH_SRC/tests/bb/fake_nvml_script.c"; then
    cat >"$tmp/worker" <<EOF
#!/bin/bash
# stand-in worker: records its environment and arguments, then writes the clean fixture to --out
echo "RANK=\$RANK WORLD_SIZE=\$WORLD_SIZE LOCAL_RANK=\$LOCAL_RANK CVD=\$CUDA_VISIBLE_DEVICES NVLS=\$NCCL_NVLS_ENABLE args=\$*" >"$tmp/worker.log"
while [ \$# -gt 0 ]; do [ "\$1" = --out ] && out=\$2; shift; done
[ -n "\${FAIL:-}" ] && exit 1
cp "$FIX/synthetic-h200x8-clean.json" "\$out"
EOF
    chmod +x "$tmp/worker"
    export PLAUNCH_NVML_LIBRARY=$tmp/libfake_nvml.so PLAUNCH_PROBE_WORKER=$tmp/worker
    NCCL_NVLS_ENABLE=1 run "one GPU: live probe reports" 0 "$PLAUNCH" probe --gpus 3 -b 2M --no-pairwise \
        --op reducescatter,allgather -d bfloat16 --timing events --json "$tmp/live.json"
    has "one GPU: worker got rank, world, GPU and NVLS off" "$tmp/worker.log" "RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 CVD=3 NVLS=0"
    has "one GPU: worker got the options" "$tmp/worker.log" "-b 2M --op reducescatter,allgather -d bfloat16 --timing events --no-pairwise --out /"
    [ -s "$tmp/live.json" ] && ok "one GPU: --json written" || not_ok "one GPU: --json missing"
    FAIL=1 run "one GPU: failing worker" 1 "$PLAUNCH" probe --gpus 0
    has "one GPU: failing worker named" "$tmp/err" "the probe workers failed (status 1)"
    FAKE_NVML_COUNT=4 run "four GPUs: one worker per GPU through the launcher" 0 "$PLAUNCH" probe --gpus 0-3 -q
    has "four GPUs: a world of four ranks" "$tmp/worker.log" "WORLD_SIZE=4 LOCAL_RANK="
    has "four GPUs: all four visible, NVLS off" "$tmp/worker.log" "CVD=0,1,2,3 NVLS=0"
    unset PLAUNCH_NVML_LIBRARY PLAUNCH_PROBE_WORKER
else
    for t in live worker-env worker-args json failing four-gpus four-gpus-msg x; do skip "no C compiler for the stand-in NVML: $t"; done
fi

# ---- the CUDA worker: built where nvcc and nccl.h exist, and it explains itself without a GPU ---------------------
worker=$PLAUNCH_BUILD/bin/plaunch-probe-worker
if [ -x "$worker" ]; then
    ok "CUDA worker was built"
    RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 run "CUDA worker without a usable GPU fails" 1 "$worker" --out "$tmp/w.json" -e 1M
    grep -qE "host .* pid [0-9]+ rank 0: " "$tmp/err" && ok "CUDA worker's error names host, pid and rank" ||
        not_ok "CUDA worker's error lacks host/pid/rank" "$(cat "$tmp/err")"
elif [ "$(basename "$PLAUNCH_BUILD")" = san ]; then
    skip "sanitizer build: the CUDA worker is not built there (nvcc does not link the sanitizer runtimes)"
    skip "worker not built"
    skip "worker not built"
elif command -v nvcc >/dev/null 2>&1; then
    not_ok "nvcc is here but $worker was not built"
    skip "worker not built"
    skip "worker not built"
else
    skip "no nvcc: the CUDA worker is not built here"
    skip "no nvcc"
    skip "no nvcc"
fi

[ "$(s_log_state)" = "$log_before" ] && ok "nothing written into $start/log" ||
    not_ok "the test wrote into $start/log" "$(s_log_state | head -5)"

echo "1..$n"
