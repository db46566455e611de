#!/bin/bash
# dropin.t: torchrun and paddle.distributed.launch command lines, table-driven: each line runs under plaunch and
# checks what the worker really received (environment, argv, GPU labels through CUDA_VISIBLE_DEVICES and
# FLAGS_selected_gpus, files in the log directory, exit status and the sentence of a refusal). Where the option
# exists in the installed torchrun (Debian's python3-torch 1.13, /usr/bin/torchrun), the same line runs under it
# too and the listed variables must agree. Paddle is not installable here: its side is skipped with the reason.
. "$(dirname "$0")/lib.sh"

TORCHRUN=/usr/bin/torchrun
HAVE_TORCHRUN=1
{ [ -x "$TORCHRUN" ] && /usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null; } || HAVE_TORCHRUN=0
HAVE_PADDLE=0
python3 -c 'import paddle.distributed.launch' 2>/dev/null && HAVE_PADDLE=1

# The worker: its environment and argv (interpreter first) into OUTDIR, one line on stdout and one on stderr.
cat >dump.py <<'W'
import os, sys
d, r = os.environ["OUTDIR"], os.environ.get("RANK", "x")
with open(os.path.join(d, "env." + r), "w") as f:
    f.write("".join("%s=%s\n" % kv for kv in sorted(os.environ.items())))
with open(os.path.join(d, "argv." + r), "w") as f:
    f.write(" ".join([sys.executable] + sys.argv) + "\n")
print("hello from", r)
print("warn from", r, file=sys.stderr)
W
mkdir -p pkgx && : >pkgx/__init__.py && cp dump.py pkgx/__main__.py
cp dump.py rundump && printf '#!/bin/sh\nenv >"$OUTDIR/env.$RANK"\necho "$0 $*" >"$OUTDIR/argv.$RANK"\n' >dump.sh
chmod +x dump.sh
NCPU=$(/usr/bin/python3 -c 'import os; print(os.cpu_count())')

