/* cmd_probe: `plaunch probe`, the collectives' bandwidth sweeps and scaling-efficiency report (docs/probe.md). */
#include "launcher/probe/cmd_probe.h"

#include "common/ownfile.h"
#include "common/proc.h"
#include "common/util.h"
#include "launcher/probe/analysis/probe_analysis.h"
#include "launcher/probe/report/probe_html.h"
#include "launcher/probe/report/probe_report.h"
#include "launcher/probe/measure/probe_run.h"
#include "worker/probe/probe_op.h"
#include "worker/probe/probe_size.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>

static const char S_USAGE[] =
    "usage: plaunch probe [--gpus LIST] [--op LIST] [-d TYPE] [-b SIZE] [-e SIZE] [-f FACTOR] [-n ITERS]\n"
    "                     [-w WARMUP] [--timing host|events] [--grad-bytes SIZE] [--step-gflop G]\n"
    "                     [--no-pairwise] [--thresholds FILE] [--json FILE] [--html FILE] [-q]\n"
    "       plaunch probe --report IN.json [--thresholds FILE] [--json FILE] [--html FILE] [-q]\n"
    "\n"
    "Measures collective bandwidth for N = 1, 2, 4, ... GPUs the way nccl-tests does (same timing, same\n"
    "out-of-place and in-place columns, same algbw and busbw) and a synthetic training step, then flags\n"
    "sublinear scaling against the thresholds.\n"
    "  --report IN.json    re-analyse saved measurements; needs no GPU\n"
    "  --gpus LIST         GPUs to probe: all (default) or indices like 0,1\n"
    "  --op LIST           collectives, comma-separated: allreduce (default), allgather, reducescatter,\n"
    "                      broadcast, alltoall, or all; the synthetic step runs each one named\n"
    "                      (FSDP/ZeRO: reducescatter,allgather; MoE: alltoall)\n"
    "  -d TYPE             data type: float (default), half, bfloat16\n"
    "  -b, -e SIZE         smallest / largest message (default 1M / 1G; suffixes K M G)\n"
    "  -f FACTOR           size multiplier between steps (default 2)\n"
    "  -n ITERS, -w N      timed and warm-up iterations per size (default 20 / 5)\n"
    "  --timing METHOD     host: wall clock around the timed loop, nccl-tests' method (default);\n"
    "                      events: CUDA events around it (labelled so in every output)\n"
    "  --grad-bytes SIZE   gradient bytes each collective of the synthetic step moves (default 87000000)\n"
    "  --step-gflop G      compute per synthetic step and GPU, GFLOP (default 350)\n"
    "  --no-pairwise       skip the pairwise bandwidth matrix\n"
    "  --thresholds FILE   efficiency and bandwidth limits (format: conf/probe.ini; default: built in)\n"
    "  --json FILE         write measurements + analysis as JSON (- = stdout)\n"
    "  --html FILE         write a self-contained HTML report with SVG charts (- = stdout)\n"
    "  -q, --quiet         no terminal table\n"
    "  --nnodes, --master, --node-rank, --token, --token-file, --tls-dir, --insecure, --host, --job-id,\n"
    "  --log-dir, --rdzv-timeout, --heartbeat, --heartbeat-timeout: as for plaunch, for a multi-node probe\n"
    "Exit status: 0 clean, 3 a flag fired, 2 usage or input error, 1 nothing measured (no GPU, worker failed).\n";

#define PROBE_MAX_PASSTHRU 32

struct s_opts {
    const char *report, *json, *html, *thresholds, *gpus;
    const char *passthru[PROBE_MAX_PASSTHRU]; /* launcher options for a multi-node probe, as "--opt", "value" */
    int npassthru;
    int quiet;
    struct probe_run_opts run;
    int measure_opts; /* how many measurement options were given (they make no sense with --report) */
};

static int s_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int s_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("plaunch probe: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("; see `plaunch probe --help`\n", stderr);
    return PROBE_EXIT_USAGE;
}

