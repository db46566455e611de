#!/bin/bash
# config.t: precedence of options: command line > PLAUNCH_* environment > config file > defaults.
. "$(dirname "$0")/lib.sh"
plan 7
printf '; example\n[plaunch]\nnproc_per_node = 2\nlog-dir = cfglogs\nmax_restarts = 1\n' > p.ini
count_workers() { ls "$1"/workerlog.* 2>/dev/null | wc -l; }

run_plaunch --config p.ini --quiet true
is "$(count_workers cfglogs)" 2 "the config file sets the worker count and log dir"
PLAUNCH_NPROC_PER_NODE=3 PLAUNCH_LOG_DIR=envlogs run_plaunch --config p.ini --quiet true
is "$(count_workers envlogs)" 3 "the environment wins over the config file"
PLAUNCH_NPROC_PER_NODE=3 PLAUNCH_LOG_DIR=envlogs run_plaunch --config p.ini --nproc-per-node 4 --log-dir=clilogs --quiet true
is "$(count_workers clilogs)" 4 "the command line wins over both"
PLAUNCH_CONFIG=p.ini run_plaunch --log-dir pcfg --quiet true
is "$(count_workers pcfg)" 2 "PLAUNCH_CONFIG names the config file"
run_plaunch --quiet --log-dir deflogs true
is "$(count_workers deflogs)" 1 "default without GPUs: one CPU worker"
run_plaunch --help
like "$rc $out" "^0 Usage: plaunch " "--help exits 0 with the usage"
like "$out" "--gpus LIST +GPUs of this node" "--help explains each option"
done_testing
