#!/bin/bash
# fuzz.t: the wire decoder survives a short libFuzzer run (ASan + UBSan) without a crash, leak or UB report.
set -u
src="${PLAUNCH_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
echo "1..1"
for tool in "${FUZZ_CC:-clang}" protoc-c; do
    if ! command -v "$tool" >/dev/null; then
        echo "ok 1 # SKIP $tool not installed (make deps)"
        exit 0
    fi
done
log=$(mktemp)
FUZZ_SECONDS=15 "$src/scripts/fuzz.sh" >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
if [ "$rc" -eq 0 ] && [ "${execs:-0}" -gt 0 ]; then
    echo "ok 1 - fuzz_wire: ${execs} inputs in 15 s, no crash"
else
    echo "not ok 1 - fuzz_wire: exit $rc after ${execs:-0} inputs (inputs kept in build/fuzz/crashes)"
    tail -40 "$log" | sed 's/^/# /'
fi
rm -f "$log"
