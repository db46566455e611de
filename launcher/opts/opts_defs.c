/* opts_defs: the option table: every option once, with its aliases, setter (which validates), default and help;
 * the setters write struct opts and nothing else. */
#include "launcher/opts/opts_priv.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gpus/gpus.h"
#include "common/idlist.h"

#define s_copy opts_copy

/* The parsers with ranges live in opts_check.c, next to the bounds they come from. */
#define s_int opts_parse_int

static int s_set_gpus(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    int ids[GPUS_MAX], all;
    char why[512];
    if (gpus_parse(val, ids, GPUS_MAX, &all, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s '%s': %s", origin, val, why);
        return -1;
    }
    snprintf(o->origin_gpus, sizeof o->origin_gpus, "%s", origin);
    return s_copy(o->gpus, sizeof o->gpus, val, origin, err, errlen);
}

static int s_set_nproc(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long v = 0;
    o->nproc_kind[0] = '\0';
    if (strcmp(val, "gpu") == 0 || strcmp(val, "cpu") == 0 || strcmp(val, "auto") == 0)
        snprintf(o->nproc_kind, sizeof o->nproc_kind, "%s", val); /* counted when the node is known */
    else if (s_int(val, 1, OPTS_MAX_WORKERS, &v, origin, "the number of workers (or gpu, cpu, auto)", err,
                   errlen) < 0)
        return -1;
    o->nproc = (int)v;
    snprintf(o->origin_nproc, sizeof o->origin_nproc, "%s", origin);
    return 0;
}

static int s_set_log_dir(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (!*val) {
        snprintf(err, errlen, "%s: empty log directory; give a path such as 'log'", origin);
        return -1;
    }
    return s_copy(o->log_dir, sizeof o->log_dir, val, origin, err, errlen);
}

static int s_set_job_id(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    size_t len = strlen(val);
    int ok = len >= 1 && len <= OPTS_MAX_JOB_ID;
    for (size_t i = 0; ok && i < len; i++)
        ok = isalnum((unsigned char)val[i]) || val[i] == '-' || val[i] == '_' || val[i] == '.';
    if (!ok) {
        snprintf(err, errlen, "%s '%s': expected a job id of 1 to %d letters, digits, '.', '-' or '_'",
                 origin, val, OPTS_MAX_JOB_ID);
        return -1;
    }
    return s_copy(o->job_id, sizeof o->job_id, val, origin, err, errlen);
}

static int s_set_tee(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    int ids[OPTS_MAX_WORKERS];
    char why[512];
    if (strcmp(val, "all") != 0 && strcmp(val, "none") != 0 && strcmp(val, "first") != 0 &&
        idlist_parse(val, "rank", 1 << 24, ids, OPTS_MAX_WORKERS, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s '%s': %s; expected 'first', 'all', 'none' or ranks like 0,3 or 0-3", origin, val,
                 why);
        return -1;
    }
    snprintf(o->origin_tee, sizeof o->origin_tee, "%s", origin);
    return s_copy(o->tee, sizeof o->tee, val, origin, err, errlen);
}

static int s_set_max_restarts(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_count(&o->max_restarts, val, OPTS_MAX_RESTARTS, "the number of restarts", origin, err, errlen);
}

static int s_set_max_no_progress(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_count(&o->max_no_progress, val, OPTS_MAX_RESTARTS, "the number of restarts without progress (0: off)",
                   origin, err, errlen);
}

static int s_set_no_progress_time(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_seconds(val, 0, 1, OPTS_MAX_WAIT_S, &o->no_progress_time, origin, err, errlen);
}

static int s_set_grace(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_seconds(val, 0, 1, OPTS_MAX_GRACE_S, &o->grace, origin, err, errlen);
}

static int s_set_config(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_copy(o->config, sizeof o->config, val, origin, err, errlen);
}

static int s_set_host(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (opts_check_host(val, origin, err, errlen) < 0)
        return -1;
    return s_copy(o->host, sizeof o->host, val, origin, err, errlen);
}

static int s_set_quiet(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->quiet, origin, err, errlen);
}

static int s_set_scheduler(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    static const char *const kinds[] = { "auto", "none", "slurm", "k8s" };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(val, kinds[i]) == 0)
            return s_copy(o->scheduler, sizeof o->scheduler, val, origin, err, errlen);
    snprintf(err, errlen, "%s '%s': expected auto, none, slurm or k8s", origin, val);
    return -1;
}

