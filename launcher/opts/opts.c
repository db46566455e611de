/* opts: the launcher's options, one table read from the command line, PLAUNCH_* variables and the
 * config file, with precedence CLI > environment > config file > defaults. */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpus.h"
#include "idlist.h"
#include "util.h"

#include "opts_priv.h"


static int s_copy(char *dst, size_t cap, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strlen(val) >= cap) {
        snprintf(err, errlen, "%s: value is longer than %zu characters", origin, cap - 1);
        return -1;
    }
    memcpy(dst, val, strlen(val) + 1);
    return 0;
}

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
    long v;
    if (s_int(val, 1, OPTS_MAX_WORKERS, &v, origin, "the number of workers", err, errlen) < 0)
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
    if (strcmp(val, "all") != 0 && strcmp(val, "none") != 0 &&
        idlist_parse(val, "rank", 1 << 24, ids, OPTS_MAX_WORKERS, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s '%s': %s; expected 'all', 'none' or ranks like 0,3 or 0-3", origin, val,
                 why);
        return -1;
    }
    snprintf(o->origin_tee, sizeof o->origin_tee, "%s", origin);
    return s_copy(o->tee, sizeof o->tee, val, origin, err, errlen);
}

static int s_set_max_restarts(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long v;
    if (s_int(val, 0, OPTS_MAX_RESTARTS, &v, origin, "the number of restarts", err, errlen) < 0)
        return -1;
    o->max_restarts = (int)v;
    return 0;
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

static int s_set_nnodes(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long lo, hi;
    const char *colon = strchr(val, ':');
    char first[32];
    if (colon) {
        snprintf(first, sizeof first, "%.*s", (int)(colon - val) < 31 ? (int)(colon - val) : 31, val);
        if (s_int(first, 1, OPTS_MAX_NODES, &lo, origin, "MIN:MAX nodes", err, errlen) < 0 ||
            s_int(colon + 1, 1, OPTS_MAX_NODES, &hi, origin, "MIN:MAX nodes", err, errlen) < 0)
            return -1;
        if (lo > hi) {
            snprintf(err, errlen, "%s '%s': MIN is larger than MAX; expected e.g. 2:4", origin, val);
            return -1;
        }
    } else if (s_int(val, 1, OPTS_MAX_NODES, &lo, origin, "the number of nodes (or MIN:MAX)", err, errlen) < 0) {
        return -1;
    } else {
        hi = lo;
    }
    o->nnodes_min = (int)lo;
    o->nnodes = (int)hi;
    return 0;
}

static int s_set_elastic_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);

static int s_set_master(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    const char *colon = strrchr(val, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == val || !end || *end || port < 1 || port > 65535 || strlen(val) >= sizeof o->master) {
        snprintf(err, errlen, "%s '%s': expected HOST:PORT of the coordinator, e.g. 10.0.0.1:6170", origin, val);
        return -1;
    }
    return s_copy(o->master, sizeof o->master, val, origin, err, errlen);
}

static int s_set_node_rank(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long v;
    if (s_int(val, 0, OPTS_MAX_NODES - 1, &v, origin, "this node's rank", err, errlen) < 0)
        return -1;
    o->node_rank = (int)v;
    return 0;
}

/* Seconds in (lo, hi]: a timeout or an interval. */
#define s_seconds(val, lo, hi, out, origin, err, errlen) opts_parse_seconds(val, lo, 0, hi, out, origin, err, errlen)

static int s_set_rdzv_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, 0, OPTS_MAX_WAIT_S, &o->rdzv_timeout, origin, err, errlen);
}

static int s_set_heartbeat(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, OPTS_MIN_HEARTBEAT_S, OPTS_MAX_HEARTBEAT_S, &o->heartbeat, origin, err, errlen);
}

static int s_set_heartbeat_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, OPTS_MIN_HEARTBEAT_TIMEOUT_S, OPTS_MAX_HEARTBEAT_TIMEOUT_S, &o->heartbeat_timeout, origin,
                     err, errlen);
}

static int s_set_elastic_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, 0, OPTS_MAX_WAIT_S, &o->elastic_timeout, origin, err, errlen);
}

static int s_set_tls_dir(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_copy(o->tls_dir, sizeof o->tls_dir, val, origin, err, errlen);
}

static int s_set_token(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    size_t n = strlen(val);
    int ok = n >= 32 && n <= 128 && n % 2 == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = isxdigit((unsigned char)val[i]);
    if (!ok) {
        /* never echo a token: it is a secret even when malformed */
        snprintf(err, errlen, "%s: expected a token of 32 to 128 hex digits (plaunch prints one when it creates it)",
                 origin);
        return -1;
    }
    return s_copy(o->token, sizeof o->token, val, origin, err, errlen);
}

