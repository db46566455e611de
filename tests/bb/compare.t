#!/bin/bash
# compare.t: scripts/compare-nccl-tests.sh --report on hand-made rounds of both tools: the ratio is nccl-tests' time
# over the probe's, each verdict (ok, noise, no-op, MISS) where its rule says, the exit status, usage errors.
# Run by prove from the repo root with PLAUNCH_SRC (repo root); needs no GPU and no build.
set -u
PLAUNCH_SRC="${PLAUNCH_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
CMP=$PLAUNCH_SRC/scripts/compare-nccl-tests.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
# row NAME SIZE PATTERN: the report's line for SIZE matches the extended regular expression PATTERN
row() {
    local line
    line=$(awk -v s="$2" '$1 == s' "$tmp/out")
    if echo "$line" | grep -qE -- "$3"; then ok "$1"; else not_ok "$1" "line: $line" "want: $3"; fi
}

# mk DIR ROUND "SIZE:PROBE_OOP:PROBE_IP:NCCL_OOP:NCCL_IP ...": one round of each tool, times in microseconds
mk() {
    local d=$1 r=$2 probe="" nccl="" sep="" s po pi no ni
    mkdir -p "$d"
    for cell in $3; do
        IFS=: read -r s po pi no ni <<<"$cell"
        probe+="$sep{\"bytes\": $s, \"time_us\": $po, \"in_place\": {\"time_us\": $pi}}"
        sep=", "
        nccl+=$(printf '%12d %12d float sum -1 %7.2f 0.00 0.00 0 %7.2f 0.00 0.00 0' "$s" $((s / 4)) "$no" "$ni")$'\n'
    done
    printf '{"preflight": {"gpus": [{"nccl_version": 22809}]}, "config": {"timing": "host"},
  "sweeps": [{"n": 1, "group": "first-n", "avg_busbw_gbps": 0, "results": [%s]}]}\n' "$probe" >"$d/probe-allreduce-$r.json"
    { echo "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809"; printf '%s' "$nccl"
      echo "# Avg bus bandwidth    : 0 "; } >"$d/nccl-allreduce-$r.txt"
}

# 1 MiB agrees (ok); 2 MiB: nccl-tests 20 % slower in every round (MISS); 4 MiB: 15 % apart in the medians but the
# rounds overlap (noise); 1 KiB: 8 % apart, under the 10 % below 1 MiB (ok). In place on one GPU: no-op unless ok.
D=$tmp/runs
mk "$D" 1 "1024:5.0:0.3:5.4:0.3 1048576:10:0.3:10.1:0.6 2097152:10:0.3:12:0.3 4194304:8:0.3:11:0.3"
mk "$D" 2 "1024:5.0:0.3:5.4:0.3 1048576:10:0.3:10.2:0.6 2097152:10:0.3:12:0.3 4194304:12:0.3:13:0.3"
mk "$D" 3 "1024:5.0:0.3:5.4:0.3 1048576:10:0.3:10.0:0.6 2097152:10:0.3:12:0.3 4194304:10:0.3:11.5:0.3"
"$CMP" --report "$D" --op allreduce --repeat 3 --label "hand-made" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 3 ]; then ok "a MISS exits 3"; else not_ok "a MISS exits 3: got $rc" "$(head -c 600 "$tmp/err")"; fi
row "1 KiB: 8 % apart is within 10 % below 1 MiB" 1024 " 1\.080 .* ok / ok$"
row "1 MiB: ratio = nccl-tests' median time / the probe's (10.1 / 10)" 1048576 " 1\.010 .* ok / no-op$"
row "2 MiB: 20 % apart in every round is a MISS" 2097152 " 1\.200 .*MISS / ok$"
row "4 MiB: 15 % apart in the medians but overlapping rounds is noise" 4194304 " 1\.150 .* noise / ok$"
row "the spread is (max - min) / median: probe 8..12 us at 4 MiB is 40 %" 4194304 "10\.00  40%"
if grep -q "^# out of place >= 1 MiB  (target 3%): 1 ok, 1 noise, 1 MISS" "$tmp/out"; then ok "the counts per class"
else not_ok "the counts per class" "$(grep '^# out of place' "$tmp/out")"; fi
if grep -q "^# 3 of 4 sizes without a MISS in either placement: 1 MISS" "$tmp/out"; then ok "the summary line"
else not_ok "the summary line" "$(tail -2 "$tmp/out")"; fi

# agreement, noise and no-op only: exit 0
D2=$tmp/runs2
for r in 1 2 3; do mk "$D2" $r "1048576:10:0.3:10.1:0.6 4194304:$((7 + r * 2)):0.3:11.5:0.3"; done
"$CMP" --report "$D2" --op allreduce --repeat 3 --label "hand-made" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ]; then ok "no MISS exits 0"; else not_ok "no MISS exits 0: got $rc" "$(head -c 600 "$tmp/out")"; fi

# usage errors name the problem
"$CMP" --report "$D" --op allreduse >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q "allreduse' is not one of allreduce, allgather" "$tmp/err"; then ok "a bad --op exits 2 with the list"
else not_ok "a bad --op exits 2 with the list: got $rc" "$(cat "$tmp/err")"; fi
"$CMP" --report "$D" --op allreduce --repeat x >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q "repeat 'x'" "$tmp/err"; then ok "a bad --repeat exits 2"; else not_ok "a bad --repeat exits 2: got $rc" "$(cat "$tmp/err")"; fi
echo "1..$n"
