#!/bin/bash
# compare-nccl-tests.sh: runs `plaunch probe` and the matching nccl-tests *_perf on the same GPUs and sizes,
# alternating, and prints both with their ratio per size (docs/probe.md, "Agreement with nccl-tests").
set -u
usage() {
    cat <<'EOF'
usage: scripts/compare-nccl-tests.sh [--nccl-tests DIR | --src DIR] [--build-only] [--op LIST] [-g N]
                                     [-b SIZE] [-e SIZE] [-f F] [-n ITERS] [-w WARMUP] [-d TYPE]
                                     [--repeat K] [--out DIR] [--plaunch PATH] [--label TEXT]
  --nccl-tests DIR  the directory holding all_reduce_perf, all_gather_perf, ... (built nccl-tests)
  --src DIR         build nccl-tests from this source tree into build/nccl-tests (default when neither is
                    given: clone https://github.com/NVIDIA/nccl-tests into build/nccl-tests-src first)
  --build-only      build nccl-tests and stop (CUDA_HOME, NCCL_HOME and NVCC_GENCODE are honoured)
  --op LIST         collectives (default all): allreduce, allgather, reducescatter, broadcast, alltoall
  -g N              GPUs 0..N-1 (default 1): the probe's N-rank sweep against *_perf -g N (one process)
  -b -e -f -n -w -d as both tools read them (default 8 1G 2 20 5 float)
  --repeat K        alternating rounds (default 3; odd rounds run the probe first); each tool's median is used
  --out DIR         keep the raw outputs there (default: a temporary directory, removed)
  --label TEXT      first line of the report (default: GPU name and count, date, NCCL version)
  --report DIR      print the report of runs kept by an earlier --out DIR (same --op, -g, --repeat), run nothing
Target (issue 13): within 3% at every size >= 1 MiB and within 10% below. Exit 0 all sizes within target,
3 some size missed it, 1 a run failed, 2 usage.
EOF
}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NT="" SRC="" BUILD_ONLY=0 REPORT="" OPS=all G=1 B=8 E=1G F=2 N=20 W=5 D=float K=3 OUT="" PL="$ROOT/build/bin/plaunch" LABEL=""
while [ $# -gt 0 ]; do
    case $1 in
    --nccl-tests) NT=${2:?}; shift ;;
    --src) SRC=${2:?}; shift ;;
    --build-only) BUILD_ONLY=1 ;;
    --op) OPS=${2:?}; shift ;;
    -g) G=${2:?}; shift ;;
    -b) B=${2:?}; shift ;;
    -e) E=${2:?}; shift ;;
    -f) F=${2:?}; shift ;;
    -n) N=${2:?}; shift ;;
    -w) W=${2:?}; shift ;;
    -d) D=${2:?}; shift ;;
    --repeat) K=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    --plaunch) PL=${2:?}; shift ;;
    --label) LABEL=${2:?}; shift ;;
    --report) REPORT=${2:?}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare-nccl-tests.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
    esac
    shift
done
case $K in '' | *[!0-9]* | 0) echo "compare-nccl-tests.sh: --repeat '$K': give a whole number >= 1" >&2; exit 2 ;; esac
case $G in '' | *[!0-9]* | 0) echo "compare-nccl-tests.sh: -g '$G': give a whole number >= 1" >&2; exit 2 ;; esac
[ "$OPS" = all ] && OPS=allreduce,allgather,reducescatter,broadcast,alltoall
export NCCL_NVLS_ENABLE=0 # never NVLink multicast, in either tool