static int s_set_monitor(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    /* 0 turns sampling off; otherwise at least 0.1 s (NVML averages utilisation over about that much) */
    if (strcmp(val, "0") == 0) {
        o->monitor = 0;
        return 0;
    }
    return opts_parse_seconds(val, 0.1, 1, OPTS_MAX_HEARTBEAT_S, &o->monitor, origin, err, errlen);
}

static int s_set_monitor_config(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_copy(o->monitor_config, sizeof o->monitor_config, val, origin, err, errlen);
}

static int s_set_hang_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strcmp(val, "0") == 0) {
        o->hang_timeout = 0;
        return 0;
    }
    /* at least 1 s: progress reports travel every quarter of it, at least every 0.25 s */
    return opts_parse_seconds(val, 1, 1, 7 * 86400, &o->hang_timeout, origin, err, errlen);
}

static int s_set_on_hang(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strcmp(val, "restart") && strcmp(val, "stop")) {
        snprintf(err, errlen, "%s '%s': expected restart (a job-wide restart while --max-restarts lasts) or stop",
                 origin, val);
        return -1;
    }
    return s_copy(o->on_hang, sizeof o->on_hang, val, origin, err, errlen);
}

static int s_set_print_config(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->print_config, origin, err, errlen);
}

const struct optdef opts_defs[] = {
    { "gpus", "devices", NULL, 1, s_set_gpus, "LIST",
      "GPUs of this node, one worker each: 0,1,2,3 or 0-3 or all (every GPU the CUDA runtime "
      "reports). When CUDA_VISIBLE_DEVICES is set, ids are its labels, as Paddle reads them: under "
      "CUDA_VISIBLE_DEVICES=2,3,4,5, --gpus 2,3 means GPUs 2 and 3.", NULL, 0 },
    { "nproc-per-node", "nproc_per_node", NULL, 1, s_set_nproc, "N|gpu|cpu|auto",
      "Number of workers on this node. On a node with GPUs (CUDA_VISIBLE_DEVICES lists some, or the driver "
      "does) without --gpus: worker i gets the i-th visible GPU (FLAGS_selected_gpus, LOCAL_RANK) and "
      "CUDA_VISIBLE_DEVICES as inherited; elsewhere CPU workers. gpu: one per GPU; cpu: one per CPU; auto: "
      "gpu on a node with GPUs, else cpu (torchrun's words).", NULL, 0 },
    { "log-dir", "log_dir", NULL, 1, s_set_log_dir, "DIR",
      "Directory for workerlog.<rank> and plaunch.log (default: log).", "log", 0 },
    { "job-id", "job_id", "rdzv-id", 1, s_set_job_id, "ID", "Job name shown to workers (default: random).", NULL, 0 },
    { "console-ranks", NULL, NULL, 1, s_set_tee, "RANKS",
      "Global ranks whose output is shown on the console with a [rank N] prefix: 0,3 or 0-3, all, none, or "
      "first: each node's first rank (default: first); its stdout on stdout, its stderr on stderr. Every rank's "
      "output is always in its workerlog.", "first",
      0 },
    { "tee", NULL, NULL, 1, opts_torch_set_tee, "N|L:N,...",
      "-t: torchrun's --tee: the streams of every local rank (or of L) shown on the console: 0 none, 1 stdout, 2 "
      "stderr, 3 both; plaunch logs every stream anyway. Also all or none (--console-ranks all|none). With -t, -r "
      "or --local-ranks-filter, each node shows its own ranks as torchrun would; rank lists go to --console-ranks.",
      NULL, 0 },
    { "redirects", NULL, NULL, 1, opts_torch_set_redirects, "N|L:N,...",
      "-r: torchrun's --redirects: streams kept off the console (same numbers; the log has them).", NULL, 0 },
    { "local-ranks-filter", NULL, NULL, 1, opts_torch_set_ranks_filter, "LOCAL_RANKS",
      "torchrun's: only these local ranks of each node on the console, e.g. 0 or 0,1.", NULL, 0 },
    { "max-restarts", "max_restarts", "max_restart", 1, s_set_max_restarts, "N",
      "Restart the whole job up to N times after a worker fails (default: 0).", NULL, 0 },
    { "max-no-progress-restarts", NULL, NULL, 1, s_set_max_no_progress, "K",
      "End the job (exit status 123) when K restarts in a row were of generations that failed before any "
      "progress: no new step reported, or, in a job that reports none, less than --no-progress-time of running; "
      "0 turns it off (default: 3). --max-restarts still applies (docs/resilience.md).", "3", 0 },
    { "no-progress-time", NULL, NULL, 1, s_set_no_progress_time, "SECONDS",
      "A generation of a job that reports no steps made no progress when it failed within this; 0: only steps "
      "count (default: 60).",
      "60", 0 },
    { "grace", NULL, NULL, 1, s_set_grace, "SECONDS",
      "Time workers get after SIGTERM before SIGKILL (default: 10).", "10", 0 },
    { "config", NULL, NULL, 1, s_set_config, "FILE", "INI file of options (see conf/plaunch.ini).", NULL, 0 },
    { "python", NULL, NULL, 1, opts_prog_set_python, "PATH",
      "The interpreter of a PROGRAM ending in .py, of -m and of --run-path (default: PYTHON_EXEC, else python3 on "
      "PATH). Other programs run as given: 'plaunch python3 train.py' and 'plaunch ./train' as before.", NULL, 0 },
    { "module", NULL, NULL, 0, opts_prog_set_module, NULL,
      "-m: PROGRAM is a Python module: PYTHON -m PROGRAM ARGS (torchrun's -m/--module).", NULL, 0 },
    { "no-python", NULL, NULL, 0, opts_prog_set_no_python, NULL,
      "Run PROGRAM as it is, even a .py file (torchrun's --no-python).", NULL, 0 },
    { "run-path", NULL, NULL, 0, opts_prog_set_run_path, NULL,
      "Run PROGRAM, a script of any name, with the interpreter (torchrun's --run-path).", NULL, 0 },
    { "host", "local-addr", NULL, 1, s_set_host, "ADDR",
      "Address workers use to reach this node (MASTER_ADDR; default: 127.0.0.1 on one node).", NULL, 0 },
    { "quiet", NULL, NULL, 0, s_set_quiet, NULL, "Print nothing but worker output and errors.", NULL, 0 },
    { "nnodes", NULL, NULL, 1, opts_net_set_nnodes, "N|MIN:MAX",
      "Number of nodes (default: 1). MIN:MAX is elastic: the job goes on with at least MIN nodes after losing "
      "some, and grows (a restart) when nodes join, up to MAX.", "1", 0 },
    { "elastic-timeout", "elastic_timeout", NULL, 1, opts_net_set_elastic_timeout, "SECONDS",
      "How long an elastic job waits for MIN nodes after losing some before it fails (default: 60).", "60", 0 },
    { "spares", NULL, NULL, 1, opts_net_set_spares, "S",
      "Hot spares: up to S nodes beyond --nnodes join and wait idle (their GPUs checked); one takes the node rank "
      "of a lost node, or of one whose workers failed twice in a row, at the next generation: same world size, "
      "same ranks elsewhere (default: 0; docs/resilience.md).", "0", 0 },
    { "master", NULL, NULL, 1, opts_net_set_master, "HOST:PORT|etcd://H:P,...",
      "Coordinator address; the node that owns HOST runs the coordinator. Needed when --nnodes > 1. "
      "etcd://H:P[,H:P...] (Paddle's): the nodes elect the coordinator through etcd, another node takes over "
      "when its node dies (docs/resilience.md, its etcd part); every node needs --token or the job's certificates.",
      NULL, 0 },
    { "etcd-cacert", NULL, NULL, 1, opts_etcd_set_cacert, "FILE",
      "TLS to etcd: the CA that signed etcd's certificate (the endpoints become https://).", NULL, 0 },
    { "etcd-cert", NULL, NULL, 1, opts_etcd_set_cert, "FILE", "TLS to etcd: this node's client certificate.", NULL,
      0 },
    { "etcd-key", NULL, NULL, 1, opts_etcd_set_key, "FILE", "TLS to etcd: the client certificate's key.", NULL, 0 },
    { "master-addr", NULL, NULL, 1, opts_compat_set_master_addr, "HOST[:PORT]",
      "torchrun's: with --nnodes > 1, --master: the coordinator's HOST, its port from --master-port (default "
      "6170); on one node, the workers' MASTER_ADDR (and --master-port their MASTER_PORT), as torchrun's.", NULL, 0 },
    { "master-port", NULL, NULL, 1, opts_compat_set_master_port, "PORT",
      "On one node: the workers' MASTER_PORT, as torchrun's (default: a free port each generation). With "
      "--nnodes > 1: the coordinator's port for --master-addr HOST or --ips (default 6170).", NULL, 0 },
    { "ips", NULL, NULL, 1, opts_compat_set_ips, "ADDR,ADDR,...",
      "Paddle's node list (IPv4): --nnodes is its length, the coordinator runs on the first address, this "
      "node's rank is the position of its own address (or --rank).", NULL, 0 },
    { "standalone", NULL, NULL, 0, opts_compat_set_standalone, NULL,
      "torchrun's one-node mode: what plaunch does without --nnodes; refused with --nnodes > 1, --master, --ips.", NULL, 0 },
    { "rdzv-endpoint", NULL, NULL, 1, opts_torch_set_rdzv_endpoint, "HOST[:PORT]",
      "torchrun's rendezvous: with --nnodes > 1 it is --master HOST:PORT (port 29400 when omitted); on one node "
      "this process is the rendezvous (HOST:0 and localhost:0 too).", NULL, 0 },
    { "rdzv-backend", NULL, NULL, 1, opts_torch_set_rdzv_backend, "static|c10d|etcd|etcd-v2",
      "torchrun's rendezvous backend: plaunch's own rendezvous stands in for static and c10d; etcd and etcd-v2 "
      "elect the coordinator through the etcd at --rdzv-endpoint (as --master etcd://HOST:PORT; --rdzv-id names "
      "the job's keys, default none).", NULL, 0 },
    { "rdzv-conf", NULL, NULL, 1, opts_torch_set_rdzv_conf, "K=V,...",
      "torchrun's rendezvous settings: join_timeout (or timeout) is --rdzv-timeout; with etcd, protocol, "
      "cacert/ca_cert, cert/ssl_cert and key/ssl_cert_key are read too; other keys are refused.", NULL,
      0 },
    { "monitor-interval", NULL, NULL, 1, opts_torch_set_monitor_interval, "SECONDS",
      "torchrun's worker poll interval: accepted; plaunch learns of a worker's exit at once.", NULL, 0 },
    { "start-method", NULL, NULL, 1, opts_torch_set_start_method, "spawn|fork|forkserver",
      "torchrun's: accepted; a program runs as its own process in every method, as torchrun runs scripts.", NULL,
      0 },
    { "role", NULL, NULL, 1, opts_torch_set_role, "NAME", "The workers' ROLE_NAME (default: default).", NULL, 0 },
    { "node-rank", "node_rank", "rank", 1, opts_net_set_node_rank, "R",
      "This node's rank (default: assigned by the coordinator, in address order, and printed).", NULL, 0 },
    { "rdzv-timeout", "rdzv_timeout", NULL, 1, opts_net_set_rdzv_timeout, "SECONDS",
      "How long to wait for every node to join (default: 600).", "600", 0 },
    { "tls-dir", NULL, NULL, 1, opts_net_set_tls_dir, "DIR",
      "Job CA and node certificates from 'plaunch certs' (default: ~/.plaunch/tls).", NULL, 0 },
    { "token", NULL, NULL, 1, opts_net_set_token, "HEX",
      "Pre-shared token (TLS 1.3 PSK) instead of certificates; prefer PLAUNCH_TOKEN or --token-file.", NULL, 1 },
    { "token-file", NULL, NULL, 1, opts_net_set_token_file, "FILE", "File (mode 0600) holding the token.", NULL, 0 },
    { "insecure", NULL, NULL, 0, opts_net_set_insecure, NULL,
      "Plaintext control plane: anyone who reaches the port can join the job. Testing only.", NULL, 0 },
    { "scheduler", NULL, NULL, 1, s_set_scheduler, "KIND",
      "Where the job's shape comes from: auto (a Slurm step or a Kubernetes pod, when the environment shows "
      "one), slurm, k8s or none (default: auto). Explicit options and PLAUNCH_* variables always win. "
      "Outside a step, --scheduler slurm starts plaunch on every node of the allocation through srun.",
      .def = "auto" },
    { "monitor", NULL, NULL, 1, s_set_monitor, "SECONDS",
      "Sample every worker's GPU (NVML) and host metrics this often into LOG_DIR/monitor.NODE.csv and judge them at "
      "the end (the Health block, plaunch report); 0 turns it off (default: 1).", "1", 0 },
    { "monitor-config", NULL, NULL, 1, s_set_monitor_config, "FILE",
      "The health diagnosis thresholds ([monitor] section; see conf/monitor.ini for the keys and defaults).", NULL,
      0 },
    { "preflight", NULL, NULL, 1, opts_node_set_preflight, "warn|strict|off",
      "Node and GPU checks before any worker starts: /dev/shm smaller than the workers need, the locked-memory "
      "limit where InfiniBand is, a CUDA runtime newer than the driver, CUDA_VISIBLE_DEVICES or NCCL/GLOO_SOCKET_IFNAME "
      "naming what is not there, a memory cgroup below what the workers used; the GPUs exist and answer (retired "
      "pages, row remaps, ECC errors, other processes on them). One line per finding in plaunch.log and the Health "
      "block; strict refuses to start on any (exit status 2; 125 for a GPU's) (default: warn; on is warn).", "warn", 0 },
    { "preflight-shm", NULL, NULL, 1, opts_node_set_preflight_shm, "SIZE[,SIZE]",
      "The /dev/shm a GPU worker and a CPU worker need, for the preflight (default: 1G,256M).", "1G,256M", 0 },
    { "gpu-release-wait", NULL, NULL, 1, opts_node_set_gpu_release_wait, "SECONDS",
      "Before a restarted generation starts, wait at most this long until the last generation's processes hold no "
      "more GPU memory (NVML's process list), so that the new workers do not run out of memory at start; the wait "
      "is logged with its length; 0 turns it off (default: 30).", "30", 0 },
    { "cpu-bind", NULL, NULL, 1, opts_node_set_cpu_bind, "MODE",
      "Where each worker runs (docs/performance.md): numa (every CPU of its GPU's NUMA node), socket, cores (the "
      "node's cores split between its GPUs), core-complex (one last-level cache's cores), list:CPUS:CPUS:... (local "
      "rank i on the i-th list), none, or auto (default: numa where the machine has several NUMA nodes and plaunch "
      "was not started bound; CPU workers and GPUs without locality get an even split). Memory is preferred on the "
      "same NUMA nodes; OMP_NUM_THREADS is the worker's core count unless set.", "auto", 0 },
    { "numa-binding", "numa_binding", NULL, 1, opts_node_set_numa_binding, "node|socket|exclusive|core-complex",
      "torchrun's spelling of --cpu-bind: node is numa, exclusive is cores; socket and core-complex alike.", NULL,
      0 },
    { "print-binding", NULL, NULL, 0, opts_node_set_print_binding, NULL,
      "Print each worker's GPU (bus id), NUMA node, CPUs and why, then exit without starting anything.", NULL, 0 },
    { "hang-timeout", NULL, NULL, 1, s_set_hang_timeout, "SECONDS",
      "The job is hung when no rank progressed (wrote output or reported a step: PLAUNCH_PROGRESS_FILE, "
      "plaunch_progress) for this long, or one rank's step stood still this long while others went on; then every "
      "rank's stacks go to LOG_DIR/hang.GENERATION.txt; 0 turns it off (default: 900).", "900", 0 },
    { "on-hang", NULL, NULL, 1, s_set_on_hang, "restart|stop",
      "What a hung job does once its stacks are taken: restart (like a failure of the odd rank, while "
      "--max-restarts lasts) or stop (exit status 124) (default: restart). Without it, silence in a job that "
      "reports no steps only takes the stacks and warns; the job goes on (docs/hang.md).", "restart", 0 },
    { "metrics-port", NULL, NULL, 1, opts_net_set_metrics_port, "PORT",
      "Serve Prometheus metrics (text format) at http://ADDR:PORT/metrics on this node: its workers, steps, GPU and "
      "host gauges; the coordinator's node adds the job's restarts, incidents, lost time and goodput "
      "(docs/metrics.md); 0 serves none (default: 0).", "0", 0 },
    { "metrics-addr", NULL, NULL, 1, opts_net_set_metrics_addr, "ADDR",
      "The address --metrics-port listens on: 0.0.0.0 for every interface (default: 127.0.0.1).", "127.0.0.1",
      0 },
    /* paddle.distributed.launch's own */
    { "run_mode", NULL, NULL, 1, opts_paddle_set_run_mode, "collective",
      "Paddle's run mode: collective (the only one plaunch runs; ps, ps-heter, rpc are refused).", NULL, 0 },
    { "log_level", NULL, NULL, 1, opts_paddle_set_log_level, "LEVEL",
      "Paddle's launcher log level: ERROR or CRITICAL is --quiet; DEBUG, INFO, WARNING show plaunch's notes.", NULL,
      0 },
    { "legacy", NULL, NULL, 1, opts_paddle_set_legacy, "BOOL",
      "Paddle's legacy launcher: false accepted; true refused (plaunch speaks the current launcher).", NULL, 0 },
    { "log_overwrite", NULL, NULL, 1, opts_paddle_set_log_overwrite, "BOOL",
      "Paddle's: true empties the logs an earlier run left in --log-dir; false (default, as Paddle) keeps them: a "
      "new run appends after a marker line.", NULL, 0 },
    { "sort_ip", NULL, NULL, 1, opts_paddle_set_sort_ip, "BOOL",
      "Paddle's: accepted; plaunch ranks nodes by address whatever it says.", NULL, 0 },
    { "enable_gpu_log", NULL, NULL, 1, opts_paddle_set_gpu_log, "BOOL",
      "Paddle's: false turns the GPU monitor off (--monitor 0).", NULL, 0 },
    { "elastic_level", NULL, NULL, 1, opts_paddle_set_elastic_level, "-1",
      "Paddle's: -1 accepted; elastic jobs are --nnodes MIN:MAX.", NULL, 0 },
    { "servers", "trainers", "server_num", 1, opts_paddle_refuse_ps, "...",
      "Paddle's parameter-server options (also --trainer_num, --gloo_port, --with_gloo): refused.", NULL, 0 },
    { "trainer_num", "gloo_port", "with_gloo", 1, opts_paddle_refuse_ps, "...",
      "Paddle's parameter-server options: refused.", NULL, 0 },
    { "auto_parallel_config", "auto_cluster_config", "auto_tuner_json", 1, opts_paddle_refuse_auto, "...",
      "Paddle's auto-parallel tuner: refused.", NULL, 0 },
    { "npus", "xpus", NULL, 1, opts_paddle_refuse_device, "...",
      "Paddle's other accelerators: refused (NVIDIA GPUs: --gpus/--devices).", NULL, 0 },
    { "start_port", NULL, NULL, 1, opts_paddle_refuse_start_port, "PORT",
      "Paddle's fixed endpoint ports: refused (each rank gets a free port).", NULL, 0 },
    { "print-config", "dry-run", NULL, 0, s_set_print_config, NULL,
      "Print every option's value and where it came from (command line, environment, file, scheduler, "
      "default), then exit without starting anything.", NULL, 0 },
    { "relay-fanout", NULL, NULL, 1, opts_net_set_relay_fanout, "auto|off|K",
      "A job of many nodes forms a tree: about sqrt(nodes) of them each relay the TLS sessions, messages and "
      "heartbeats of K others, so the coordinator holds one session per relay. auto: from 513 nodes on, K the "
      "square root of --nnodes; off: every node talks to the coordinator (default: auto).", "auto", 0 },
    { "node-hosts", NULL, NULL, 1, opts_net_set_node_hosts, "HOSTS",
      "Every node's host in rank order (a Slurm host list: gpu[001-128]; default: SLURM_STEP_NODELIST in a Slurm "
      "step, Paddle's --ips, a Kubernetes pod's peers named after its own). With --node-rank and a tree (--relay-fanout), a node joins its relay directly, at "
      "its host and --master's port + 1: the coordinator holds only the relays' sessions.", NULL, 0 },
    { "heartbeat", NULL, NULL, 1, opts_net_set_heartbeat, "SECONDS", "Heartbeat interval (default: 0.5).", "0.5", 0 },
    { "heartbeat-timeout", NULL, NULL, 1, opts_net_set_heartbeat_timeout, "SECONDS",
      "A peer silent this long is lost: its node is dropped, or the agent stops (default: 2.5).", "2.5", 0 },
};
const int opts_ndefs = (int)(sizeof opts_defs / sizeof *opts_defs);
