/* opts: the launcher's options, one table read from the command line, PLAUNCH_* variables, the config file and
 * a scheduler's environment, with precedence CLI > environment > config file > scheduler > defaults. */
#include "launcher/opts/opts.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/sched/sched_detect.h"
#include "common/util.h"

#include "launcher/opts/opts_priv.h"

/* Matches a name with '-' and '_' treated alike; returns the definition or NULL. */
static const struct optdef *s_find(const char *name, size_t len)
{
    for (int i = 0; i < opts_ndefs; i++) {
        const char *cands[3] = { opts_defs[i].name, opts_defs[i].alias1, opts_defs[i].alias2 };
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
                return &opts_defs[i];
        }
    }
    return NULL;
}

/* Sets one option through its setter and records where the value came from. */
static int s_apply(struct opts *o, const struct optdef *d, const char *val, const char *origin, char *err,
                   size_t errlen)
{
    int k = (int)(d - opts_defs);
    if (d->set(o, val, origin, err, errlen) < 0)
        return -1;
    snprintf(o->origins[k], sizeof o->origins[k], "%s", origin);
    snprintf(o->values[k], sizeof o->values[k], "%s", val);
    return 0;
}

/* Whether a source (not the default) gave option name a value. */
static int s_given(const struct opts *o, const char *name)
{
    const struct optdef *d = s_find(name, strlen(name));
    return d && o->origins[d - opts_defs][0] != '\0';
}

/* A key of the config file: any option but --config itself (a config file cannot name another). */
static int s_ini_key(void *arg, const char *key, const char *value, const char *where, char *err, size_t errlen)
{
    const struct optdef *d = s_find(key, strlen(key));
    char origin[PATH_MAX + 160];
    if (!d || strcmp(d->name, "config") == 0) {
        snprintf(err, errlen, "%s: unknown key '%s'; see plaunch --help for the options; keys are their names "
                 "with '-' or '_'", where, key);
        return -1;
    }
    snprintf(origin, sizeof origin, "%s: %s", where, key);
    return s_apply(arg, d, value, origin, err, errlen);
}

long opts_hang_tick_ms(const struct opts *o)
{
    long ms = (long)(o->hang_timeout * 1000 / 4);
    return ms < 250 ? 250 : ms > 10000 ? 10000 : ms;
}

