/* main: plaunch entry point; dispatches subcommands and runs the launcher on this node. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "launcher/cli/cmd_certs.h"
#include "launcher/probe/cmd_probe.h"
#include "launcher/cli/cmd_report.h"
#include "launcher/cli/cmd_status.h"
#include "launcher/cli/cmd_token.h"
#include "launcher/agent/creds.h"
#include "launcher/hang/hang_stacks.h"
#include "launcher/sched/sched_srun.h"
#include "common/tls/tls_chan.h"
#include "common/util.h"
#include "launcher/agent/agent.h"
#include "launcher/job/job.h"
#include "launcher/job/jobsetup.h"
#include "launcher/job/jobworkers.h"
#include "common/log.h"
#include "common/loop.h"
#include "launcher/monitor/sampling/mon_sampler.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"
#include "launcher/opts/opts.h"
#include "launcher/supervisor/output.h"
#include "common/proc.h"
#include "launcher/supervisor/sentinel.h"
#include "launcher/supervisor/spawn_worker.h"
#include "launcher/supervisor/supervise.h"
#include "launcher/topo/topo.h"
#include "launcher/supervisor/wenv.h"

extern char **environ;

static int s_usage_error(const char *err)
{
    fprintf(stderr, "plaunch: error: %s\nTry 'plaunch --help' for the options.\n", err);
    return 2;
}

/* The command line as a shell would need it, for the "run this on the other nodes" hint. */
static void s_command_line(int argc, char **argv, char *buf, size_t cap)
{
    size_t o = 0;
    for (int i = 0; i < argc && o + 8 < cap; i++) {
        const char *a = i == 0 ? "plaunch" : argv[i];
        int plain = *a != '\0';
        for (const char *c = a; *c && plain; c++)
            plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/=@%+", *c) != NULL;
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? " " : "", plain ? "" : "'");
        for (const char *c = a; *c && o + 6 < cap; c++)
            o += (size_t)(*c == '\'' ? snprintf(buf + o, cap - o, "'\\''") : snprintf(buf + o, cap - o, "%c", *c));
        if (!plain && o + 2 < cap)
            o += (size_t)snprintf(buf + o, cap - o, "'");
    }
}

/* --scheduler slurm in a batch script: every node's plaunch through srun, with a fresh token when the options
 * name no credentials (srun hands the environment to every node). */
static int s_run_srun(const struct opts *o, int argc, char **argv)
{
    char hex[TLS_TOKEN_HEX_LEN + 1], err[1024];
    sigset_t sigs;
    const char *job = util_env_get(environ, "SLURM_JOB_ID");
    struct sched_srun_args a = { .job_id = job ? job : "", .nnodes = o->nnodes, .elastic = o->nnodes_min < o->nnodes, .grace = o->grace,
                                 .quiet = o->quiet };
    if (creds_check_given(o, err, sizeof err) < 0) {
        if (tls_token_generate(hex, err, sizeof err) < 0) {
            fprintf(stderr, "plaunch: error: %s\n", err);
            return 125;
        }
        a.token = hex;
    }
    if (supervise_block_signals(&sigs) < 0) {
        fprintf(stderr, "plaunch: error: cannot block signals: %s\n", strerror(errno));
        return 125;
    }
    int code = sched_srun_run(argc, argv, &a, environ, &sigs);
    OPENSSL_cleanse(hex, sizeof hex);
    return code;
}

/* The process's one loop, owned here: the supervisor, the child registry and the agent register their handlers
 * in it (in that order: a round takes stop signals before children's ends, as it always did). The launcher's
 * exit status. */
