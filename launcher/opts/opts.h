/* opts: the launcher's options, one table read from the command line, PLAUNCH_* variables and the
 * config file, with precedence CLI > environment > config file > defaults. */
#ifndef PLAUNCH_OPTS_H
#define PLAUNCH_OPTS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OPTS_MAX_WORKERS 1024
#define OPTS_MAX_DEFS 96     /* options in the table (opts_defs.c) */
/* The coordinator's port when --master-addr or --ips names only its host (the port of the docs' examples). */
#define OPTS_DEFAULT_PORT 6170

struct opts {
    char gpus[1024];           /* "" = CPU workers */
    int nproc;                 /* 0 = unset */
    char nproc_kind[8];        /* torchrun's --nproc-per-node gpu|cpu|auto ("" for a number or unset) */
    char log_dir[PATH_MAX];
    char job_id[65];
    char tee[1024];            /* --console-ranks: global ranks on the console, all, none, or first (each node's) */
    /* torchrun's console spellings (opts_torch.c): when one is given, each node's console follows them */
    char torch_tee[256];       /* -t/--tee: 0 none, 1 stdout, 2 stderr, 3 both; or LOCAL:N,... */
    char redirects[256];       /* -r/--redirects: the same forms: streams kept off the console */
    char ranks_filter[1024];   /* --local-ranks-filter: local ranks shown */
    char rdzv_backend[16];     /* --rdzv-backend: static or c10d (plaunch's rendezvous stands for both) */
    char rdzv_endpoint[300];   /* --rdzv-endpoint HOST[:PORT] */
    char rdzv_conf[1024];      /* --rdzv-conf KEY=VALUE,... */
    double monitor_interval;   /* --monitor-interval: accepted, plaunch sees exits at once */
    char start_method[16];     /* --start-method: spawn, fork, forkserver (scripts run as processes alike) */
    char role[64];             /* --role: ROLE_NAME */
    int worker_master_port;    /* one node: the workers' MASTER_PORT (--master-port), 0 = a free one per generation */
    char worker_master_addr[256]; /* one node: the workers' MASTER_ADDR (--master-addr), "" = --host */
    int log_overwrite;         /* Paddle's --log_overwrite: empty the logs of earlier runs (default: keep them) */
    char paddle_note[600];     /* what PADDLE_* variables overrode on the command line (Paddle's precedence) */
    int max_restarts;
    int max_no_progress;       /* --max-no-progress-restarts: restarts in a row without progress; 0 = off */
    double no_progress_time;   /* --no-progress-time: seconds a generation without step reports must run */
    double grace;              /* seconds */
    char config[PATH_MAX];
    char host[256];            /* address advertised to workers (MASTER_ADDR on one node) */
    int quiet;
    /* multi-node */
    int nnodes;                /* 1 = this node alone; with nnodes_min < nnodes: the most nodes (elastic) */
    int nnodes_min;            /* the fewest nodes the job runs on (= nnodes unless --nnodes MIN:MAX) */
    double elastic_timeout;    /* seconds to wait for enough nodes after losing some */
    int spares;                /* --spares: idle nodes beyond nnodes that replace lost or failing ones */
    char master[300];          /* HOST:PORT of the coordinator, or etcd://H:P[,H:P] to elect it; "" on one node */
    char etcd_cacert[PATH_MAX], etcd_cert[PATH_MAX], etcd_key[PATH_MAX]; /* TLS to etcd (--etcd-cacert, ...) */
    char etcd_scheme[8];       /* torchrun's --rdzv-conf protocol=http|https ("" = not given) */
    int node_rank;             /* -1 = assigned by the coordinator */
    double rdzv_timeout;       /* seconds to wait for every node */
    char tls_dir[PATH_MAX];    /* job CA and node certificates */
    char token[300];           /* hex pre-shared token */
    char token_file[PATH_MAX];
    int insecure;              /* plaintext control plane */
    double heartbeat, heartbeat_timeout;
    int relay_fanout;          /* --relay-fanout: nodes per relay; -1 auto, 0 off (no tree) */
    char node_hosts[8192];     /* --node-hosts: every node's host by rank (a Slurm host list); "" = not known */
    char node_hosts_suffix[256]; /* appended to every name of node_hosts (a Kubernetes pod's ".SUBDOMAIN"), or "" */
    char node_hosts_note[400]; /* Kubernetes: the hosts derived, or why none were (--print-config), or "" */
    /* torchrun / Paddle spellings, folded into nnodes, master, node_rank and host by opts_compat_resolve */
    char master_addr[300];     /* --master-addr HOST or HOST:PORT */
    int master_port;           /* --master-port; 0 = not given */
    int standalone;            /* --standalone */
    char ips[8192];            /* --ips A,B,...: Paddle's node list */
    char scheduler[8];         /* auto, none, slurm, k8s */
    double monitor;            /* --monitor: sampling interval in seconds, 0 = off */
    char monitor_config[PATH_MAX]; /* --monitor-config: the diagnosis thresholds; "" = the defaults */
    char preflight[8];         /* warn (also spelled on), strict, off */
    int cpu_bind;              /* enum topo_mode (launcher/topo/topo.h): --cpu-bind, or torchrun's --numa-binding */
    char cpu_bind_list[1024];  /* --cpu-bind list:LISTS: what follows "list:" */
    int print_binding;         /* --print-binding: show each worker's CPUs and why, run nothing */
    uint64_t shm_gpu, shm_cpu; /* --preflight-shm: bytes of /dev/shm a GPU worker and a CPU worker need */
    double gpu_release_wait;   /* --gpu-release-wait: seconds a restart waits for the GPUs' memory; 0 = off */
    double hang_timeout;       /* --hang-timeout: seconds without progress before the job is hung; 0 = off */
    char on_hang[8];           /* --on-hang: restart (while the budget lasts), stop */
    int on_hang_given;         /* a source named --on-hang: silence alone may end the job (docs/hang.md) */
    int metrics_port;          /* --metrics-port: serve /metrics (Prometheus) on this port; 0 = off */
    char metrics_addr[64];     /* --metrics-addr: its address, an IPv4 or IPv6 literal (default 127.0.0.1) */
    int print_config;          /* --print-config: show the values and their sources, run nothing */
    /* What a scheduler said (launcher/sched/), filled by opts_load */
    int sched_kind;            /* enum sched_kind */
    int sched_srun;            /* --scheduler slurm outside a step: start every node's plaunch through srun */
    int sched_node0;           /* the scheduler's first node: it hosts the coordinator, whatever --master resolves to */
    char sched_what[300];      /* "Slurm job 12, step 0" */
    char sched_note[600];      /* a line for the user from the scheduler layer, or "" */
    char node_name[256];       /* names this node's files (plaunch.NODE.log): SLURMD_NODENAME, else "" (host name) */
    char gpu_scope[1024];      /* the GPUs a scheduler gave the step when CUDA_VISIBLE_DEVICES is unset */
    char origin_gpu_scope[300];
    /* Where each value came from, for error messages that name the offending input. */
    char origin_gpus[300], origin_nproc[300], origin_tee[300];
    /* Per option of the table (by index): where its value came from ("" = its default) and the value as given,
     * for --print-config. */
    char origins[OPTS_MAX_DEFS][200];
    char values[OPTS_MAX_DEFS][160];
    /* The program (opts_prog.c) */
    char python[PATH_MAX];     /* --python: the interpreter of scripts; "" = PYTHON_EXEC, else python3 */
    char python_used[PATH_MAX]; /* the interpreter put before the program, "" when none was */
    int module, no_python, run_path; /* -m/--module, --no-python, --run-path */
    int prog_argc;
    char **prog_argv;          /* borrowed from argv, or with the interpreter in front (opts_prog.c) */
};