static int s_set_token_file(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (opts_check_token_file(val, origin, err, errlen) < 0)
        return -1;
    return s_copy(o->token_file, sizeof o->token_file, val, origin, err, errlen);
}

static int s_set_insecure(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->insecure, origin, err, errlen);
}

static const struct optdef s_defs[] = {
    { "gpus", "devices", NULL, 1, s_set_gpus, "LIST",
      "GPUs of this node, one worker each: 0,1,2,3 or 0-3 or all (every GPU the CUDA runtime "
      "reports). Ids index CUDA_VISIBLE_DEVICES when it is already set." },
    { "nproc-per-node", "nproc_per_node", NULL, 1, s_set_nproc, "N",
      "Number of workers on this node; CPU workers when --gpus is not given." },
    { "log-dir", "log_dir", NULL, 1, s_set_log_dir, "DIR",
      "Directory for workerlog.<rank> and plaunch.log (default: log)." },
    { "job-id", "job_id", "rdzv-id", 1, s_set_job_id, "ID", "Job name shown to workers (default: random)." },
    { "tee", NULL, NULL, 1, s_set_tee, "RANKS",
      "Ranks whose output is shown on the console with a [rank N] prefix: 0,3 or all or none "
      "(default: 0). Every rank's output is always in its workerlog." },
    { "max-restarts", "max_restarts", "max_restart", 1, s_set_max_restarts, "N",
      "Restart the whole job up to N times after a worker fails (default: 0)." },
    { "grace", NULL, NULL, 1, s_set_grace, "SECONDS",
      "Time workers get after SIGTERM before SIGKILL (default: 10)." },
    { "config", NULL, NULL, 1, s_set_config, "FILE", "INI file of options (see conf/plaunch.ini)." },
    { "host", NULL, NULL, 1, s_set_host, "ADDR",
      "Address workers use to reach this node (MASTER_ADDR; default: 127.0.0.1 on one node)." },
    { "quiet", NULL, NULL, 0, s_set_quiet, NULL, "Print nothing but worker output and errors." },
    { "nnodes", NULL, NULL, 1, s_set_nnodes, "N|MIN:MAX",
      "Number of nodes (default: 1). MIN:MAX is elastic: the job goes on with at least MIN nodes after losing "
      "some, and grows (a restart) when nodes join, up to MAX." },
    { "elastic-timeout", "elastic_timeout", NULL, 1, s_set_elastic_timeout, "SECONDS",
      "How long an elastic job waits for MIN nodes after losing some before it fails (default: 60)." },
    { "master", "rdzv-endpoint", NULL, 1, s_set_master, "HOST:PORT",
      "Coordinator address; the node that owns HOST runs the coordinator. Needed when --nnodes > 1." },
    { "master-addr", NULL, NULL, 1, opts_compat_set_master_addr, "HOST[:PORT]",
      "torchrun's spelling of --master: the coordinator's HOST, its port from --master-port (default 6170)." },
    { "master-port", NULL, NULL, 1, opts_compat_set_master_port, "PORT",
      "The coordinator's port for --master-addr HOST or --ips (default 6170); not the workers' MASTER_PORT." },
    { "ips", NULL, NULL, 1, opts_compat_set_ips, "ADDR,ADDR,...",
      "Paddle's node list (IPv4): --nnodes is its length, the coordinator runs on the first address, this "
      "node's rank is the position of its own address (or --rank)." },
    { "standalone", NULL, NULL, 0, opts_compat_set_standalone, NULL,
      "torchrun's one-node mode: what plaunch does without --nnodes; refused with --nnodes > 1, --master, --ips." },
    { "node-rank", "node_rank", "rank", 1, s_set_node_rank, "R",
      "This node's rank (default: assigned by the coordinator, in address order, and printed)." },
    { "rdzv-timeout", "rdzv_timeout", NULL, 1, s_set_rdzv_timeout, "SECONDS",
      "How long to wait for every node to join (default: 600)." },
    { "tls-dir", NULL, NULL, 1, s_set_tls_dir, "DIR",
      "Job CA and node certificates from 'plaunch certs' (default: ~/.plaunch/tls)." },
    { "token", NULL, NULL, 1, s_set_token, "HEX",
      "Pre-shared token (TLS 1.3 PSK) instead of certificates; prefer PLAUNCH_TOKEN or --token-file." },
    { "token-file", NULL, NULL, 1, s_set_token_file, "FILE", "File (mode 0600) holding the token." },
    { "insecure", NULL, NULL, 0, s_set_insecure, NULL,
      "Plaintext control plane: anyone who reaches the port can join the job. Testing only." },
    { "heartbeat", NULL, NULL, 1, s_set_heartbeat, "SECONDS", "Heartbeat interval (default: 0.5)." },
    { "heartbeat-timeout", NULL, NULL, 1, s_set_heartbeat_timeout, "SECONDS",
      "A peer silent this long is lost: its node is dropped, or the agent stops (default: 2.5)." },
};
#define NDEFS ((int)(sizeof s_defs / sizeof *s_defs))

