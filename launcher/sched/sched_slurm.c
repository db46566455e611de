/* sched_slurm: what a Slurm job step's environment says: node count, this node's rank, the coordinator on the
 * first host of the step's node list at a port derived from the job and step ids, the step's GPUs; a step that
 * runs more than one task on a node is refused, and a batch script without a step asks for srun mode. */
#include "launcher/sched/sched_priv.h"

#include <stdlib.h>
#include <string.h>

#include "launcher/sched/sched_hostlist.h"

/* The coordinator's port: 10000 + (job id mod 2000) x 10 + (step id mod 10), so steps 0..9 of one job and
 * 2000 consecutive jobs differ, below Linux's ephemeral range (32768-60999) where workers' ports are picked. */
#define SLURM_PORT_BASE 10000

/* The largest task count of a tasks-per-node list such as "2(x3),1": -1 when it does not parse. */
static long s_max_tasks(const char *tpn)
{
    long most = 0;
    for (const char *p = tpn; *p;) {
        char *end = NULL;
        long n = strtol(p, &end, 10);
        if (end == p || n < 0)
            return -1;
        most = n > most ? n : most;
        p = end;
        if (*p == '(') { /* "(xK)" repeats the count */
            p = strchr(p, ')');
            if (!p)
                return -1;
            p++;
        }
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return most;
}

/* More than one task on a node would start more than one agent there: refused with the srun line that works. */
static int s_check_tasks(char **envp, long nnodes, char *err, size_t errlen)
{
    static const char *const lists[] = { "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", NULL };
    const char *which = NULL, *tpn = sched_first_of(envp, lists, &which);
    long per_node = tpn ? s_max_tasks(tpn) : -1, ntpn = sched_num(sched_env(envp, "SLURM_NTASKS_PER_NODE"));
    long localid = sched_num(sched_env(envp, "SLURM_LOCALID"));
    /* The step's own list decides; the job's --ntasks-per-node (inherited by every step) only without it. */
    if (!sched_env(envp, "SLURM_STEP_TASKS_PER_NODE") && ntpn > per_node) {
        per_node = ntpn;
        which = "SLURM_NTASKS_PER_NODE";
        tpn = sched_env(envp, "SLURM_NTASKS_PER_NODE");
    }
    if (per_node <= 1 && localid <= 0)
        return 0;
    if (per_node <= 1) { /* a list we could not read, but a second task on this node */
        per_node = localid + 1;
        which = "SLURM_LOCALID";
        tpn = sched_env(envp, "SLURM_LOCALID");
    }
    snprintf(err, errlen, "this Slurm step runs %ld tasks on a node (%s=%s), but plaunch is one agent per node that "
             "starts the workers itself; start it once per node: srun --nodes=%ld --ntasks-per-node=1 plaunch "
             "--nproc-per-node %ld PROGRAM (or --gpus-per-node=N and plaunch --gpus all)", per_node, which, tpn,
             nnodes > 0 ? nnodes : 1, per_node);
    return -1;
}

/* The step's GPUs: CUDA_VISIBLE_DEVICES as Slurm set it, else the physical ids Slurm lists. */
static void s_gpus(char **envp, struct sched *s)
{
    static const char *const ids[] = { "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", NULL };
    const char *cvd = util_env_get(envp, "CUDA_VISIBLE_DEVICES"), *which = NULL, *v;
    if (cvd && *cvd && strcmp(cvd, "NoDevFiles") != 0) {
        s->has_gpus = 1;
        sched_put(s, "gpus", "all", "Slurm: the step's GPUs (CUDA_VISIBLE_DEVICES=%.100s)", cvd);
    } else if (!cvd && (v = sched_first_of(envp, ids, &which)) != NULL) {
        s->has_gpus = 1;
        snprintf(s->gpu_scope, sizeof s->gpu_scope, "%s", v);
        snprintf(s->gpu_scope_origin, sizeof s->gpu_scope_origin, "Slurm: %s", which);
        sched_put(s, "gpus", "all", "Slurm: the step's GPUs (%s=%.100s)", which, v);
    }
}

int sched_slurm_read(char **envp, int forced, struct sched *s, char *err, size_t errlen)
{
    const char *job = sched_env(envp, "SLURM_JOB_ID"), *step = sched_env(envp, "SLURM_STEP_ID");
    const char *which = NULL;
    static const char *const counts[] = { "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", NULL };
    static const char *const lists[] = { "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", NULL };
    if (!job) {
        if (forced)
            snprintf(err, errlen, "--scheduler slurm: this is not a Slurm job (no SLURM_JOB_ID): run plaunch in an "
                     "sbatch script or under salloc, or inside a step with srun --ntasks-per-node=1");
        return forced ? -1 : 0;
    }
    const char *nn = sched_first_of(envp, counts, &which);
    long nnodes = sched_num(nn);
    if (!step) { /* a batch script or an salloc shell: no step yet */
        if (!forced) {
            if (nnodes > 1)
                snprintf(s->note, sizeof s->note, "this runs on one node of the %ld of Slurm job %s; for all of them "
                         "use plaunch --scheduler slurm ... (or srun --ntasks-per-node=1 plaunch ...)", nnodes, job);
            return 0;
        }
        s->kind = SCHED_SLURM;
        s->srun = 1;
        if (nnodes > 0)
            sched_put(s, "nnodes", nn, "Slurm: %s=%s (the allocation)", which, nn);
        snprintf(s->what, sizeof s->what, "Slurm job %s, batch script (SLURM_JOB_ID, no SLURM_STEP_ID): one plaunch "
                 "per node through srun", job);
        return 1;
    }
    s->kind = SCHED_SLURM;
    snprintf(s->what, sizeof s->what, "Slurm job %s, step %s (SLURM_JOB_ID, SLURM_STEP_ID)", job, step);
    if (nnodes < 1) {
        snprintf(err, errlen, "Slurm step %s.%s: no node count (%s='%s'); run plaunch through srun inside an "
                 "allocation, or give --scheduler none and the options yourself", job, step,
                 which ? which : "SLURM_STEP_NUM_NODES", nn ? nn : "");
        return -1;
    }
    if (s_check_tasks(envp, nnodes, err, errlen) < 0)
        return -1;
    long nodeid = sched_num(sched_env(envp, "SLURM_NODEID"));
    if (nodeid < 0 || nodeid >= nnodes) {
        snprintf(err, errlen, "Slurm step %s.%s: SLURM_NODEID='%s' is not a node of the step's %ld", job, step,
                 sched_env(envp, "SLURM_NODEID") ? sched_env(envp, "SLURM_NODEID") : "", nnodes);
        return -1;
    }
    s->node_index = (int)nodeid;
    snprintf(s->node_name, sizeof s->node_name, "%s",
             sched_env(envp, "SLURMD_NODENAME") ? sched_env(envp, "SLURMD_NODENAME") : "");
    char num[32], id[80], first[SCHED_HOSTLIST_NAME_MAX + 1];
    snprintf(num, sizeof num, "%ld", nnodes);
    sched_put(s, "nnodes", num, "Slurm: %s=%s", which, nn);
    snprintf(num, sizeof num, "%ld", nodeid);
    sched_put(s, "node-rank", num, "Slurm: SLURM_NODEID=%ld", nodeid);
    snprintf(id, sizeof id, "slurm-%.30s.%.30s", job, step);
    sched_put(s, "job-id", id, "Slurm: SLURM_JOB_ID=%s, SLURM_STEP_ID=%s", job, step);
    if (nnodes > 1) {
        const char *list = sched_first_of(envp, lists, &which);
        char why[512];
        int count = list ? sched_hostlist_each(list, (int)nnodes + 1, NULL, NULL, why, sizeof why) : -1;
        if (!list || count < 0 || sched_hostlist_nth(list, 0, first, sizeof first, why, sizeof why) < 0) {
            snprintf(err, errlen, "Slurm step %s.%s: %s%.400s; give the coordinator with --master HOST:PORT", job,
                     step, list ? which : "no SLURM_STEP_NODELIST", list ? why : "");
            return -1;
        }
        if (count != nnodes) {
            snprintf(err, errlen, "Slurm step %s.%s: %s='%.200s' names %d hosts, %s says %ld; give --nnodes and "
                     "--master yourself", job, step, which, list, count, "the node count", nnodes);
            return -1;
        }
        long jobnum = sched_num(job) < 0 ? 0 : sched_num(job), stepnum = sched_num(step) < 0 ? 0 : sched_num(step);
        long port = SLURM_PORT_BASE + (jobnum % 2000) * 10 + stepnum % 10;
        snprintf(num, sizeof num, "%ld", port);
        sched_put(s, "master-addr", first, "Slurm: the first host of %s=%.120s", which, list);
        if (strlen(list) < SCHED_VALUE_MAX) /* every node's host by rank (SLURM_NODEID): ranked nodes find relays */
            sched_put(s, "node-hosts", list, "Slurm: %s", which);
        sched_put(s, "master-port", num, "Slurm: 10000 + (job %% 2000) x 10 + step %% 10, job %s step %s", job,
                  step);
    }
    s_gpus(envp, s);
    return 1;
}
