/* jobsetup: turns options into a job: workers (jobworkers.c), log and run directories, tee ranks. */
#include "launcher/job/jobsetup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/gpus/gpus.h"
#include "common/idlist.h"
#include "launcher/job/jobworkers.h"
#include "common/log.h"
#include "common/net.h"
#include "common/ownfile.h"
#include "common/util.h"

/* mkdir -p */
static int s_mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* torchrun's console: what a local rank shows is what it neither redirects nor misses from --tee (torchrun's
 * (3 & ~redirects) | tee: 1 its stdout, 2 its stderr, each to plaunch's stream of the same name), for the ranks
 * --local-ranks-filter names (all without it). Every stream is in workerlog.RANK either way. */
static int s_torch_console(struct job *job, const struct opts *o, char *err, size_t errlen)
{
    static int ids[OPTS_MAX_WORKERS];
    char why[256];
    int nf = o->ranks_filter[0] ? idlist_parse(o->ranks_filter, "local rank", OPTS_MAX_WORKERS, ids,
                                               OPTS_MAX_WORKERS, why, sizeof why) : -1;
    if (o->ranks_filter[0] && nf < 0) {
        snprintf(err, errlen, "--local-ranks-filter '%s': %s", o->ranks_filter, why);
        return -1;
    }
    for (int i = 0; i < job->node.nworkers; i++) {
        int shown = nf < 0;
        for (int k = 0; k < nf && !shown; k++)
            shown = ids[k] == i;
        int streams = (3 & ~opts_torch_streams(o->redirects, i)) | opts_torch_streams(o->torch_tee, i);
        job->workers[i].tee = shown ? streams : 0;
    }
    return 0;
}

int jobsetup_tee(struct job *job, const struct opts *o, char *err, size_t errlen)
{
    for (int i = 0; i < job->node.nworkers; i++)
        job->workers[i].tee = 0;
    static int ids[OPTS_MAX_WORKERS];
    int n = 0;
    if (o->torch_tee[0] || o->redirects[0] || o->ranks_filter[0])
        return s_torch_console(job, o, err, errlen);
    if (strcmp(o->tee, "all") == 0 || (strcmp(o->tee, "first") == 0 && job->node.nworkers > 0)) {
        for (int i = 0; i < job->node.nworkers; i++)
            job->workers[i].tee = o->tee[0] == 'a' || i == 0 ? JOB_TEE_OUT | JOB_TEE_ERR : 0;
        return 0;
    }
    if (strcmp(o->tee, "none") == 0)
        return 0;
    char why[256];
    n = idlist_parse(o->tee, "rank", 1 << 24, ids, OPTS_MAX_WORKERS, why, sizeof why);
    for (int k = 0; k < n; k++) {
        if (ids[k] >= job->gen.world_size && !job->node.multi) {
            snprintf(err, errlen, "%s '%s': rank %d does not exist; the job has ranks 0..%d", o->origin_tee,
                     o->tee, ids[k], job->gen.world_size - 1);
            return -1;
        }
        int local = ids[k] - job->gen.rank_base;
        if (local >= 0 && local < job->node.nworkers)
            job->workers[local].tee = JOB_TEE_OUT | JOB_TEE_ERR;
    }
    return n < 0 ? -1 : 0;
}

/* The name of this node's launcher log: plaunch.log on one node; plaunch.NODE.log on a multi-node job, whose nodes
 * often share one file system and --log-dir (NODE: the scheduler's node name, else the host name, in characters
 * safe for a file name; also the name of monitor.NODE.csv). */
static void s_log_name(struct job *job, const struct opts *o)
{
    char *node = job->node.node_label;
    snprintf(job->node.node_label, sizeof job->node.node_label, "%s", o->node_name[0] ? o->node_name : job->node.hostname);
    for (char *c = node; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("._-", *c)))
            *c = '_';
    if (job->node.multi)
        snprintf(job->node.log_name, sizeof job->node.log_name, "plaunch.%s.log", node);
    else
        snprintf(job->node.log_name, sizeof job->node.log_name, "plaunch.log");
}

/* name, a regular file of ours in dfd, becomes name.prev (an older .prev goes): what an earlier run left is kept
 * while this run writes its own (a link or another user's file is left for the open to refuse). */
static void s_set_aside(int dfd, const char *log_dir, const char *name)
{
    struct stat st;
    char prev[300];
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        snprintf(prev, sizeof prev, "%s.prev", name) >= (int)sizeof prev)
        return;
    if (renameat(dfd, name, dfd, prev) < 0)
        log_warn("cannot keep %s/%s of an earlier run as %s: %s; this run writes over it", log_dir, name, prev,
                 strerror(errno));
}

