#!/bin/bash
# logs.t: workerlogs hold every byte a worker wrote, up to a crash; --tee shows whole lines with a rank prefix.
. "$(dirname "$0")/lib.sh"
plan 9

head -c 10000000 /dev/urandom > data
cat >blast.sh <<'W'
#!/bin/bash
if [ "$RANK" = 0 ]; then cat "$OUTDIR/data"; kill -ABRT $$; fi
echo "rank $RANK done"
W
chmod +x blast.sh
export OUTDIR=$T
run_plaunch --nproc-per-node 2 --tee none ./blast.sh
is "$rc" 134 "a worker that aborts: exit 134"
# Everything after the marker line is the worker's output.
tail -n +2 log/workerlog.0 > got
is "$(sha256sum < got)" "$(sha256sum < data)" "workerlog.0 holds all 10 MB written before the abort (checksum)"
like "$(head -1 log/workerlog.0)" "^==== plaunch: job .* generation 0 .* rank 0 pid [0-9]+ started" "the log starts with a marker"

cat >mixed.sh <<'W'
#!/bin/bash
echo "out 1"; echo "err 1" >&2; echo "out 2"; printf 'no newline at end'
W
chmod +x mixed.sh
run_plaunch --nproc-per-node 1 --console-ranks none --log-dir "$T/mixed" ./mixed.sh
is "$(tail -n +2 "$T/mixed/workerlog.0")" "$(printf 'out 1\nerr 1\nout 2\nno newline at end')" \
    "a rank not on the console: stdout and stderr in the order written in one log"
run_plaunch --nproc-per-node 1 --log-dir "$T/mixed" ./mixed.sh
is "$out|$(printf '%s\n' "$err" | grep '^\[rank')" "$(printf '[rank 0] out 1\n[rank 0] out 2\n[rank 0] no newline at end|[rank 0] err 1')" \
    "the console shows rank 0 by default, stdout on stdout, stderr on stderr, a final partial line completed"

cat >chatty.sh <<'W'
#!/bin/bash
pad=$(printf '%0300d' 0)
for i in $(seq 1 3000); do echo "rank $RANK line $i $pad"; done
W
chmod +x chatty.sh
run_plaunch --nproc-per-node 4 --tee all ./chatty.sh
is "$(printf '%s\n' "$out" | wc -l)" 12000 "--tee all: 12000 lines on the console"
torn=$(printf '%s\n' "$out" | grep -cvE '^\[rank ([0-3])\] rank \1 line [0-9]+ 0{300}$')
is "$torn" 0 "no torn or mixed lines"
run_plaunch --nproc-per-node 4 --console-ranks 1,3 ./chatty.sh
is "$(printf '%s\n' "$out" | cut -d' ' -f1-2 | sort -u | tr '\n' ' ')" "[rank 1] [rank 3] " "--console-ranks 1,3 shows ranks 1 and 3 only"
like "$(cat log/plaunch.log)" "rank 3 \(pid [0-9]+\) exited with code 0" "plaunch.log records the launcher's events"
done_testing
