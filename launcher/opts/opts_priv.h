/* opts_priv: the option table's shape, shared by opts.c (table, command line, environment) and opts_ini.c
 * (config file). Not for other modules. */
#ifndef PLAUNCH_OPTS_PRIV_H
#define PLAUNCH_OPTS_PRIV_H

#include <stddef.h>

#include "launcher/opts/opts.h"
#include "common/wire/wire.h"

typedef int (*opt_set_fn)(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);

struct optdef {
    const char *name;   /* long option; env PLAUNCH_<NAME>; config key (dashes or underscores) */
    const char *alias1; /* other spellings people bring from torchrun / paddle */
    const char *alias2;
    int has_arg;
    opt_set_fn set;
    const char *metavar;
    const char *help;
    const char *def;    /* the default, applied through set() first; NULL: the zero value */
    int secret;         /* never printed (--print-config says "set" and where from) */
};

/* opts_defs.c: the table. */
extern const struct optdef opts_defs[];
extern const int opts_ndefs;

/* opts_net.c: the setters of a multi-node job's options (size, spares, coordinator, hosts, deadlines, ...). */
int opts_net_set_spares(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_nnodes(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_master(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_node_rank(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_rdzv_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_heartbeat(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_heartbeat_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_elastic_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_tls_dir(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_token(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_token_file(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_insecure(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_relay_fanout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_node_hosts(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_metrics_port(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_net_set_metrics_addr(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
/* opts_compat.c: setters of the torchrun/Paddle spellings (--master-addr, --master-port, --ips, --standalone). */
int opts_compat_set_master_addr(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_compat_set_master_port(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_compat_set_ips(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_compat_set_standalone(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
/* Folds the torchrun/Paddle spellings (--master-addr/--master-port, --ips, --standalone) into nnodes, master,
 * node_rank and host, refusing contradictions; 0, or -1 with a message. Runs after every source was read. */
int opts_compat_resolve(struct opts *o, char *err, size_t errlen);
/* opts_torch.c: torchrun's own options (setters validate); resolve folds --rdzv-conf and --rdzv-endpoint in
 * (timeout_given: --rdzv-timeout came from a source, so join_timeout yields to it): 0, or -1 with a message. */
int opts_torch_set_tee(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_redirects(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_ranks_filter(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_rdzv_backend(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_rdzv_endpoint(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_rdzv_conf(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_monitor_interval(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_start_method(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_set_role(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
/* opts_node.c: preflight and binding */
int opts_node_set_preflight(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_node_set_preflight_shm(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_node_set_gpu_release_wait(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_node_set_cpu_bind(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_node_set_numa_binding(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_node_set_print_binding(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_torch_resolve(struct opts *o, int timeout_given, char *err, size_t errlen);
/* opts_etcd.c: --master etcd://... (checked, kept as given into out), --etcd-cacert/-cert/-key, torchrun's etcd
 * --rdzv-conf keys (1 taken, 0 not one, -1 refused) and endpoint, and the resolve after every source (torch: the
 * job's default name is torchrun's "none", else Paddle's "default"). 0, or -1 with a message. */
int opts_etcd_master(const char *val, char *out, size_t cap, const char *origin, char *err, size_t errlen);
int opts_etcd_set_cacert(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_etcd_set_cert(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_etcd_set_key(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_etcd_torch_conf(struct opts *o, const char *key, const char *val, char *err, size_t errlen);
int opts_etcd_torch_endpoint(struct opts *o, char *err, size_t errlen);
int opts_etcd_resolve(struct opts *o, int torch, char *err, size_t errlen);
/* opts_paddle.c: Paddle's own options (setters validate or refuse with a sentence), its --master forms into out
 * (HOST:PORT), and its variables: apply(arg, option, variable, value) for each PADDLE_* / POD_IP set, unless the
 * environment is a launcher's worker's. 0, or -1 with a message. */
int opts_paddle_set_run_mode(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_set_log_level(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_set_legacy(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_set_log_overwrite(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_set_sort_ip(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_set_gpu_log(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_set_elastic_level(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_refuse_ps(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_refuse_auto(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_refuse_device(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_refuse_start_port(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_paddle_master(const char *val, char *out, size_t cap, const char *origin, char *err, size_t errlen);
typedef int (*opts_paddle_apply_fn)(void *arg, const char *option, const char *var, const char *value, char *err,
                                    size_t errlen);
int opts_paddle_env(char **envp, opts_paddle_apply_fn apply, void *arg, char *err, size_t errlen);
/* opts_prog.c: the program's interpreter (--python, -m/--module, --no-python, --run-path); resolve puts the
 * interpreter in front of a script, a module or a --run-path program: 0, or -1 with a message. */
int opts_prog_set_python(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_prog_set_module(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_prog_set_no_python(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_prog_set_run_path(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_prog_resolve(struct opts *o, char **envp, char *err, size_t errlen);
/* opts_ini.c: reads the INI file at path (bounded, a regular file) and calls key() for every key of its [plaunch]
 * section with where = "FILE:LINE"; key() returns 0, or -1 with a message in err. 0, or -1 with a message naming
 * file:line. The reader knows nothing of the option table: the caller's key() does. */
typedef int (*opts_ini_key_fn)(void *arg, const char *key, const char *value, const char *where, char *err,
                               size_t errlen);
int opts_ini_read(const char *path, opts_ini_key_fn key, void *arg, char *err, size_t errlen);

/* opts_check.c: the ranges, derived from the control plane's bounds (common/wire.h). Every parser fills err with
 * "ORIGIN 'VALUE': expected ..., RANGE" and returns -1, or returns 0. */
#define OPTS_MAX_GRACE_S WIRE_MAX_GRACE_S   /* a STOP carries whole seconds */
#define OPTS_MAX_RESTARTS WIRE_MAX_RESTARTS
#define OPTS_MAX_NODES WIRE_MAX_NODES
#define OPTS_MAX_HEARTBEAT_TIMEOUT_S (WIRE_MAX_MS / 1000)
#define OPTS_MAX_HEARTBEAT_S 3600           /* a choice: an interval over an hour is a mistake */
#define OPTS_MIN_HEARTBEAT_S 0.009          /* exclusive lower bounds: both are at least 9 ms ... */
#define OPTS_MIN_HEARTBEAT_TIMEOUT_S 0.02   /* ... and 20 ms on the wire */
#define OPTS_MAX_WAIT_S 86400               /* --rdzv-timeout, --elastic-timeout: a day */
#define OPTS_MAX_JOB_ID WIRE_MAX_JOB_ID
#define OPTS_MAX_HOST WIRE_MAX_HOST
/* val into dst of cap bytes, or -1 with "ORIGIN: value is longer than ..." */
int opts_copy(char *dst, size_t cap, const char *val, const char *origin, char *err, size_t errlen);
/* true/1/yes or false/0/no into *out. */
int opts_parse_bool(const char *val, int *out, const char *origin, char *err, size_t errlen);
/* A whole decimal number in [lo, hi] (a count: [0, hi] into an int); what names it ("the number of workers"). */
int opts_parse_int(const char *val, long lo, long hi, long *out, const char *origin, const char *what, char *err,
                   size_t errlen);
int opts_parse_count(int *out, const char *val, long hi, const char *what, const char *origin, char *err, size_t errlen);
/* Seconds above lo (or from lo, when lo_inclusive) and at most hi. */
int opts_parse_seconds(const char *val, double lo, int lo_inclusive, double hi, double *out, const char *origin,
                       char *err, size_t errlen);
/* One host name or address as a JOIN carries it. */
int opts_check_host(const char *val, const char *origin, char *err, size_t errlen);
/* A token file that can be used (a regular file of at most OPTFILE_MAX_TOKEN bytes, mode 0600, a token), checked
 * up front: found out only when the control plane starts, a bad one would be reported after the job started. */
int opts_check_token_file(const char *path, const char *origin, char *err, size_t errlen);
/* The range of the option called name, for --help, into buf; 0 when it has none. */
int opts_range(const char *name, char *buf, size_t cap);
/* --heartbeat-timeout longer than --heartbeat in whole milliseconds, as the ASSIGN carries them. */
int opts_check_heartbeat(const struct opts *o, char *err, size_t errlen);
/* --node-hosts names --nnodes hosts (a fixed size); 0 or -1. */
int opts_check_node_hosts(const struct opts *o, char *err, size_t errlen);

#endif