static int s_loop(struct job *job, agent_t *ac, const struct sup_ctl *ctl)
{
    char err[1024];
    loop_t *loop = loop_new();
    sup_t *sup = loop ? supervise_new(job, loop, ctl, err, sizeof err) : NULL;
    if (!sup) {
        log_error("%s", loop ? err : "cannot set up the event loop: out of memory");
        loop_destroy(&loop);
        return 125;
    }
    if (proc_attach(loop, err, sizeof err) < 0)
        log_error("%s", err);
    else if (agent_start(ac, sup, loop) == 0 && !supervise_over(sup) && loop_run(loop) < 0)
        log_error("event loop failed: %s", strerror(errno));
    int code = supervise_end(&sup);
    agent_stop(ac);
    proc_detach();
    loop_destroy(&loop);
    return code;
}

/* A job that could not be set up: what was made is undone; 2 says how to fix the input. */
static int s_setup_failed(struct job *job, int code, const char *err)
{
    wenv_fini(job);
    jobsetup_fini(job);
    if (code == 2)
        return s_usage_error(err);
    fprintf(stderr, "plaunch: error: %s\n", err);
    return code;
}

/* --print-binding: the node's workers and the plan, without the log directory or anything else of a run. */
static int s_print_binding(const struct opts *o)
{
    static struct job job;
    char err[2048], line[1024];
    memcpy((struct opts *)&job.opt, o, sizeof *o); /* as jobsetup_init: the one write of the options */
    if (gethostname(job.node.hostname, sizeof job.node.hostname - 1) < 0)
        snprintf(job.node.hostname, sizeof job.node.hostname, "localhost");
    if (jobworkers_setup(&job, o, environ, err, sizeof err) < 0 || jobsetup_binding(&job, err, sizeof err) < 0) {
        jobsetup_fini(&job);
        return s_usage_error(err);
    }
    int multi = o->nnodes > 1 || o->master[0];
    printf("binding of %d %s worker%s on %s: %s\n", job.node.nworkers, job.node.gpu_mode ? "GPU" : "CPU",
           job.node.nworkers == 1 ? "" : "s", job.node.hostname, job.node.bind.note);
    for (int i = 0; i < job.node.nworkers; i++) {
        topo_plan_line(&job.node.bind, i, multi ? -1 : i, line, sizeof line);
        printf("%s\n", line);
    }
    jobsetup_fini(&job);
    return 0;
}