# ---- nccl-tests: given, or built from source ---------------------------------------------------------------
perf_of() {
    case $1 in
    allreduce) echo all_reduce_perf ;; allgather) echo all_gather_perf ;; reducescatter) echo reduce_scatter_perf ;;
    broadcast) echo broadcast_perf ;; alltoall) echo alltoall_perf ;;
    *) echo "compare-nccl-tests.sh: --op '$1' is not one of allreduce, allgather, reducescatter, broadcast, alltoall" >&2
       exit 2 ;;
    esac
}
for op in ${OPS//,/ }; do perf_of "$op" >/dev/null || exit 2; done
gpus=$(seq -s, 0 $((G - 1)))
if [ -n "$REPORT" ]; then
    OUT=$REPORT
elif [ -z "$NT" ]; then
    NT=$ROOT/build/nccl-tests
    if [ -z "$SRC" ]; then
        SRC=$ROOT/build/nccl-tests-src
        if [ ! -d "$SRC/src" ]; then
            echo "compare-nccl-tests.sh: cloning nccl-tests into $SRC (give --src DIR or --nccl-tests DIR offline)" >&2
            git clone -q --depth 1 https://github.com/NVIDIA/nccl-tests "$SRC" || exit 1
        fi
    fi
    [ -d "$SRC/src" ] || { echo "compare-nccl-tests.sh: $SRC has no src/: give the nccl-tests source tree" >&2; exit 1; }
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
    gencode=${NVCC_GENCODE:-${cc:+-gencode=arch=compute_$cc,code=sm_$cc}}
    targets=()
    for op in ${OPS//,/ }; do targets+=("$NT/$(perf_of "$op")"); done
    echo "compare-nccl-tests.sh: building ${targets[*]##*/} from $SRC (a few minutes)" >&2
    make -s -C "$SRC/src" -j"$(nproc)" BUILDDIR="$NT" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
        NCCL_HOME="${NCCL_HOME:-/usr/local/cuda}" ${gencode:+NVCC_GENCODE="$gencode"} "${targets[@]}" >&2 || exit 1
fi
[ "$BUILD_ONLY" = 1 ] && exit 0

# ---- alternating runs ----------------------------------------------------------------------------------------
run_probe() { # op round
    "$PL" probe --gpus "$gpus" --op "$1" -b "$B" -e "$E" -f "$F" -n "$N" -w "$W" -d "$D" --no-pairwise \
        --grad-bytes 1M --step-gflop 0.01 -q --json "$OUT/probe-$1-$2.json" >"$OUT/probe-$1-$2.log" 2>&1
    local rc=$?
    [ $rc = 0 ] || [ $rc = 3 ] || { echo "compare-nccl-tests.sh: plaunch probe --op $1 failed (exit $rc):" >&2
                                    tail -5 "$OUT/probe-$1-$2.log" >&2; return 1; }
}
run_nccl() { # op round
    "$NT/$(perf_of "$1")" -b "$B" -e "$E" -f "$F" -n "$N" -w "$W" -d "$D" -g "$G" -c 1 >"$OUT/nccl-$1-$2.txt" 2>&1 ||
        { echo "compare-nccl-tests.sh: $(perf_of "$1") failed:" >&2; tail -5 "$OUT/nccl-$1-$2.txt" >&2; return 1; }
}
if [ -z "$REPORT" ]; then
    for op in ${OPS//,/ }; do
        [ -x "$NT/$(perf_of "$op")" ] || { echo "compare-nccl-tests.sh: $NT/$(perf_of "$op") is missing" >&2; exit 1; }
    done
    [ -x "$PL" ] || { echo "compare-nccl-tests.sh: $PL is missing: run make, or give --plaunch PATH" >&2; exit 1; }
    if [ -n "$OUT" ]; then mkdir -p "$OUT" || exit 1; else OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
    for op in ${OPS//,/ }; do
        for i in $(seq 1 "$K"); do
            if [ $((i % 2)) = 1 ]; then run_probe "$op" "$i" && run_nccl "$op" "$i"
            else run_nccl "$op" "$i" && run_probe "$op" "$i"; fi || exit 1
            echo "compare-nccl-tests.sh: $op round $i of $K done" >&2
        done
    done
fi

# ---- the report -----------------------------------------------------------------------------------------------
[ -n "$LABEL" ] || LABEL="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) x$G, $(date -u +%F)"
python3 - "$OUT" "$OPS" "$G" "$K" "$LABEL" "plaunch probe --gpus $gpus -b $B -e $E -f $F -n $N -w $W -d $D" \
    "-b $B -e $E -f $F -n $N -w $W -d $D -g $G -c 1" <<'EOF'
import json, statistics, sys
out, ops, g, k, label, pcmd, ncmd = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4]), *sys.argv[5:]
PERF = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf", "reducescatter": "reduce_scatter_perf",
        "broadcast": "broadcast_perf", "alltoall": "alltoall_perf"}

def nccl_rows(path):
    """size -> (oop us, ip us), the header line naming versions, and the Avg bus bandwidth."""
    rows, head, avg = {}, "", float("nan")
    for line in open(path):
        if line.startswith("# nccl-tests version"):
            head = line[2:].strip()
        if line.startswith("# Avg bus bandwidth"):
            avg = float(line.split(":")[1].split()[0])
        f = line.split()
        if line.startswith("#") or len(f) < 13 or not f[0].isdigit():
            continue
        rows[int(f[0])] = (float(f[5]), float(f[9]))
    return rows, head, avg

def probe_rows(path):
    d = json.load(open(path))
    nccl = d["preflight"]["gpus"][0].get("nccl_version", 0)
    for s in d["sweeps"]:
        if s["n"] == g and s.get("group", "first-n") == "first-n":
            return ({r["bytes"]: (r["time_us"], r["in_place"]["time_us"]) for r in s["results"]}, nccl,
                    d["config"]["timing"], s.get("avg_busbw_gbps", float("nan")))
    sys.exit("compare-nccl-tests.sh: %s has no N=%d sweep" % (path, g))

def med(runs, size, i):
    v = [r[size][i] for r in runs if size in r]
    return statistics.median(v) if v else float("nan")

def spread(runs, size, i):
    """how far one tool's rounds lie apart: (max - min) / median, in percent"""
    v = [r[size][i] for r in runs if size in r]
    return 100 * (max(v) - min(v)) / statistics.median(v) if v and statistics.median(v) > 0 else float("nan")

total = miss = 0
within = {}  # (placement, >= 1 MiB) -> [sizes within target, sizes]
first = True
for op in ops:
    nr = [nccl_rows("%s/nccl-%s-%d.txt" % (out, op, i)) for i in range(1, k + 1)]
    pr = [probe_rows("%s/probe-%s-%d.json" % (out, op, i)) for i in range(1, k + 1)]
    nruns, pruns = [x[0] for x in nr], [x[0] for x in pr]
    navg, pavg = [x[2] for x in nr], [x[3] for x in pr]
    if first:
        v = pr[0][1]
        print("# %s, NCCL %d.%d.%d; %s" % (label, v // 10000, v % 10000 // 100, v % 100, nr[0][1]))
        print("# probe: %s --op OP (timing: %s); nccl-tests: *_perf %s" % (pcmd, pr[0][2], ncmd))
        print("# median of %d alternating runs of each; ratio = probe algbw / nccl-tests algbw (= nccl time / probe time);"
              % k)
        print("# spread = (max - min) / median of nccl-tests' own runs, in %: how well nccl-tests agrees with itself")
        print("# target: ratio within 1 +- 0.03 at >= 1 MiB, 1 +- 0.10 below")
        first = False
    print("#\n# %s: plaunch probe --op %s vs %s" % (op, op, PERF[op]))
    print("# %11s  %9s %9s %6s %6s   %9s %9s %6s %6s  %s" % ("size (B)", "probe us", "nccl us", "ratio", "spread",
                                                            "probe ip", "nccl ip", "ratio", "spread", "within target"))
    sizes = sorted(set(pruns[0]) & set(nruns[0]))
    for size in sizes:
        cells, ok = [], True
        for i in (0, 1):
            p, n = med(pruns, size, i), med(nruns, size, i)
            ratio = n / p if p > 0 else float("nan")
            good = abs(ratio - 1) <= (0.03 if size >= 1 << 20 else 0.10)
            ok &= good
            w = within.setdefault((i, size >= 1 << 20), [0, 0])
            w[0] += good
            w[1] += 1
            cells += [p, n, ratio, spread(nruns, size, i)]
        total += 1
        miss += not ok
        verdict = "ok" if ok else "MISS (%s)" % " and ".join(
            n for n, c in (("out of place", cells[2]), ("in place", cells[6]))
            if abs(c - 1) > (0.03 if size >= 1 << 20 else 0.10))
        print("  %11d  %9.2f %9.2f %6.3f %5.0f%%   %9.2f %9.2f %6.3f %5.0f%%  %s" % (size, *cells, verdict))
    print("# %s: Avg bus bandwidth (median of the runs): probe %g, nccl-tests %g GB/s"
          % (op, statistics.median(pavg), statistics.median(navg)))
print("#")
for (i, big), (good, n) in sorted(within.items()):
    print("# %-12s %-9s: %d of %d within %s" % ("out of place" if i == 0 else "in place",
                                               ">= 1 MiB" if big else "< 1 MiB", good, n, "3%" if big else "10%"))
print("# %d of %d sizes within target in both placements%s" % (total - miss, total, "" if miss == 0 else
                                                               ": %d MISS" % miss))
sys.exit(3 if miss else 0)
EOF