static int s_check_value(int c, const char *v)
{
    uint64_t u;
    char *end = NULL;
    errno = 0;
    switch (c) {
    case 'b': case 'e': case 'G':
        if (probe_size_parse(v, &u) < 0)
            return s_usage_error("'%s' is not a byte size for %s (examples: 1048576, 64K, 8M, 1G)", v,
                                 c == 'b' ? "-b" : c == 'e' ? "-e" : "--grad-bytes");
        return 0;
    case 'f': case 'n': case 'w': {
        long l = strtol(v, &end, 10);
        long min = c == 'f' ? 2 : c == 'n' ? 1 : 0;
        if (errno || end == v || *end || l < min || l > 1000000) {
            char flag[3] = { '-', (char)c, '\0' };
            return s_usage_error("'%s' for %s: give a whole number from the minimum (-f 2, -n 1, -w 0) up", v, flag);
        }
        return 0;
    }
    case 'S': {
        double d = strtod(v, &end);
        if (errno || end == v || *end || !(d > 0) || d > 1e9)
            return s_usage_error("'%s' for --step-gflop: give a positive number of GFLOP, e.g. 350", v);
        return 0;
    }
    case 'O': {
        enum probe_op ops[PROBE_NOPS];
        char bad[64];
        if (probe_ops_parse_list(v, ops, bad, sizeof bad) < 0)
            return s_usage_error("--op '%s': '%s' is not a collective; valid: %s, comma-separated", v, bad,
                                 PROBE_OPS_VALID);
        return 0;
    }
    case 'd': {
        enum probe_dtype t;
        if (probe_dtype_parse(v, &t) < 0 || strcmp(v, "float32") == 0)
            return s_usage_error("-d '%s' is not a data type the probe measures; valid: %s", v, PROBE_DTYPES_VALID);
        return 0;
    }
    case 't': {
        enum probe_timing t;
        if (probe_timing_parse(v, &t) < 0)
            return s_usage_error("--timing '%s': valid: %s", v, PROBE_TIMINGS_VALID);
        return 0;
    }
    }
    return 0;
}