/* Fills o from defaults, config file, environment (envp) and argv (argv[0] is the program name).
 * Returns 0 to run, 1 when --help/--version was printed, -1 on bad input with err filled
 * (the caller exits 2). */
int opts_load(struct opts *o, int argc, char **argv, char **envp, char *err, size_t errlen);

/* How often agents report their ranks' progress and the coordinator judges it: a quarter of --hang-timeout,
 * within 0.25..10 s. */
long opts_hang_tick_ms(const struct opts *o);

/* The host of node `rank` in --node-hosts, node_hosts_suffix appended, into out (cap bytes). 0, or -1 with a
 * message (none given, bad index, too long). */
int opts_node_host(const struct opts *o, int rank, char *out, size_t cap, char *err, size_t errlen);

/* Seconds as the control plane carries them: whole milliseconds, rounded, at least 1 (opts_check.c). */
uint32_t opts_ms(double seconds);

/* --print-config: every option, its value (secrets hidden) and where it came from, and what the scheduler said. */
void opts_print_config(const struct opts *o, FILE *out);

/* The streams (bit 1 stdout, bit 2 stderr) a torchrun --tee/--redirects value (checked) names for local_rank. */
int opts_torch_streams(const char *spec, int local_rank);

/* Prints usage to stdout. */
void opts_usage(const char *prog);

/* --master is etcd://...: the agents elect the coordinator through etcd (opts_etcd.c). */
int opts_is_etcd(const struct opts *o);

#endif