/* Matches a name with '-' and '_' treated alike; returns the definition or NULL. */
static const struct optdef *s_find(const char *name, size_t len)
{
    for (int i = 0; i < NDEFS; i++) {
        const char *cands[3] = { s_defs[i].name, s_defs[i].alias1, s_defs[i].alias2 };
        for (int c = 0; c < 3; c++) {
            if (!cands[c] || strlen(cands[c]) != len)
                continue;
            size_t k = 0;
            for (; k < len; k++) {
                char a = cands[c][k] == '_' ? '-' : cands[c][k], b = name[k] == '_' ? '-' : name[k];
                if (a != b)
                    break;
            }
            if (k == len)
                return &s_defs[i];
        }
    }
    return NULL;
}

/* A key of the config file: any option but --config itself (a config file cannot name another). */
static int s_ini_key(void *arg, const char *key, const char *value, const char *where, char *err, size_t errlen)
{
    const struct optdef *d = s_find(key, strlen(key));
    char origin[PATH_MAX + 160];
    if (!d || d->set == s_set_config) {
        snprintf(err, errlen, "%s: unknown key '%s'; see plaunch --help for the options; keys are their names "
                 "with '-' or '_'", where, key);
        return -1;
    }
    snprintf(origin, sizeof origin, "%s: %s", where, key);
    return d->set(arg, value, origin, err, errlen);
}

long opts_heartbeat_tick_ms(const struct opts *o)
{
    double t = o->heartbeat < o->heartbeat_timeout / 10 ? o->heartbeat : o->heartbeat_timeout / 10;
    return t * 1000 < 1 ? 1 : (long)(t * 1000);
}

void opts_usage(const char *prog)
{
    printf("Usage: %s [OPTIONS] [--] PROGRAM [ARGS...]\n"
           "       %s probe [OPTIONS]        AllReduce bandwidth and scaling report (plaunch probe --help)\n"
           "       %s certs init|issue ...   private job CA and node certificates (plaunch certs --help)\n\n"
           "Starts one worker per GPU (or N CPU workers), gives each the rank/world environment of\n"
           "PyTorch (torchrun), PaddlePaddle and NCCL programs, supervises them and keeps their logs.\n\n"
           "Options (each also PLAUNCH_<NAME> in the environment, or NAME in the --config file;\n"
           "the command line wins over the environment, which wins over the file):\n",
           prog, prog, prog);
    for (int i = 0; i < NDEFS; i++) {
        char left[80], range[160];
        snprintf(left, sizeof left, "--%s%s%s", s_defs[i].name, s_defs[i].has_arg ? " " : "",
                 s_defs[i].has_arg ? s_defs[i].metavar : "");
        printf("  %-26s %s\n", left, s_defs[i].help);
        if (s_defs[i].alias1)
            printf("  %-26s (also --%s%s%s)\n", "", s_defs[i].alias1, s_defs[i].alias2 ? ", --" : "",
                   s_defs[i].alias2 ? s_defs[i].alias2 : "");
        if (opts_range(s_defs[i].name, range, sizeof range))
            printf("  %-26s %s: %s\n", "", s_defs[i].metavar, range);
    }
    printf("  %-26s %s\n  %-26s %s\n\n", "-h, --help", "Show this help.", "--version", "Show the version.");
    printf("Exit status: the first failing worker's exit code (128+N when killed by signal N);\n"
           "2 for bad options or input; 126/127 when PROGRAM cannot be run or is not found;\n"
           "125 when the launcher itself fails; 128+N when plaunch was stopped by signal N.\n"
           "Logs: LOG_DIR/workerlog.<rank> (every byte each worker wrote), LOG_DIR/plaunch.log.\n"
           "See plaunch(1) and docs/environment.md for the variables each worker gets.\n");
}

/* PLAUNCH_<NAME> with dashes as underscores, upper case. */
static void s_env_name(const struct optdef *d, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "PLAUNCH_");
    for (const char *p = d->name; *p && n + 1 < cap; p++)
        buf[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    buf[n] = '\0';
}