# The table. NAME | ENV (VAR=VALUE ..., or -) | OPTIONS | PROGRAM | TORCHRUN (variables to compare, or -, or
# "skip: reason") | CHECKS. Checks: rc=N; N=k (workers that ran); R<i>:VAR=VALUE; R<i>:VAR (set); A<i>~RE
# (argv); err~RE, out~RE (regular expressions without spaces: '.' for one); log:FILE; '!' before any: not.
CASES=$(cat <<'EOF'
script runs with python3 | - | --nproc_per_node 1 | dump.py a1 a2 | RANK,WORLD_SIZE,LOCAL_WORLD_SIZE,argv | rc=0 N=1 R0:RANK=0 A0~dump.py.a1.a2$ R0:PYTHONUNBUFFERED=1 !R0:TORCHELASTIC_HEALTH_CHECK_PORT !R0:TORCHELASTIC_ENABLE_FILE_TIMER
two workers | - | --nproc_per_node 2 | dump.py | RANK,LOCAL_RANK,WORLD_SIZE,LOCAL_WORLD_SIZE,GROUP_RANK,GROUP_WORLD_SIZE,ROLE_NAME,ROLE_RANK | rc=0 N=2 R1:RANK=1 R1:LOCAL_RANK=1 R1:WORLD_SIZE=2 R0:ROLE_NAME=default
dash spelling | - | --nproc-per-node 2 | dump.py | skip: torchrun 1.13 has only --nproc_per_node | rc=0 N=2 R1:LOCAL_WORLD_SIZE=2
nproc cpu | - | --nproc_per_node cpu | dump.py | WORLD_SIZE,LOCAL_WORLD_SIZE | rc=0 N=NCPU !R0:FLAGS_selected_gpus R0:PADDLE_DISTRI_BACKEND=gloo
nproc auto without GPUs | - | --nproc_per_node auto | dump.py | WORLD_SIZE | rc=0 N=NCPU
nproc gpu without GPUs | - | --nproc_per_node gpu | dump.py | skip: torchrun fails with a traceback, plaunch with exit 2 | rc=2 N=0 err~has.no.GPU
standalone | - | --standalone --nproc_per_node 2 | dump.py | RANK,WORLD_SIZE,GROUP_WORLD_SIZE | rc=0 N=2 R1:WORLD_SIZE=2
master port alone | - | --nproc_per_node 2 --master_port 29531 | dump.py | MASTER_ADDR,MASTER_PORT | rc=0 R0:MASTER_PORT=29531 R1:MASTER_PORT=29531 R0:MASTER_ADDR=127.0.0.1
master addr and port, one node | - | --master_addr 127.0.0.1 --master_port 29532 | dump.py | MASTER_ADDR,MASTER_PORT,GROUP_WORLD_SIZE | rc=0 R0:MASTER_ADDR=127.0.0.1 R0:MASTER_PORT=29532 !log:plaunch.@NODE@.log
master addr HOST:PORT | - | --master-addr localhost:29533 | dump.py | skip: torchrun 1.13 takes no port in --master_addr | rc=0 R0:MASTER_ADDR=localhost R0:MASTER_PORT=29533 !err~PLAUNCH_TOKEN
rdzv c10d localhost:0 | - | --rdzv_backend c10d --rdzv_endpoint localhost:0 --nproc_per_node 2 | dump.py | RANK,WORLD_SIZE,GROUP_WORLD_SIZE | rc=0 N=2
rdzv static | - | --rdzv_backend static --nproc_per_node 1 | dump.py | RANK,WORLD_SIZE | rc=0 N=1
rdzv etcd unreachable | - | --rdzv_backend etcd --rdzv_endpoint 127.0.0.1:1 --nnodes 2 --insecure | dump.py | skip: torchrun would wait for etcd | rc=2 N=0 err~cannot.elect.the.coordinator.through.etcd
rdzv etcd-v2 conf last_call_timeout refused | - | --rdzv_backend etcd-v2 --rdzv_endpoint 127.0.0.1:1 --rdzv_conf last_call_timeout=5 --nnodes 2 | dump.py | skip: torchrun would wait for etcd | rc=2 N=0 err~last_call_timeout:.plaunch's.etcd.election
rdzv id | - | --rdzv_id myjob --nproc_per_node 1 | dump.py | TORCHELASTIC_RUN_ID | rc=0 R0:TORCHELASTIC_RUN_ID=myjob R0:PLAUNCH_JOB_ID=myjob
rdzv conf join_timeout | - | --rdzv_conf join_timeout=30 | dump.py | RANK | rc=0 N=1
rdzv conf other key refused | - | --rdzv-conf read_timeout=5 | dump.py | skip: torch's store timing has no plaunch counterpart | rc=2 err~read_timeout:.no.counterpart
rdzv endpoint port 0 across nodes | - | --nnodes 2 --rdzv-endpoint 198.18.0.9:0 | dump.py | skip: torchrun would wait for the other node | rc=2 err~port.0
monitor interval | - | --monitor_interval 1 | dump.py | RANK | rc=0 N=1
start method | - | --start_method fork | dump.py | RANK | rc=0 N=1
start method refused | - | --start-method thread | dump.py | skip: torchrun's argparse refuses it too | rc=2 err~spawn,.fork.or.forkserver
role | - | --role trainer | dump.py | ROLE_NAME | rc=0 R0:ROLE_NAME=trainer
max restarts | - | --max_restarts 2 | dump.py | TORCHELASTIC_MAX_RESTARTS | rc=0 R0:TORCHELASTIC_MAX_RESTARTS=2
node rank | - | --node_rank 0 --nnodes 1 | dump.py | GROUP_RANK | rc=0 R0:GROUP_RANK=0
module | - | -m pkgx z | - | argv | rc=0 A0~pkgx/__main__.py.z$
module long form | - | --module pkgx z | - | skip: the same line as -m | rc=0 A0~pkgx/__main__.py.z$
no python | - | --no_python ./dump.sh q | - | RANK,argv | rc=0 A0~dump.sh.q$
no python on a .py | - | --no-python ./dump.py | - | skip: torchrun fails the same way (not executable) | rc=126 err~not.executable
run path | - | --run_path rundump | - | RANK | rc=0 N=1
python chosen | - | --python /usr/bin/python3 | dump.py | skip: torchrun uses its own interpreter | rc=0 A0~^/usr/bin/python3.*dump.py
python missing | - | --python nopython3 | dump.py | skip: plaunch's option | rc=127 err~Python.interpreter.is.not.found
program missing | - | - | ./nofile | skip: plaunch's message | rc=127 err~no.such.file
tee 3 is torchrun's | - | -t 3 --nproc_per_node 2 | dump.py | skip: consoles differ in their prefix | rc=0 out~^.rank.0.*hello out~^.rank.1.*hello err~^.rank.1.*warn !out~warn
stderr to stderr | - | --nproc_per_node 1 | dump.py | skip: consoles differ in their prefix | rc=0 out~^.rank.0.*hello.from.0 !out~warn err~^.rank.0.*warn.from.0 !err~hello
tee 0:2 stderr of one rank | - | -r 3 -t 0:2 --nproc_per_node 2 | dump.py | skip: consoles differ in their prefix | rc=0 err~^.rank.0.*warn !err~^.rank.1 !out~hello
tee rank list refused | - | --tee 1,3 --nproc_per_node 4 | dump.py | skip: not torchrun's syntax | rc=2 err~--console-ranks
console ranks | - | --console-ranks 1 --nproc_per_node 2 | dump.py | skip: plaunch's option | rc=0 out~^.rank.1 !out~^.rank.0
redirects 3 | - | -r 3 --nproc_per_node 2 | dump.py | skip: consoles differ in their prefix | rc=0 !out~hello log:workerlog.0 log:workerlog.1
local ranks filter | - | --local-ranks-filter 1 --nproc_per_node 2 | dump.py | skip: torchrun 1.13 has no --local-ranks-filter | rc=0 out~^.rank.1 !out~^.rank.0
redirects per local rank | - | --redirects 0:3 --tee 0 --nproc_per_node 2 | dump.py | skip: consoles differ in their prefix | rc=0 out~^.rank.1 !out~^.rank.0
redirects 1 shows stderr only | - | -r 1 --nproc_per_node 2 | dump.py | skip: consoles differ in their prefix | rc=0 !out~hello err~^.rank.0.*warn.from.0 err~^.rank.1.*warn.from.1
torchrun option without counterpart | - | --virtual-local-rank | dump.py | skip: torchrun 1.13 has no --virtual-local-rank | rc=2 err~unknown.option.'--virtual-local-rank'
torchrun numa binding | - | --numa-binding node --nproc_per_node 1 | dump.py | skip: torchrun 1.13 has no --numa-binding | rc=0 N=1
numa binding of another word | - | --numa-binding nowhere | dump.py | skip: torchrun 1.13 has no --numa-binding | rc=2 err~expected.torchrun's.node
PLAUNCH variable for an option | PLAUNCH_NPROC_PER_NODE=2 | - | dump.py | skip: PET_ variables are torchrun's | rc=0 N=2
local addr | - | --local_addr 127.0.0.1 | dump.py | skip: torchrun 1.13 has no --local_addr | rc=0 R0:MASTER_ADDR=127.0.0.1
paddle devices are labels | CUDA_VISIBLE_DEVICES=2,3,4,5 | --devices 2,3 | dump.py | - | rc=0 N=2 R0:CUDA_VISIBLE_DEVICES=2,3 R0:FLAGS_selected_gpus=0 R1:FLAGS_selected_gpus=1 R1:PLAUNCH_GPU=3
paddle gpus are labels | CUDA_VISIBLE_DEVICES=2,3,4,5 | --gpus 4,5 | dump.py | - | rc=0 R0:CUDA_VISIBLE_DEVICES=4,5 R0:PLAUNCH_GPU=4 !R0:PADDLE_DISTRI_BACKEND
paddle devices not positions | CUDA_VISIBLE_DEVICES=2,3,4,5 | --devices 0,1 | dump.py | - | rc=2 N=0 err~GPU.0.does.not.exist
nproc on a GPU node | CUDA_VISIBLE_DEVICES=2,3,4,5 | --nproc_per_node 2 | dump.py | CUDA_VISIBLE_DEVICES,LOCAL_RANK | rc=0 N=2 R0:CUDA_VISIBLE_DEVICES=2,3,4,5 R1:FLAGS_selected_gpus=1 R1:PLAUNCH_GPU=3
one worker on a GPU node | CUDA_VISIBLE_DEVICES=2,3 | --nproc_per_node 1 | dump.py | CUDA_VISIBLE_DEVICES | rc=0 R0:FLAGS_selected_gpus=0,1 R0:CUDA_VISIBLE_DEVICES=2,3
more workers than GPUs | CUDA_VISIBLE_DEVICES=2,3 | --nproc_per_node 3 | dump.py | skip: torchrun starts them (Paddle fails later) | rc=2 N=0 err~at.most.2
device order kept | CUDA_VISIBLE_DEVICES=1,0 CUDA_DEVICE_ORDER=FASTEST_FIRST | --gpus 0 | dump.py | - | rc=0 R0:CUDA_VISIBLE_DEVICES=0 R0:CUDA_DEVICE_ORDER=FASTEST_FIRST
cpu workers get gloo | - | --nproc_per_node 2 | dump.py | - | rc=0 R1:PADDLE_DISTRI_BACKEND=gloo !R1:FLAGS_selected_gpus !R1:CUDA_DEVICE_ORDER
paddle master http | - | --master http://127.0.0.1:29541 --nnodes 1 | dump.py | - | rc=0 N=1 !err~PLAUNCH_TOKEN
paddle master etcd unreachable | - | --master etcd://127.0.0.1:1 --nnodes 2 --insecure | dump.py | - | rc=2 err~cannot.elect.the.coordinator.through.etcd
paddle run mode collective | - | --run_mode collective | dump.py | - | rc=0 N=1
paddle run mode ps refused | - | --run_mode ps | dump.py | - | rc=2 err~collective.jobs.only
paddle log level error | - | --log_level ERROR | dump.py | - | rc=0 !err~plaunch:.job
paddle legacy false | - | --legacy False | dump.py | - | rc=0 N=1
paddle legacy true refused | - | --legacy True | dump.py | - | rc=2 err~drop.--legacy
paddle job id | - | --job_id pj | dump.py | - | rc=0 R0:PLAUNCH_JOB_ID=pj R0:TORCHELASTIC_RUN_ID=pj
paddle log dir | - | --log_dir LOGDIR | dump.py | - | rc=0 log:workerlog.0 log:plaunch.log R0:PADDLE_LOG_DIR=LOGDIR
paddle unknown option | - | --trainer_endpoint 1 | dump.py | - | rc=2 err~unknown.option.'--trainer_endpoint'
paddle ps option refused | - | --servers 127.0.0.1:6170 | dump.py | - | rc=2 err~parameter-server
paddle start port refused | - | --start_port 6070 | dump.py | - | rc=2 err~free.port
paddle ips one address | - | --ips 127.0.0.1 --nproc_per_node 2 | dump.py | - | rc=0 R1:WORLD_SIZE=2 R0:PADDLE_NNODES=1
paddle sort ip | - | --sort_ip True | dump.py | - | rc=0 N=1
paddle elastic level refused | - | --elastic_level 1 | dump.py | - | rc=2 err~--nnodes.MIN:MAX
paddle elastic timeout | - | --elastic_timeout 30 | dump.py | - | rc=0 N=1
paddle gpu log off | - | --enable_gpu_log False | dump.py | - | rc=0 !log:monitor.@NODE@.csv
paddle env over the command line | PADDLE_NPROC_PER_NODE=2 | --nproc_per_node 1 | dump.py | - | rc=0 N=2 err~overridden.by.PADDLE_NPROC_PER_NODE=2
paddle env job id | PADDLE_JOB_ID=envjob | - | dump.py | - | rc=0 R0:PLAUNCH_JOB_ID=envjob
paddle env pod ip | POD_IP=127.0.0.1 | - | dump.py | - | rc=0 R0:MASTER_ADDR=127.0.0.1
paddle env of a worker ignored | PADDLE_CURRENT_ENDPOINT=10.0.0.1:1 PADDLE_NPROC_PER_NODE=3 | - | dump.py | - | rc=0 N=1
user's unbuffered kept | PYTHONUNBUFFERED= | - | dump.py | - | rc=0 R0:PYTHONUNBUFFERED=
EOF
)
# The node's own name in file names (plaunch.NODE.log, monitor.NODE.csv).
NODE=$(hostname | tr -c 'A-Za-z0-9._\n-' '_')

