#!/bin/bash
# barrier.t: barrier timeouts as docs/protocol.md describes them: the timeout of a rank that arrived ends the
# barrier for every rank, a rank that arrives later at that barrier is told TIMEOUT at once, and the key can be
# used again. Real agent and coordinator, libplaunch workers (tests/tools/pl_worker); marker files order the ranks.
. "$(dirname "$0")/lib.sh"
plan 12
PW="$PLAUNCH_BUILD/tests/tools/pl_worker"
# took RANK KEY N: the milliseconds the Nth line of RANK's barrier KEY took
took() { printf '%s\n' "$out" | grep "rank $1 barrier $2:" | sed -n "${3}s/.* after \([0-9]*\) ms.*/\1/p"; }

# Rank 0 gives up after 0.3 s; rank 1 comes at the same barrier after that, with 1 s of its own: TIMEOUT at once.
# Then both meet at the next round of the key.
run_plaunch --nproc-per-node 2 --tee all sh -c 'if [ "$RANK" = 0 ]; then
        "$0" barrier:both:20000 barrier:late:300 mark:r0 barrier:late:20000
    else
        "$0" barrier:both:20000 after:r0 barrier:late:1000 barrier:late:20000
    fi; exit 0' "$PW"
is "$rc" 0 "the job runs to the end"
like "$out" "rank 0 barrier both: OK" "ranks that all arrive pass the barrier (rank 0)"
like "$out" "rank 1 barrier both: OK" "ranks that all arrive pass the barrier (rank 1)"
like "$out" "rank 0 barrier late: TIMEOUT after [0-9]+ ms: barrier 'late' timed out" \
    "rank 0 is told TIMEOUT by the coordinator when its 0.3 s run out"
t=$(took 0 late 1)
ok $([ -n "$t" ] && [ "$t" -ge 250 ] && [ "$t" -lt 2000 ]; echo $?) "  ... after ${t:-?} ms"
like "$out" "rank 1 barrier late: TIMEOUT after [0-9]+ ms: barrier 'late' timed out" \
    "rank 1, arriving after rank 0 timed out, is told TIMEOUT for that barrier (not OK)"
t=$(took 1 late 1)
ok $([ -n "$t" ] && [ "$t" -lt 1000 ]; echo $?) "  ... at once (${t:-?} ms; its own timeout was 1000 ms)"
is "$(printf '%s\n' "$out" | grep -c 'barrier late: OK')" 2 "the next round of the key completes for both ranks"

# A later rank's shorter timeout decides for everyone: rank 0 would wait 20 s, rank 1 only 0.3 s (whichever comes
# first); rank 2 comes after both were told, and is told TIMEOUT too.
run_plaunch --nproc-per-node 3 --tee all sh -c 'case "$RANK" in
        0) "$0" barrier:short:20000 mark:s0 ;;
        1) "$0" barrier:short:300 mark:s1 ;;
        2) "$0" after:s0 after:s1 barrier:short:20000 ;;
    esac; exit 0' "$PW"
t=$(took 0 short 1)
like "$out" "rank 0 barrier short: TIMEOUT" "rank 0 (20 s) is told TIMEOUT when rank 1's 0.3 s run out"
ok $([ -n "$t" ] && [ "$t" -lt 10000 ]; echo $?) "  ... after ${t:-?} ms, long before its own 20 s"
like "$out" "rank 1 barrier short: TIMEOUT" "rank 1 is told TIMEOUT"
like "$out" "rank 2 barrier short: TIMEOUT after [0-9]+ ms: barrier 'short' timed out" \
    "rank 2, arriving later, is told TIMEOUT for the same barrier"
done_testing