/* 0 and *o filled; 1 after --help; PROBE_EXIT_USAGE on a bad command line. */
static int s_parse(int argc, char **argv, struct s_opts *o)
{
    static const struct option longopts[] = {
        { "report", required_argument, NULL, 'r' },     { "json", required_argument, NULL, 'J' },
        { "html", required_argument, NULL, 'H' },       { "thresholds", required_argument, NULL, 'T' },
        { "gpus", required_argument, NULL, 'g' },       { "minbytes", required_argument, NULL, 'b' },
        { "maxbytes", required_argument, NULL, 'e' },   { "stepfactor", required_argument, NULL, 'f' },
        { "iters", required_argument, NULL, 'n' },      { "warmup_iters", required_argument, NULL, 'w' },
        { "grad-bytes", required_argument, NULL, 'G' }, { "step-gflop", required_argument, NULL, 'S' },
        { "no-pairwise", no_argument, NULL, 'P' },      { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        /* launcher options, handed to the plaunch that starts one worker per GPU */
        { "nnodes", required_argument, NULL, 1 },       { "master", required_argument, NULL, 1 },
        { "node-rank", required_argument, NULL, 1 },    { "host", required_argument, NULL, 1 },
        { "token", required_argument, NULL, 1 },        { "token-file", required_argument, NULL, 1 },
        { "tls-dir", required_argument, NULL, 1 },      { "job-id", required_argument, NULL, 1 },
        { "log-dir", required_argument, NULL, 1 },      { "rdzv-timeout", required_argument, NULL, 1 },
        { "heartbeat", required_argument, NULL, 1 },    { "heartbeat-timeout", required_argument, NULL, 1 },
        { "insecure", no_argument, NULL, 2 },           { "op", required_argument, NULL, 'O' },
        { "datatype", required_argument, NULL, 'd' },   { "timing", required_argument, NULL, 't' },
        { NULL, 0, NULL, 0 },
    };
    int idx = 0;
    int c;
    memset(o, 0, sizeof *o);
    optind = 0; /* glibc: a full re-initialisation, whatever the caller parsed before */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:e:f:n:w:d:qh", longopts, &idx)) != -1) {
        if (c == 1 || c == 2) {
            if (o->npassthru + 2 > PROBE_MAX_PASSTHRU)
                return s_usage_error("too many launcher options");
            static char names[PROBE_MAX_PASSTHRU][32];
            snprintf(names[o->npassthru], sizeof names[0], "--%s", longopts[idx].name);
            o->passthru[o->npassthru] = names[o->npassthru];
            o->npassthru++;
            if (c == 1)
                o->passthru[o->npassthru++] = optarg;
            o->measure_opts++;
            continue;
        }
        if (c == '?')
            return s_usage_error("unknown option '%s'", argv[optind - 1]);
        if (c == ':')
            return s_usage_error("option '%s' needs a value", argv[optind - 1]);
        if (optarg && s_check_value(c, optarg) != 0)
            return PROBE_EXIT_USAGE;
        switch (c) {
        case 'r': o->report = optarg; break;
        case 'J': o->json = optarg; break;
        case 'H': o->html = optarg; break;
        case 'T': o->thresholds = optarg; break;
        case 'g': o->gpus = optarg, o->measure_opts++; break;
        case 'b': o->run.min_bytes = optarg, o->measure_opts++; break;
        case 'e': o->run.max_bytes = optarg, o->measure_opts++; break;
        case 'f': o->run.factor = optarg, o->measure_opts++; break;
        case 'n': o->run.iters = optarg, o->measure_opts++; break;
        case 'w': o->run.warmup = optarg, o->measure_opts++; break;
        case 'G': o->run.grad_bytes = optarg, o->measure_opts++; break;
        case 'S': o->run.step_gflop = optarg, o->measure_opts++; break;
        case 'P': o->run.no_pairwise = 1, o->measure_opts++; break;
        case 'O': o->run.ops = optarg, o->measure_opts++; break;
        case 'd': o->run.dtype = optarg, o->measure_opts++; break;
        case 't': o->run.timing = optarg, o->measure_opts++; break;
        case 'q': o->quiet = 1; break;
        case 'h': fputs(S_USAGE, stdout); return 1;
        }
    }
    if (optind < argc)
        return s_usage_error("unexpected argument '%s'", argv[optind]);
    if (o->report && o->measure_opts)
        return s_usage_error("--report re-analyses saved measurements; measurement options (--gpus, --op, -d, "
                             "--timing, -b, -e, -f, -n, -w, --grad-bytes, --step-gflop, --no-pairwise) apply only "
                             "to a live probe");
    if (o->json && o->html && strcmp(o->json, "-") == 0 && strcmp(o->html, "-") == 0)
        return s_usage_error("--json - and --html - cannot both write to stdout");
    return 0;
}

/* Loads, analyses and reports one measurement file. */
static int s_report(const char *in, const struct s_opts *o, const struct probe_thresholds *t)
{
    struct probe_err err;
    struct probe_meas *m = probe_meas_load(in, &err);
    struct probe_analysis *a = NULL;
    int rc = PROBE_EXIT_USAGE;
    if (m == NULL) {
        fprintf(stderr, "plaunch probe: %s\n", err.msg);
        return PROBE_EXIT_USAGE;
    }
    if ((a = probe_analyse(m, t, &err)) == NULL) {
        fprintf(stderr, "plaunch probe: %s: %s\n", in, err.msg);
        rc = PROBE_EXIT_NOT_RUN;
        goto out;
    }
    int to_stdout = (o->json && strcmp(o->json, "-") == 0) || (o->html && strcmp(o->html, "-") == 0);
    if (!o->quiet)
        probe_report_table(to_stdout ? stderr : stdout, m, a);
    if (o->json && probe_report_json_write(o->json, m, a, t, &err) < 0)
        goto fail;
    if (o->html && probe_html_write(o->html, m, a, &err) < 0)
        goto fail;
    rc = probe_analysis_exit_status(a);
    if (rc && o->quiet)
        fprintf(stderr, "plaunch probe: %d flag(s) fired (exit status %d)\n", a->nflags, rc);
    goto out;
fail:
    fprintf(stderr, "plaunch probe: %s\n", err.msg);
out:
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
    return rc;
}

/* Runs the worker through plaunch itself (this very binary): one rank per GPU, the NCCL id from libplaunch.
 * Returns the launcher's exit status, or -1 with err set. */