# check CASE DIR TOKEN: 0 when the token holds for the run whose files are in DIR
check() {
    local dir=$1 tok=$2 not=0 k v i
    case $tok in !*) not=1; tok=${tok#!} ;; esac
    local res=1
    case $tok in
    rc=*) [ "$rc" = "${tok#rc=}" ] && res=0 ;;
    N=*) v=${tok#N=}; [ "$v" = NCPU ] && v=$NCPU; [ "$(ls "$dir"/env.* 2>/dev/null | wc -l)" = "$v" ] && res=0 ;;
    R[0-9]*:*=*) i=${tok%%:*}; i=${i#R}; k=${tok#*:}; grep -qxF -- "$k" "$dir/env.$i" 2>/dev/null && res=0 ;;
    R[0-9]*:*) i=${tok%%:*}; i=${i#R}; k=${tok#*:}; grep -q "^$k=" "$dir/env.$i" 2>/dev/null && res=0 ;;
    A[0-9]*~*) i=${tok%%~*}; i=${i#A}; grep -Eq -- "${tok#*~}" "$dir/argv.$i" 2>/dev/null && res=0 ;;
    err~*) printf '%s\n' "$err" | grep -Eq -- "${tok#err~}" && res=0 ;;
    out~*) printf '%s\n' "$out" | grep -Eq -- "${tok#out~}" && res=0 ;;
    log:*) [ -e "$LOGDIR/${tok#log:}" ] && res=0 ;;
    esac
    [ $not = 1 ] && res=$((1 - res))
    return $res
}

