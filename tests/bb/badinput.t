#!/bin/bash
# badinput.t: bad options, environment and config files get exit 2 and a message naming the value; nothing starts.
. "$(dirname "$0")/lib.sh"

printf '[plaunch]\nnproc_per_node = 2\ngpu = 0\n' > typo.ini
printf '[plaunch]\nnproc_per_node = 2\n[other]\nx = 1\n' > section.ini
printf '[plaunch]\nthis line has no equals sign\n' > garbage.ini
printf '[plaunch]\nnproc_per_node = 2\n' > unreadable.ini; chmod 000 unreadable.ini

# case "expected text" args...
cases=(
    "'--bogus'|--bogus true"
    "'-x'|-x true"
    "GPU 0 is listed twice|--gpus 0,0 true"
    "'1-a'|--gpus 1-a true"
    "'3-1'|--gpus 3-1 true"
    "'x'|--gpus x true"
    "--nproc-per-node '0'|--nproc-per-node 0 true"
    "'-3'|--nproc-per-node -3 true"
    "'abc'|--nproc_per_node abc true"
    "no program given|--nproc-per-node 2"
    "needs a value|--nproc-per-node"
    "/nonexistent.ini|--config /nonexistent.ini true"
    "typo.ini:3: unknown key 'gpu'|--config typo.ini true"
    "unknown section \[other\]|--config section.ini true"
    "garbage.ini' line 2|--config garbage.ini true"
    "rank 9 does not exist|--nproc-per-node 2 --console-ranks 9 true"
    "'-1'|--max-restarts -1 true"
    "'abc'|--grace abc true"
    "names 2 GPUs|--gpus 0,1 --nproc-per-node 3 true"
    "'a@b'|--job-id a@b true"
    "takes no value|--quiet=yes true"
)
[ "$(id -u)" != 0 ] && cases+=("unreadable.ini|--config unreadable.ini true")

# Values the control plane cannot carry, and files that are no regular files: refused up front, never a hang.
# (Before, these passed the parser and the job hung: a value the wire refused, a FIFO blocking open() with
# signals blocked, /dev/zero read forever.) Each runs under a short deadline.
mkfifo fifo
ln -s p.ini link.ini
printf '[plaunch]\nnproc_per_node = 1\n' > p.ini
printf '[plaunch]\ngrace = 4000\n' > grace.ini
mkdir -p tls && touch tls/node.crt tls/node.key && chmod 600 tls/node.key && mkfifo tls/ca.crt
quick=(
    "--max-restarts '200000': .*from 0 to 100000|--max-restarts 200000 true"
    "--grace '4000': expected seconds from 0 to 3600|--grace 4000 true"
    "grace.ini:2: grace '4000': .*0 to 3600|--config grace.ini true"
    "1.0004 and --heartbeat 1.0001 are both 1000 ms|--heartbeat 1.0001 --heartbeat-timeout 1.0004 true"
    "--nnodes '70000': .*from 1 to 65536|--nnodes 70000 true"
    "--relay-fanout '1': expected nodes per relay \(or auto, off\), a whole number from 2 to 65535|--relay-fanout 1 true"
    "--relay-fanout 'sqrt': expected nodes per relay \(or auto, off\)|--relay-fanout sqrt true"
    "config file 'fifo' is a FIFO \(named pipe\), not a regular file|--config fifo true"
    "config file '/dev/zero' is a character device, not a regular file|--config /dev/zero true"
    "config file '.' is a directory, not a regular file|--config . true"
    "--token-file: token file 'fifo' is a FIFO|--token-file fifo true"
    "--token-file: token file '/dev/zero' is a character device|--token-file /dev/zero true"
    "certificate 'tls/ca.crt' is a FIFO|--nnodes 2 --master 127.0.0.1:1 --tls-dir tls true"
)
plan $(( ${#cases[@]} * 2 + ${#quick[@]} * 2 + 11 ))

for c in "${cases[@]}"; do
    want=${c%%|*}; args=${c#*|}
    rm -rf log
    # shellcheck disable=SC2086
    run_plaunch $args
    is "$rc" 2 "plaunch $args -> exit 2"
    like "$err" "$want" "  ... and the message names it ($want)"
done
ok $([ ! -e log ]; echo $?) "bad input starts nothing: no log directory was created"

# run_quick ARGS...: plaunch under a 10 s deadline (a hang shows as 124 or 137, never as 2).
run_quick() {
    timeout -k 2 10 "$PLAUNCH" "$@" >"$T/.out" 2>"$T/.err"
    rc=$?
    err=$(cat "$T/.err")
}
for c in "${quick[@]}"; do
    want=${c%%|*}; args=${c#*|}
    # shellcheck disable=SC2086
    run_quick $args
    is "$rc" 2 "plaunch $args -> exit 2 within 10 s"
    like "$err" "$want" "  ... and the message names the option, the value and the range or kind ($want)"
done
PLAUNCH_GRACE=4000 run_quick true
like "$rc $err" "^2 .*PLAUNCH_GRACE '4000': .*0 to 3600" "a PLAUNCH_GRACE the protocol cannot carry -> exit 2"
run_quick --heartbeat 1.0001 --heartbeat-timeout 1.0009 true
is "$rc" 0 "--heartbeat 1.0001 --heartbeat-timeout 1.0009 (1000 and 1001 ms) runs to the end"
run_quick --config link.ini --log-dir linklog true
is "$rc" 0 "a config file reached through a symlink is read"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ';' > big.ini
run_quick --config big.ini true
like "$rc $err" "^2 .*config file 'big.ini' is too large: 1048577 bytes, at most 1048576" \
    "a config file over 1 MiB -> exit 2"
run_quick probe --report fifo
like "$rc $err" "^2 .*measurement file 'fifo' is a FIFO" "probe --report FIFO -> exit 2 within 10 s"
run_quick probe --report /dev/zero
like "$rc $err" "^2 .*measurement file '/dev/zero' is a character device" "probe --report /dev/zero -> exit 2"
run_quick --help
like "$(cat "$T/.out")" "N: 0 to 100000" "--help gives the range of --max-restarts"
like "$(cat "$T/.out")" "SECONDS: 0 to 3600" "--help gives the range of --grace"

PLAUNCH_NPROC_PER_NODE=0 run_plaunch true
like "$rc $err" "^2 .*PLAUNCH_NPROC_PER_NODE '0'" "a bad PLAUNCH_NPROC_PER_NODE -> exit 2 naming the variable"
run_plaunch --gpus all true
if [ -d /proc/driver/nvidia ]; then ok 0 "# SKIP this machine has an NVIDIA driver"; else
    like "$rc $err" "^2 .*no GPU found" "--gpus all without a GPU -> exit 2, says there is no GPU"; fi
done_testing