struct cli_pair {
    const struct optdef *def;
    const char *val;
    char origin[80];
};

int opts_load(struct opts *o, int argc, char **argv, char **envp, char *err, size_t errlen)
{
    static struct cli_pair pairs[256];
    int npairs = 0, i;
    memset(o, 0, sizeof *o);
    snprintf(o->log_dir, sizeof o->log_dir, "log");
    snprintf(o->tee, sizeof o->tee, "0");
    snprintf(o->origin_tee, sizeof o->origin_tee, "the default --tee");
    o->grace = 10;
    o->nnodes = 1;
    o->nnodes_min = 1;
    o->elastic_timeout = 60;
    o->node_rank = -1;
    o->rdzv_timeout = 600;
    o->heartbeat = 0.5;
    o->heartbeat_timeout = 2.5;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            opts_usage("plaunch");
            return 1;
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("plaunch %s\n", PLAUNCH_VERSION);
            return 1;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (a[1] != '-') {
            snprintf(err, errlen, "unknown option '%s'; options are long (--gpus, --nproc-per-node, ...), "
                     "see plaunch --help; put '--' before a program whose name starts with '-'", a);
            return -1;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const struct optdef *d = s_find(name, nlen);
        if (!d) {
            snprintf(err, errlen, "unknown option '--%.*s'; see plaunch --help", (int)nlen, name);
            return -1;
        }
        if (npairs == (int)(sizeof pairs / sizeof *pairs)) {
            snprintf(err, errlen, "too many options");
            return -1;
        }
        struct cli_pair *p = &pairs[npairs++];
        p->def = d;
        snprintf(p->origin, sizeof p->origin, "--%.*s", (int)(nlen > 60 ? 60 : nlen), name);
        if (!d->has_arg) {
            if (eq) {
                snprintf(err, errlen, "option '--%s' takes no value", d->name);
                return -1;
            }
            p->val = "1";
        } else if (eq) {
            p->val = eq + 1;
        } else if (i + 1 < argc) {
            p->val = argv[++i];
        } else {
            snprintf(err, errlen, "option '--%s' needs a value (%s)", d->name, d->metavar);
            return -1;
        }
    }
    o->prog_argc = argc - i;
    o->prog_argv = argv + i;

    /* The config file is named on the command line or in the environment, then read first. */
    const char *cfg = util_env_get(envp, "PLAUNCH_CONFIG");
    for (int k = 0; k < npairs; k++)
        if (pairs[k].def->set == s_set_config)
            cfg = pairs[k].val;
    if (cfg && *cfg) {
        snprintf(o->config, sizeof o->config, "%s", cfg);
        if (opts_ini_read(cfg, s_ini_key, o, err, errlen) < 0)
            return -1;
    }
    for (int k = 0; k < NDEFS; k++) {
        char name[64], origin[80];
        s_env_name(&s_defs[k], name, sizeof name);
        const char *v = util_env_get(envp, name);
        if (!v || !*v || s_defs[k].set == s_set_config)
            continue;
        snprintf(origin, sizeof origin, "environment %s", name);
        if (s_defs[k].set(o, v, origin, err, errlen) < 0)
            return -1;
    }
    for (int k = 0; k < npairs; k++)
        if (pairs[k].def->set(o, pairs[k].val, pairs[k].origin, err, errlen) < 0)
            return -1;

    if (opts_compat_resolve(o, err, errlen) < 0)
        return -1;
    if (o->nnodes > 1 && !o->master[0]) {
        snprintf(err, errlen, "--nnodes %d needs --master HOST:PORT (or --master-addr HOST): the coordinator's "
                 "address, the same on every node", o->nnodes);
        return -1;
    }
    if (o->node_rank >= 0 && o->nnodes_min < o->nnodes) {
        snprintf(err, errlen, "--node-rank cannot be combined with an elastic --nnodes %d:%d: ranks follow the nodes "
                 "present", o->nnodes_min, o->nnodes);
        return -1;
    }
    if (o->node_rank >= o->nnodes) {
        snprintf(err, errlen, "--node-rank %d is outside 0..%d for --nnodes %d", o->node_rank, o->nnodes - 1,
                 o->nnodes);
        return -1;
    }
    if (opts_check_heartbeat(o, err, errlen) < 0)
        return -1;
    if (o->prog_argc < 1) {
        snprintf(err, errlen, "no program given; usage: plaunch [OPTIONS] PROGRAM [ARGS...] "
                 "(e.g. plaunch --nproc-per-node 4 python3 train.py)");
        return -1;
    }
    return 0;
}