# val DIR RANK VAR: VAR's value in that worker's environment ("<unset>" when it has none)
val() { grep -s "^$3=" "$1/env.$2" | head -1 | cut -d= -f2- || true; }
argv_of() { cut -d' ' -f2- "$1/argv.$2" 2>/dev/null; } # without the interpreter

n=0
while IFS='|' read -r name envs opts prog torch checks; do
    n=$((n + 1))
    name=$(echo $name) envs=$(echo $envs) opts=$(echo $opts) prog=$(echo $prog) torch=$(echo $torch)
    [ "$envs" = - ] && envs=""
    [ "$opts" = - ] && opts=""
    [ "$prog" = - ] && prog=""
    LOGDIR=$T/log.$n
    opts=${opts//LOGDIR/$LOGDIR}
    checks=${checks//LOGDIR/$LOGDIR}
    checks=${checks//@NODE@/$NODE}
    rm -rf "$T/p" && mkdir -p "$T/p"
    # shellcheck disable=SC2086
    env -u CUDA_VISIBLE_DEVICES -u PYTHONUNBUFFERED $envs OUTDIR=$T/p timeout -k 5 60 "$PLAUNCH" --log-dir "$LOGDIR" \
        $opts $prog >"$T/.out" 2>"$T/.err"
    rc=$?
    out=$(cat "$T/.out") err=$(cat "$T/.err")
    failed=""
    for tok in $checks; do check "$T/p" "$tok" || failed="$failed $tok"; done
    is "$failed" "" "$name: plaunch $opts $prog${envs:+ (with $envs)}"
    [ -n "$failed" ] && printf '#   stderr: %s\n' "$(printf '%s' "$err" | head -5)" >&2
    case $torch in
    -) ;;
    skip:*) ok 0 "# SKIP $name under torchrun: ${torch#skip: }" ;;
    *)
        if [ $HAVE_TORCHRUN = 0 ]; then
            ok 0 "# SKIP $name under torchrun: no $TORCHRUN with torch for /usr/bin/python3"
        else
            rm -rf "$T/t" && mkdir -p "$T/t"
            # shellcheck disable=SC2086
            # -r 2 -t 2: 1.13's Std.from_str finds no member for 0 and 3 on Python 3.11 (docs/benchmarks.md), so
            # its defaults crash; --monitor_interval 0.5: its 5 s default only slows the test. A case's own wins.
            (cd "$T" && env -u CUDA_VISIBLE_DEVICES -u PYTHONUNBUFFERED $envs OUTDIR=$T/t TMPDIR=$T timeout -k 5 60 \
                "$TORCHRUN" -r 2 -t 2 --monitor_interval 0.5 $opts $prog >"$T/.tout" 2>"$T/.terr")
            trc=$?
            diff=""
            [ "$trc" = 0 ] || diff=" torchrun-exit-$trc"
            for f in "$T"/p/env.*; do
                r=${f##*.}
                for k in ${torch//,/ }; do
                    if [ "$k" = argv ]; then a=$(argv_of "$T/p" "$r") b=$(argv_of "$T/t" "$r")
                    else a=$(val "$T/p" "$r" "$k") b=$(val "$T/t" "$r" "$k"); fi
                    [ "$a" = "$b" ] || diff="$diff rank$r:$k:plaunch='$a',torchrun='$b'"
                done
            done
            is "$diff" "" "$name: under torchrun the worker gets the same ${torch}"
        fi ;;
    esac
    if [ $HAVE_PADDLE = 0 ] && [ "${name#paddle}" != "$name" ]; then
        ok 0 "# SKIP $name under paddle.distributed.launch: Paddle is not installable here (no PyPI)"
    fi
done <<<"$CASES"

# ---- a shown rank's two pipes: both streams in its workerlog, in the order written -----------------------
# The worker writes to stderr only once its stdout line is in the log (polled, with a deadline), then to stdout.
cat >order.py <<'W'
import os, sys, time
log = os.path.join(sys.argv[1], "workerlog.0")
def wait_for(text):
    end = time.time() + 60
    while time.time() < end:
        with open(log) as f:
            if text in f.read():
                return
        time.sleep(0.01)
print("first out"); wait_for("first out")
print("then err", file=sys.stderr); wait_for("then err")
print("last out")
W
run_plaunch --log-dir "$T/order" --nproc-per-node 1 /usr/bin/python3 order.py "$T/order"
is "$(sed -n '/^==== plaunch: job /,$p' "$T/order/workerlog.0" | tail -n +2 | tr '\n' '|')" \
    "first out|then err|last out|" "a shown rank's workerlog has its stdout and stderr in the order written"
like "$err" "rank 0\] then err" "... its stderr on plaunch's stderr"

# ---- logs of earlier runs: appended after a marker, kept; --log_overwrite empties ------------------------
OUTDIR=$T/p run_plaunch --log-dir "$T/twice" --nproc-per-node 1 sh -c 'echo "run one"'
OUTDIR=$T/p run_plaunch --log-dir "$T/twice" --nproc-per-node 1 sh -c 'echo "run two"'
is "$(grep -c '^==== plaunch: job ' "$T/twice/workerlog.0") $(grep -c 'run one' "$T/twice/workerlog.0")" "2 1" \
    "a second run into the same --log-dir keeps the first run's lines and adds its own marker"
ok $([ -e "$T/twice/monitor.$NODE.csv.prev" ] || [ ! -e "$T/twice/monitor.$NODE.csv" ]; echo $?) \
    "... the earlier run's monitor file is kept as .prev"
OUTDIR=$T/p run_plaunch --log-dir "$T/twice" --nproc-per-node 1 sh -c 'echo "run three"; exit 3'
like "$err" "\| run three" "... the root cause quotes this run's lines"
ok $(printf '%s\n' "$err" | grep -q 'run one'; [ $? != 0 ]; echo $?) "... and none of an earlier run's"
OUTDIR=$T/p run_plaunch --log-dir "$T/twice" --log_overwrite true --nproc-per-node 1 sh -c 'echo "run four"'
is "$(grep -c '^==== plaunch: job ' "$T/twice/workerlog.0")" 1 "--log_overwrite true (Paddle's): the logs are emptied"

plan "$_tap_n"
done_testing