void opts_usage(const char *prog)
{
    printf("Usage: %s [OPTIONS] [--] PROGRAM [ARGS...]\n"
           "       %s probe [OPTIONS]        collective bandwidth (nccl-tests' method) and scaling report\n"
           "       %s report LOGDIR          a job's health and goodput from its log directory (plaunch report --help)\n"
           "       %s status [LOGDIR]        the job now: nodes, ranks, steps, GPUs (--master H:P asks the coordinator)\n"
           "       %s top [LOGDIR]           the same, refreshed on the terminal; q quits (plaunch status --help)\n"
           "       %s certs init|issue ...   private job CA and node certificates (plaunch certs --help)\n"
           "       %s token [FILE]           a fresh token for the other nodes (export PLAUNCH_TOKEN=...)\n\n"
           "Starts one worker per GPU (or N CPU workers), gives each the rank/world environment of\n"
           "PyTorch (torchrun), PaddlePaddle and NCCL programs, supervises them and keeps their logs.\n\n"
           "Options (each also PLAUNCH_<NAME> in the environment, or NAME in the --config file;\n"
           "the command line wins over the environment, which wins over the file):\n",
           prog, prog, prog, prog, prog, prog, prog);
    for (int i = 0; i < opts_ndefs; i++) {
        char left[80], range[160];
        snprintf(left, sizeof left, "--%s%s%s", opts_defs[i].name, opts_defs[i].has_arg ? " " : "",
                 opts_defs[i].has_arg ? opts_defs[i].metavar : "");
        printf("  %-26s %s\n", left, opts_defs[i].help);
        if (opts_defs[i].alias1)
            printf("  %-26s (also --%s%s%s)\n", "", opts_defs[i].alias1, opts_defs[i].alias2 ? ", --" : "",
                   opts_defs[i].alias2 ? opts_defs[i].alias2 : "");
        if (opts_range(opts_defs[i].name, range, sizeof range))
            printf("  %-26s %s: %s\n", "", opts_defs[i].metavar, range);
    }
    printf("  %-26s %s\n  %-26s %s\n\n", "-h, --help", "Show this help.", "--version", "Show the version.");
    printf("Exit status: the first failing worker's exit code (128+N when killed by signal N);\n"
           "2 for bad options or input; 126/127 when PROGRAM cannot be run or is not found;\n"
           "125 when the launcher itself fails; 128+N when plaunch was stopped by signal N.\n"
           "Logs: LOG_DIR/workerlog.<rank> (every byte each worker wrote), LOG_DIR/plaunch.log (plaunch.NODE.log on\n"
           "a multi-node job); a run appends to an earlier run's logs, after a marker line.\n"
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

static struct sched s_sched; /* what the scheduler said: s_apply_sched, then s_pod_hosts */

/* The scheduler's values, for the options no source gave; they come after the files and the environment, so
 * they lose to both, and they are taken as a whole: no coordinator of its own where the user named one. */

static int s_apply_sched(struct opts *o, char **envp, char *err, size_t errlen)
{
    if (sched_detect(o->scheduler, envp, &s_sched, err, errlen) < 0)
        return -1;
    o->sched_kind = (int)s_sched.kind;
    o->sched_srun = s_sched.srun;
    snprintf(o->sched_what, sizeof o->sched_what, "%s", s_sched.what);
    snprintf(o->sched_note, sizeof o->sched_note, "%s", s_sched.note);
    snprintf(o->node_name, sizeof o->node_name, "%s", s_sched.node_name);
    int master_given = s_given(o, "master") || s_given(o, "master-addr") || s_given(o, "ips"), ours = 0;
    /* the allocation's host list fits the allocation's shape only: not when the user gave it another */
    int shape_given = master_given || s_given(o, "nnodes") || s_given(o, "node-rank");
    for (int i = 0; i < s_sched.nsettings; i++) {
        const struct sched_setting *st = &s_sched.settings[i];
        const struct optdef *d = s_find(st->name, strlen(st->name));
        assert(d); /* sched names only options of the table */
        int coord = strcmp(st->name, "master-addr") == 0 || strcmp(st->name, "master-port") == 0;
        if (s_given(o, st->name) || (coord && (master_given || o->nnodes < 2)) ||
            (strcmp(st->name, "gpus") == 0 && s_given(o, "nproc-per-node")) ||
            (strcmp(st->name, "node-rank") == 0 && o->nnodes_min < o->nnodes) ||
            (strcmp(st->name, "node-hosts") == 0 && (shape_given || o->nnodes_min < o->nnodes)))
            continue;
        if (s_apply(o, d, st->value, st->origin, err, errlen) < 0)
            return -1;
        ours |= strcmp(st->name, "master-addr") == 0;
    }
    if (s_sched.gpu_scope[0]) { /* what --gpus ids index, as CUDA_VISIBLE_DEVICES: never a GPU outside the step's */
        snprintf(o->gpu_scope, sizeof o->gpu_scope, "%s", s_sched.gpu_scope);
        snprintf(o->origin_gpu_scope, sizeof o->origin_gpu_scope, "%s", s_sched.gpu_scope_origin);
    }
    /* Slurm's first node is the first host of the list; a Kubernetes job's index 0 is, by the manifests'
     * convention, the host behind --master. Either hosts the coordinator without waiting for its own name. */
    o->sched_node0 = s_sched.node_index == 0 && (s_sched.kind == SCHED_K8S || ours);
    return 0;
}

/* Kubernetes: every pod's host by rank for the ranked join, where the controller's naming gives it
 * (sched_k8s_hosts) and no source gave --node-hosts. Never an error: where nothing is derived the join is not
 * ranked, and node_hosts_note says why in one line. */
static int s_pod_hosts(struct opts *o, char *err, size_t errlen)
{
    char list[SCHED_VALUE_MAX], host[300], why[300], origin[200];
    const struct optdef *d = s_find("node-hosts", strlen("node-hosts"));
    int k = (int)(d - opts_defs);
    if (s_sched.kind != SCHED_K8S || o->nnodes < 2)
        return 0;
    if (s_given(o, "node-hosts")) {
        snprintf(o->node_hosts_note, sizeof o->node_hosts_note, "the hosts given by %.100s; nothing derived "
                 "from the pod's name", o->origins[k]);
        return 0;
    }
    const char *colon = strrchr(o->master, ':');
    if (o->nnodes_min < o->nnodes)
        snprintf(why, sizeof why, "an elastic --nnodes %d:%d (ranks follow the nodes present)", o->nnodes_min,
                 o->nnodes);
    else if (opts_is_etcd(o) || !colon)
        snprintf(why, sizeof why, "the coordinator is %s", opts_is_etcd(o) ? "elected through etcd" : "not named");
    else if (snprintf(host, sizeof host, "%.*s", (int)(colon - o->master), o->master) >= 0 &&
             sched_k8s_hosts(&s_sched, o->node_rank, o->nnodes, host, list, sizeof list, o->node_hosts_suffix,
                             sizeof o->node_hosts_suffix, why, sizeof why) == 0) {
        snprintf(origin, sizeof origin, "Kubernetes: HOSTNAME=%.60s and the coordinator's host%s%.60s%s",
                 s_sched.pod_host, o->node_hosts_suffix[0] ? ", each name + '" : "", o->node_hosts_suffix,
                 o->node_hosts_suffix[0] ? "'" : "");
        if (s_apply(o, d, list, origin, err, errlen) < 0)
            return -1;
        char first[300], last[300];
        if (opts_node_host(o, 0, first, sizeof first, why, sizeof why) == 0 &&
            opts_node_host(o, o->nnodes - 1, last, sizeof last, why, sizeof why) == 0)
            snprintf(o->node_hosts_note, sizeof o->node_hosts_note, "the pods' hosts %.150s .. %.150s, derived from "
                     "this pod's name", first, last);
        return 0;
    }
    snprintf(o->node_hosts_note, sizeof o->node_hosts_note, "not used: %s", why);
    return 0;
}

/* One PADDLE_* / POD_IP variable, applied over whatever set its option before (Paddle's precedence). */
static int s_paddle_var(void *arg, const char *option, const char *var, const char *value, char *err, size_t errlen)
{
    struct opts *o = arg;
    const struct optdef *d = s_find(option, strlen(option));
    char origin[80];
    assert(d); /* opts_paddle names only options of the table */
    int k = (int)(d - opts_defs);
    if (strncmp(o->origins[k], "--", 2) == 0 && strcmp(o->values[k], value) != 0) {
        size_t used = strlen(o->paddle_note);
        snprintf(o->paddle_note + used, sizeof o->paddle_note - used, "%s%s %.40s on the command line is overridden "
                 "by %s=%.40s (Paddle's precedence)", used ? "; " : "", o->origins[k], o->values[k], var, value);
    }
    snprintf(origin, sizeof origin, "environment %s", var);
    return s_apply(o, d, value, origin, err, errlen);
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
    assert(opts_ndefs <= OPTS_MAX_DEFS);
    o->node_rank = -1;
    for (int k = 0; k < opts_ndefs; k++) {
        char origin[80];
        snprintf(origin, sizeof origin, "the default --%s", opts_defs[k].name);
        if (opts_defs[k].def && opts_defs[k].set(o, opts_defs[k].def, origin, err, errlen) < 0)
            return -1; /* a default its own setter refuses: a bug in the table */
    }

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
        /* torchrun's short options: -m (--module), -t N and -tN (--tee), -r N and -rN (--redirects) */
        const char *name = a + 2, *eq, *inline_val = NULL;
        if (a[1] != '-') {
            name = a[1] == 'm' && !a[2] ? "module" : a[1] == 't' ? "tee" : a[1] == 'r' ? "redirects" : NULL;
            inline_val = name && a[2] ? a + 2 : NULL;
        }
        if (!name) {
            snprintf(err, errlen, "unknown option '%s'; options are long (--gpus, --nproc-per-node, ...) but for "
                     "torchrun's -m, -t, -r; see plaunch --help; put '--' before a program whose name starts with "
                     "'-'", a);
            return -1;
        }
        eq = a[1] == '-' ? strchr(name, '=') : NULL;
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
        if (a[1] == '-')
            snprintf(p->origin, sizeof p->origin, "--%.*s", (int)(nlen > 60 ? 60 : nlen), name);
        else
            snprintf(p->origin, sizeof p->origin, "-%c", a[1]);
        if (!d->has_arg) {
            if (eq) {
                snprintf(err, errlen, "option '--%s' takes no value", d->name);
                return -1;
            }
            p->val = "1";
        } else if (eq || inline_val) {
            p->val = eq ? eq + 1 : inline_val;
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
        if (strcmp(pairs[k].def->name, "config") == 0)
            cfg = pairs[k].val;
    if (cfg && *cfg) {
        snprintf(o->config, sizeof o->config, "%s", cfg);
        if (opts_ini_read(cfg, s_ini_key, o, err, errlen) < 0)
            return -1;
    }
    for (int k = 0; k < opts_ndefs; k++) {
        char name[64], origin[80];
        s_env_name(&opts_defs[k], name, sizeof name);
        const char *v = util_env_get(envp, name);
        if (!v || !*v || strcmp(opts_defs[k].name, "config") == 0)
            continue;
        snprintf(origin, sizeof origin, "environment %s", name);
        if (s_apply(o, &opts_defs[k], v, origin, err, errlen) < 0)
            return -1;
    }
    for (int k = 0; k < npairs; k++)
        if (s_apply(o, pairs[k].def, pairs[k].val, pairs[k].origin, err, errlen) < 0)
            return -1;
    /* Paddle's variables win over the command line, as in Paddle (its launcher warns, so does plaunch) */
    if (opts_paddle_env(envp, s_paddle_var, o, err, errlen) < 0)
        return -1;
    if (s_apply_sched(o, envp, err, errlen) < 0)
        return -1;

    o->on_hang_given = s_given(o, "on-hang");
    if (opts_prog_resolve(o, envp, err, errlen) < 0)
        return -1;
    if (opts_compat_resolve(o, err, errlen) < 0 || opts_torch_resolve(o, s_given(o, "rdzv-timeout"), err, errlen) < 0 ||
        opts_etcd_resolve(o, s_given(o, "rdzv-backend"), err, errlen) < 0)
        return -1;
    if (o->nnodes > 1 && !o->master[0] && !o->sched_srun) {
        snprintf(err, errlen, "--nnodes %d needs --master HOST:PORT (or --master-addr HOST): the coordinator's "
                 "address, the same on every node", o->nnodes);
        return -1;
    }
    if (o->node_rank >= 0 && o->nnodes_min < o->nnodes) {
        snprintf(err, errlen, "--node-rank cannot be combined with an elastic --nnodes %d:%d: ranks follow the nodes "
                 "present", o->nnodes_min, o->nnodes);
        return -1;
    }
    if (o->spares > 0 && o->nnodes < 2) {
        snprintf(err, errlen, "--spares %d needs a job of several nodes (--nnodes N --master HOST:PORT): a spare is "
                 "a node that waits to replace one", o->spares);
        return -1;
    }
    if (o->nnodes + o->spares > OPTS_MAX_NODES) {
        snprintf(err, errlen, "--nnodes %d with --spares %d is more than %d nodes", o->nnodes, o->spares,
                 OPTS_MAX_NODES);
        return -1;
    }
    if (o->node_rank >= o->nnodes + o->spares) {
        snprintf(err, errlen, "--node-rank %d is outside 0..%d for --nnodes %d%s", o->node_rank,
                 o->nnodes + o->spares - 1, o->nnodes, o->spares ? " with its spares (ranks from N are spares)" : "");
        return -1;
    }
    if (s_pod_hosts(o, err, errlen) < 0 || opts_check_heartbeat(o, err, errlen) < 0 ||
        opts_check_node_hosts(o, err, errlen) < 0)
        return -1;
    if (o->prog_argc < 1 && !o->print_config) {
        snprintf(err, errlen, "no program given; usage: plaunch [OPTIONS] PROGRAM [ARGS...] "
                 "(e.g. plaunch --nproc-per-node 4 python3 train.py)");
        return -1;
    }
    return 0;
}

void opts_print_config(const struct opts *o, FILE *out)
{
    static const char *const kinds[] = { "none", "Slurm", "Kubernetes" };
    fprintf(out, "plaunch %s configuration; scheduler: %s%s%s\n", PLAUNCH_VERSION,
            o->sched_kind > 0 && o->sched_kind < 3 ? kinds[o->sched_kind] : "none",
            o->sched_what[0] ? ", " : "", o->sched_what);
    fprintf(out, "  %-20s %-30s %s\n", "OPTION", "VALUE", "FROM");
    for (int k = 0; k < opts_ndefs; k++) {
        const struct optdef *d = &opts_defs[k];
        const char *from = o->origins[k][0] ? o->origins[k] : "default";
        const char *val = o->origins[k][0] ? o->values[k] : d->def ? d->def : "-";
        char name[64];
        snprintf(name, sizeof name, "--%s", d->name);
        if (d->secret && o->origins[k][0])
            val = "(set; not shown)";
        else if (!d->has_arg)
            val = (o->origins[k][0] ? strcmp(val, "0") && strcmp(val, "false") && strcmp(val, "no") : 0) ? "yes"
                                                                                                         : "no";
        fprintf(out, "  %-20s %-30.160s %s\n", name, val, from);
    }
    if (o->gpu_scope[0])
        fprintf(out, "  GPUs of the step: %s (%s); --gpus ids are labels of this list\n", o->gpu_scope, o->origin_gpu_scope);
    if (opts_is_etcd(o))
        fprintf(out, "  coordinator: elected through etcd at %s (the job's keys under /plaunch/%s/)\n", o->master + 7,
                o->job_id);
    else if (o->master[0])
        fprintf(out, "  coordinator: %s%s\n", o->master,
                o->sched_node0 ? ", hosted by this node (the scheduler's first node)" : "");
    if (o->sched_srun)
        fprintf(out, "  this is a batch script, not a step: plaunch starts itself on every node with srun\n");
    if (o->node_hosts_note[0])
        fprintf(out, "  ranked join: %s\n", o->node_hosts_note);
    if (o->sched_note[0])
        fprintf(out, "  note: %s\n", o->sched_note);
}