/* The files that describe one run, left by an earlier run in the log directory: this node's monitor files and,
 * on one node, the hang reports, set aside as NAME.prev so that plaunch report and the root cause read this
 * run's (workerlogs and plaunch.log are appended to instead, each run after its marker line). */
static void s_keep_earlier_run(struct job *job, int dfd)
{
    char name[300];
    if (job->opt.log_overwrite)
        return;
    snprintf(name, sizeof name, "monitor.%s.csv", job->node.node_label);
    s_set_aside(dfd, job->node.log_dir, name);
    snprintf(name, sizeof name, "monitor.%s.csv.1", job->node.node_label);
    s_set_aside(dfd, job->node.log_dir, name);
    int d2 = job->node.multi ? -1 : dup(dfd); /* on many nodes the coordinator's node alone would know its reports */
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d && d2 >= 0)
        close(d2);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "hang.", 5) == 0 && n > 9 && strcmp(e->d_name + n - 4, ".txt") == 0)
            s_set_aside(dfd, job->node.log_dir, e->d_name);
    }
    if (d)
        closedir(d);
}

/* plaunch.log, in a directory proved ours (the workerlogs are the supervisor's: output_open_logs). */
static int s_open_logs(struct job *job, char *err, size_t errlen)
{
    int dfd = ownfile_open_dir(job->node.log_dir, "log directory", "choose another --log-dir", err, errlen);
    if (dfd < 0)
        return -1;
    s_keep_earlier_run(job, dfd);
    close(dfd);
    if (log_open(job->node.log_dir, job->node.log_name, job->opt.log_overwrite, err, errlen) < 0)
        return -1;
    return 0;
}

