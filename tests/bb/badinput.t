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
    "rank 9 does not exist|--nproc-per-node 2 --tee 9 true"
    "'-1'|--max-restarts -1 true"
    "'abc'|--grace abc true"
    "names 2 GPUs|--gpus 0,1 --nproc-per-node 3 true"
    "'a@b'|--job-id a@b true"
    "takes no value|--quiet=yes true"
)
[ "$(id -u)" != 0 ] && cases+=("unreadable.ini|--config unreadable.ini true")
plan $(( ${#cases[@]} * 2 + 3 ))

for c in "${cases[@]}"; do
    want=${c%%|*}; args=${c#*|}
    rm -rf log
    # shellcheck disable=SC2086
    run_plaunch $args
    is "$rc" 2 "plaunch $args -> exit 2"
    like "$err" "$want" "  ... and the message names it ($want)"
done
ok $([ ! -e log ]; echo $?) "bad input starts nothing: no log directory was created"

PLAUNCH_NPROC_PER_NODE=0 run_plaunch true
like "$rc $err" "^2 .*PLAUNCH_NPROC_PER_NODE '0'" "a bad PLAUNCH_NPROC_PER_NODE -> exit 2 naming the variable"
run_plaunch --gpus all true
if [ -d /proc/driver/nvidia ]; then ok 0 "# SKIP this machine has an NVIDIA driver"; else
    like "$rc $err" "^2 .*no GPU found" "--gpus all without a GPU -> exit 2, says there is no GPU"; fi
done_testing