static int s_run(int argc, char **argv)
{
    static struct opts o;
    static struct job job;
    char err[2048];
    int code;
    int rc = opts_load(&o, argc, argv, environ, err, sizeof err);
    if (rc != 0)
        return rc > 0 ? 0 : s_usage_error(err);
    if (o.print_config) {
        opts_print_config(&o, stdout);
        return 0;
    }
    if (o.print_binding)
        return s_print_binding(&o);
    if (o.sched_note[0] && !o.quiet)
        fprintf(stderr, "plaunch: note: %s\n", o.sched_note);
    if (o.paddle_note[0])
        fprintf(stderr, "plaunch: warning: %s\n", o.paddle_note);
    if (o.sched_srun)
        return s_run_srun(&o, argc, argv);
    /* A coordinator holds one connection per node: take every descriptor the hard limit allows. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        spawn_set_worker_nofile(&rl);
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* Orphaned grandchildren come to us, so they are reaped and killed with their generation. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (supervise_block_signals(NULL) < 0) {
        fprintf(stderr, "plaunch: error: cannot block signals: %s\n", strerror(errno));
        return 125;
    }
    /* The health thresholds are read first, so that a bad file is an error before anything starts. */
    static struct mon_thresh thresh;
    mon_thresh_default(&thresh);
    if (o.monitor_config[0] && mon_thresh_read(o.monitor_config, &thresh, err, sizeof err) < 0)
        return s_usage_error(err);
    /* The job, then what its parts own: on one node (where the ranks are known now) the supervisor's workerlogs,
     * a refused one leaving every workerlog as it was; the workers' base environment. */
    if (jobsetup_init(&job, &o, environ, err, sizeof err, &code) < 0)
        return s_setup_failed(&job, code, err);
    if (!job.node.multi && output_open_logs(&job, err, sizeof err) < 0)
        return s_setup_failed(&job, 2, err);
    if (wenv_init(&job, environ) < 0)
        return s_setup_failed(&job, 125, "out of memory");
    char marker[sizeof job.node.agent_endpoint + 16];
    snprintf(marker, sizeof marker, "PLAUNCH_AGENT=%s", job.node.agent_endpoint);
    if (sentinel_start(marker) < 0)
        fprintf(stderr, "plaunch: warning: no orphan sentinel (%s); workers still die with plaunch\n",
                strerror(errno));
    log_set_origin(job.node.hostname); /* plaunch.log was opened with the log directory, by jobsetup_init */
    log_info("plaunch %s: job %s, %d %s worker%s on %s, program '%s', logs in %s", PLAUNCH_VERSION, job.node.job_id,
             job.node.nworkers, job.node.gpu_mode ? "GPU" : "CPU", job.node.nworkers == 1 ? "" : "s", job.node.hostname,
             o.prog_argv[0], job.node.log_dir);
    log_info("binding: %s", job.node.bind.note);
    for (int i = 0; i < job.node.bind.n; i++) {
        char line[1024];
        topo_plan_line(&job.node.bind, i, job.node.multi ? -1 : job.workers[i].rank, line, sizeof line);
        log_info("binding: %s", line);
    }
    if (!o.quiet && job.node.multi && o.nnodes == 1)
        fprintf(stderr, "plaunch: %d %s worker%s in a one-node job (coordinator %s), logs in %s\n", job.node.nworkers,
                job.node.gpu_mode ? "GPU" : "CPU", job.node.nworkers == 1 ? "" : "s", o.master, job.node.log_dir);
    else if (!o.quiet && job.node.multi)
        fprintf(stderr, "plaunch: %d %s worker%s on this node of a %d-node job (coordinator %s), logs in %s\n",
                job.node.nworkers, job.node.gpu_mode ? "GPU" : "CPU", job.node.nworkers == 1 ? "" : "s", o.nnodes, o.master,
                job.node.log_dir);
    else if (!o.quiet)
        fprintf(stderr, "plaunch: job %s: %d %s worker%s%s%s, logs in %s\n", job.node.job_id, job.node.nworkers,
                job.node.gpu_mode ? "GPU" : "CPU", job.node.nworkers == 1 ? "" : "s", job.node.gpu_mode ? " on GPUs " : "",
                job.node.gpu_mode ? job.node.visible_devices : "", job.node.log_dir);
    /* One code path for one node or many: the agent always talks to a coordinator, in this process on a
     * one-node job (and on the node that owns --master), over TLS otherwise. */
    struct sup_ctl ctl;
    char hint[4096];
    s_command_line(argc, argv, hint, sizeof hint);
    agent_t *ac = agent_new(&job, &thresh, hint, err, sizeof err);
    if (!ac) {
        log_error("%s", err);
        code = 2;
        goto out;
    }
    agent_ctl(ac, &ctl);
    code = output_final_status(&job, s_loop(&job, ac, &ctl));
    agent_destroy(&ac);
    log_info("plaunch exits with %d", code);
out:
    sentinel_release();
    output_close_logs(&job);
    log_close();
    wenv_fini(&job);
    jobsetup_fini(&job);
    return code;
}

int main(int argc, char **argv)
{
    /* The monitor's sampler, exec'ed by the agent (launcher/monitor/sampling/mon_sampler.c); not for users. */
    if (argc > 1 && strcmp(argv[1], "__monitor") == 0)
        return mon_sampler_main(argc - 1, argv + 1);
    /* Stacks of hung workers, exec'ed by the agent (launcher/hang/hang_stacks.c); not for users. */
    if (argc > 1 && strcmp(argv[1], "__stacks") == 0)
        return hang_stacks_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "certs") == 0)
        return cmd_certs(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "token") == 0)
        return cmd_token(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "probe") == 0)
        return cmd_probe(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    if (argc > 1 && (strcmp(argv[1], "status") == 0 || strcmp(argv[1], "top") == 0))
        return cmd_status(argc - 1, argv + 1);
    return s_run(argc, argv);
}