/* The run directory (the agent's socket): a fresh 0700 directory, made only in a parent no one else controls. */
static int s_make_run_dir(struct job *job, char **envp, char *err, size_t errlen)
{
    const char *tmp = util_env_get(envp, "TMPDIR");
    char base[PATH_MAX];
    struct stat st;
    tmp = tmp && *tmp ? tmp : "/tmp";
    if (!realpath(tmp, base)) {
        snprintf(err, errlen, "cannot use TMPDIR %s for the run directory: %s; set TMPDIR to a directory of your own",
                 tmp, strerror(errno));
        return -1;
    }
    int dfd = ownfile_open_dir(base, "run directory parent (TMPDIR)", "set TMPDIR to a directory of your own", err,
                               errlen);
    if (dfd < 0)
        return -1;
    close(dfd);
    if (strlen(base) + 16 > sizeof job->node.run_dir) {
        snprintf(err, errlen, "TMPDIR %s is too long for a run directory; set TMPDIR to a shorter path", base);
        return -1;
    }
    snprintf(job->node.run_dir, sizeof job->node.run_dir, "%.*s/plaunch-XXXXXX", (int)sizeof job->node.run_dir - 16, base);
    if (!mkdtemp(job->node.run_dir)) {
        snprintf(err, errlen, "cannot create a run directory in %s: %s (set TMPDIR to a writable directory)", base,
                 strerror(errno));
        job->node.run_dir[0] = '\0';
        return -1;
    }
    /* mkdtemp made it (never an existing one); check that what is at the path now is still that directory. */
    if (lstat(job->node.run_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        snprintf(err, errlen, "the run directory %s was replaced right after it was made; set TMPDIR to a directory "
                 "of your own", job->node.run_dir);
        job->node.run_dir[0] = '\0';
        return -1;
    }
    return 0;
}

static void s_random_job_id(char *out, size_t cap)
{
    unsigned char r[6] = { 0 };
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        unsigned long t = (unsigned long)time(NULL) ^ (unsigned long)getpid();
        memcpy(r, &t, sizeof r < sizeof t ? sizeof r : sizeof t);
    }
    snprintf(out, cap, "job-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5]);
}

int jobsetup_init(struct job *job, const struct opts *o, char **envp, char *err, size_t errlen, int *exit_code)
{
    memset(job, 0, sizeof *job);
    memcpy((struct opts *)&job->opt, o, sizeof *o); /* the one write of the options: read-only from here on */
    *exit_code = 2;
    if (gethostname(job->node.hostname, sizeof job->node.hostname - 1) < 0)
        snprintf(job->node.hostname, sizeof job->node.hostname, "localhost");
    snprintf(job->node.host_addr, sizeof job->node.host_addr, "%s", o->host[0] ? o->host : "127.0.0.1");
    job->node.multi = o->nnodes > 1 || o->master[0];
    snprintf(job->gen.master_addr, sizeof job->gen.master_addr, "%s",
             o->worker_master_addr[0] && !job->node.multi ? o->worker_master_addr : job->node.host_addr);
    s_log_name(job, o);
    if (o->job_id[0])
        snprintf(job->node.job_id, sizeof job->node.job_id, "%s", o->job_id);
    else
        s_random_job_id(job->node.job_id, sizeof job->node.job_id);
    job->gen.nnodes = 1;
    job->gen.node_rank = 0;
    job->gen.rank_base = 0;
    if (jobworkers_setup(job, o, envp, err, errlen) < 0)
        return -1;
    job->gen.world_size = job->node.nworkers;
    if (jobsetup_tee(job, o, err, errlen) < 0 || jobsetup_binding(job, err, errlen) < 0)
        return -1;

    struct stat st;
    if (stat(o->log_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "log directory '%s' exists but is not a directory; choose another with --log-dir",
                 o->log_dir);
        return -1;
    }
    *exit_code = 125;
    if (s_mkdirs(o->log_dir) < 0 || !realpath(o->log_dir, job->node.log_dir)) {
        snprintf(err, errlen, "cannot create log directory '%s': %s; choose another with --log-dir", o->log_dir,
                 strerror(errno));
        *exit_code = 2;
        return -1;
    }
    /* Planted links, other users' files and unsafe directories are refused here, before anything starts. */
    *exit_code = 2;
    if (s_make_run_dir(job, envp, err, errlen) < 0 || s_open_logs(job, err, errlen) < 0)
        return -1;
    *exit_code = 125;
    snprintf(job->node.agent_endpoint, sizeof job->node.agent_endpoint, "ipc://%s/agent", job->node.run_dir);
    job->gen.endpoint_ports = calloc((size_t)job->node.nworkers, sizeof *job->gen.endpoint_ports);
    if (!job->gen.endpoint_ports) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *exit_code = 0;
    return 0;
}

int jobsetup_binding(struct job *job, char *err, size_t errlen)
{
    char (*gpus)[64] = NULL;
    if (job->node.gpu_mode) {
        gpus = calloc((size_t)job->node.nworkers, sizeof *gpus);
        if (!gpus) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (int i = 0; i < job->node.nworkers; i++)
            memcpy(gpus[i], job->workers[i].gpu, sizeof gpus[i]);
    }
    /* numactl --membind/--preferred (or a scheduler) gave plaunch a memory policy: the user placed it */
    int policy = 0;
    if (syscall(SYS_get_mempolicy, &policy, NULL, 0UL, NULL, 0UL) < 0)
        policy = 0;
    struct topo_input in = { .mode = job->opt.cpu_bind, .list = job->opt.cpu_bind_list, .n = job->node.nworkers,
                             .gpus = (const char (*)[64])gpus, .mem_bound = policy != 0 };
    int rc = topo_plan_build(&in, &job->node.bind, err, errlen);
    free(gpus);
    return rc;
}

void jobsetup_fini(struct job *job)
{
    topo_plan_free(&job->node.bind);
    if (job->node.run_dir[0]) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/agent", job->node.run_dir);
        unlink(path);
        for (int i = 0; i < job->node.nworkers; i++) { /* the workers' PLAUNCH_PROGRESS_FILE */
            snprintf(path, sizeof path, "%s/progress.%d", job->node.run_dir, i);
            unlink(path);
        }
        rmdir(job->node.run_dir);
        job->node.run_dir[0] = '\0';
    }
    free(job->workers);
    free(job->node.visible_devices);
    free(job->gen.endpoint_ports);
    free(job->gen.endpoints);
    job->workers = NULL;
    job->node.visible_devices = NULL;
    job->gen.endpoint_ports = NULL;
    job->gen.endpoints = NULL;
}

int jobsetup_pick_ports(struct job *job, char *err, size_t errlen)
{
    int *ports = calloc((size_t)job->node.nworkers + 1, sizeof *ports);
    if (!ports || net_free_ports(job->node.host_addr, ports, job->node.nworkers + 1) < 0) {
        snprintf(err, errlen, "cannot find free TCP ports on %s: %s; set --host to an address of this node",
                 job->node.host_addr, strerror(errno));
        free(ports);
        return -1;
    }
    job->gen.master_port = job->opt.worker_master_port ? job->opt.worker_master_port : ports[0]; /* torchrun's */
    if (job->opt.worker_master_addr[0])
        snprintf(job->gen.master_addr, sizeof job->gen.master_addr, "%s", job->opt.worker_master_addr);
    memcpy(job->gen.endpoint_ports, ports + 1, (size_t)job->node.nworkers * sizeof *ports);
    free(ports);
    size_t cap = (size_t)job->node.nworkers * (strlen(job->node.host_addr) + 8) + 1, o = 0;
    char *eps = malloc(cap);
    if (!eps) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < job->node.nworkers; i++)
        o += (size_t)snprintf(eps + o, cap - o, "%s%s:%d", i ? "," : "", job->node.host_addr,
                              job->gen.endpoint_ports[i]);
    free(job->gen.endpoints);
    job->gen.endpoints = eps;
    return 0;
}
