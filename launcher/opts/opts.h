/* opts: the launcher's options, one table read from the command line, PLAUNCH_* variables and the
 * config file, with precedence CLI > environment > config file > defaults. */
#ifndef PLAUNCH_OPTS_H
#define PLAUNCH_OPTS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define OPTS_MAX_WORKERS 1024
/* The coordinator's port when --master-addr or --ips names only its host (the port of the docs' examples). */
#define OPTS_DEFAULT_PORT 6170

struct opts {
    char gpus[1024];           /* "" = CPU workers */
    int nproc;                 /* 0 = unset */
    char log_dir[PATH_MAX];
    char job_id[65];
    char tee[1024];
    int max_restarts;
    double grace;              /* seconds */
    char config[PATH_MAX];
    char host[256];            /* address advertised to workers (MASTER_ADDR on one node) */
    int quiet;
    /* multi-node */
    int nnodes;                /* 1 = this node alone; with nnodes_min < nnodes: the most nodes (elastic) */
    int nnodes_min;            /* the fewest nodes the job runs on (= nnodes unless --nnodes MIN:MAX) */
    double elastic_timeout;    /* seconds to wait for enough nodes after losing some */
    char master[300];          /* HOST:PORT of the coordinator; "" on one node */
    int node_rank;             /* -1 = assigned by the coordinator */
    double rdzv_timeout;       /* seconds to wait for every node */
    char tls_dir[PATH_MAX];    /* job CA and node certificates */
    char token[300];           /* hex pre-shared token */
    char token_file[PATH_MAX];
    int insecure;              /* plaintext control plane */
    double heartbeat, heartbeat_timeout;
    /* torchrun / Paddle spellings, folded into nnodes, master, node_rank and host by opts_compat_resolve */
    char master_addr[300];     /* --master-addr HOST or HOST:PORT */
    int master_port;           /* --master-port; 0 = not given */
    int standalone;            /* --standalone */
    char ips[8192];            /* --ips A,B,...: Paddle's node list */
    /* Where each value came from, for error messages that name the offending input. */
    char origin_gpus[300], origin_nproc[300], origin_tee[300];
    int prog_argc;
    char **prog_argv;          /* borrowed from argv */
};

/* Fills o from defaults, config file, environment (envp) and argv (argv[0] is the program name).
 * Returns 0 to run, 1 when --help/--version was printed, -1 on bad input with err filled
 * (the caller exits 2). */
int opts_load(struct opts *o, int argc, char **argv, char **envp, char *err, size_t errlen);

/* How often both sides look at heartbeats: every --heartbeat, or a tenth of --heartbeat-timeout if that is
 * shorter, so a loss is seen within 110 % of the timeout. In milliseconds, at least 1. */
long opts_heartbeat_tick_ms(const struct opts *o);

/* Seconds as the control plane carries them: whole milliseconds, rounded, at least 1 (opts_check.c). */
uint32_t opts_ms(double seconds);

/* Prints usage to stdout. */
void opts_usage(const char *prog);

#endif