static int s_run_launcher(const struct s_opts *o, char *const wargv[], struct probe_err *err)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) {
        probe_err_set(err, "cannot find the plaunch binary (/proc/self/exe: %s)", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    const char *argv[PROBE_MAX_PASSTHRU + 64];
    int k = 0;
    argv[k++] = self;
    argv[k++] = "--gpus";
    argv[k++] = o->gpus ? o->gpus : "all";
    argv[k++] = "--console-ranks";
    argv[k++] = "0";
    argv[k++] = "--quiet";
    for (int i = 0; i < o->npassthru; i++)
        argv[k++] = o->passthru[i];
    argv[k++] = "--";
    for (int i = 0; wargv[i] && k < (int)(sizeof argv / sizeof *argv) - 1; i++)
        argv[k++] = wargv[i];
    argv[k] = NULL;
    setenv("NCCL_NVLS_ENABLE", "0", 1); /* never NVLink multicast objects from the probe */
    struct proc_spawn sp = PROC_SPAWN_INIT;
    sp.path = self;
    sp.argv = (char *const *)argv;
    int status = 0;
    if (proc_run(&sp, &status) < 0) {
        probe_err_set(err, "cannot start %s: %s", self, strerror(errno));
        return -1;
    }
    return util_exit_code(status);
}

/* Measures through the launcher, then reports what rank 0 wrote. */
static int s_live(const struct s_opts *o, const struct probe_thresholds *t)
{
    struct probe_err err;
    int ngpus = probe_run_gpu_check(&err);
    if (ngpus < 0) {
        fprintf(stderr, "plaunch probe: %s\n", err.msg);
        return PROBE_EXIT_NOT_RUN;
    }
    (void)ngpus;
    char *worker = probe_run_worker_path(&err), **argv = NULL;
    struct ownfile_new scratch = { .fd = -1 }; /* the worker's measurements: a random name of ours in /tmp */
    const char *out = scratch.tmp;
    char msg[4200];
    int rc = PROBE_EXIT_NOT_RUN;
    if (worker == NULL) {
        fprintf(stderr, "plaunch probe: %s\n", err.msg);
        return PROBE_EXIT_NOT_RUN;
    }
    if (ownfile_new_open(&scratch, "/tmp/plaunch-probe.json", 0600, 0, msg, sizeof msg) < 0) {
        fprintf(stderr, "plaunch probe: %s\n", msg);
        goto done;
    }
    if ((argv = probe_run_worker_argv(worker, &o->run, out)) == NULL) {
        fprintf(stderr, "plaunch probe: out of memory\n");
        goto done;
    }
    int status = s_run_launcher(o, argv, &err);
    struct stat st;
    if (status < 0) {
        fprintf(stderr, "plaunch probe: %s\n", err.msg);
        goto done;
    }
    if (status != 0)
        fprintf(stderr, "plaunch probe: the probe workers failed (status %d); see the launcher's messages above "
                        "and log/workerlog.<rank>\n", status);
    if (status == 0 && stat(out, &st) == 0 && st.st_size == 0) {
        fprintf(stderr, "plaunch probe: rank 0 ran on another node and wrote its measurements there; run "
                        "`plaunch probe --report` on that node's JSON\n");
        rc = PROBE_EXIT_CLEAN;
        goto done;
    }
    /* a failed worker may still have left its preflight (a CUDA mismatch, say): report what it found */
    if (status == 0 || (stat(out, &st) == 0 && st.st_size > 0))
        rc = s_report(out, o, t);
    if (status != 0 && rc == PROBE_EXIT_CLEAN)
        rc = PROBE_EXIT_NOT_RUN;
done:
    ownfile_new_abort(&scratch); /* the scratch file goes (the worker renamed its own over it) */
    probe_run_argv_free(&argv);
    free(worker);
    return rc;
}

int cmd_probe(int argc, char **argv)
{
    struct s_opts o;
    struct probe_thresholds t;
    struct probe_err err;
    int rc = s_parse(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? PROBE_EXIT_CLEAN : rc;
    probe_thresholds_default(&t);
    if (o.thresholds && probe_thresholds_load(o.thresholds, &t, &err) < 0) {
        fprintf(stderr, "plaunch probe: %s\n", err.msg);
        return PROBE_EXIT_USAGE;
    }
    return o.report ? s_report(o.report, &o, &t) : s_live(&o, &t);
}
