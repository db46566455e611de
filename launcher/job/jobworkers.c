/* jobworkers: how many workers this node runs and which GPU each gets, from the options and the inherited
 * CUDA_VISIBLE_DEVICES (GPU ids are labels of that list, as Paddle and torch read them). */
#include "launcher/job/jobworkers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gpus/gpus.h"
#include "common/idlist.h"
#include "common/log.h"
#include "common/util.h"

/* GPUs the NVIDIA driver exposes, counted without initialising CUDA; -1 when there is no driver. */
static int s_driver_gpu_count(void)
{
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The GPUs this node shows: the inherited CUDA_VISIBLE_DEVICES (or a scheduler's list standing in for it) into
 * parent[] with its count, or -1 without one (*scope names the list); -1 with err set when the list hides
 * every GPU or cannot be read (*bad = 1). */
static int s_visible_list(const struct opts *o, char **envp, char parent[][64], const char **scope, int *bad,
                          char *err, size_t errlen)
{
    const char *cvd = util_env_get(envp, "CUDA_VISIBLE_DEVICES");
    *scope = "CUDA_VISIBLE_DEVICES";
    *bad = 0;
    if (!cvd && o->gpu_scope[0]) { /* a scheduler's list of the step's GPUs stands in for CUDA_VISIBLE_DEVICES */
        cvd = o->gpu_scope;
        *scope = o->origin_gpu_scope;
    }
    if (!cvd)
        return -1;
    if (gpus_visible_none(cvd)) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES='%.200s' hides every GPU", cvd);
        *bad = 1;
        return -1;
    }
    int n = gpus_split_visible(cvd, parent, GPUS_MAX, err, errlen);
    *bad = n < 0;
    return n;
}

/* Resolves --gpus into the CUDA_VISIBLE_DEVICES entries of this node's workers; returns the count. With an
 * inherited list, ids are its labels (Paddle's reading of --devices/--gpus), never positions in it. */
static int s_resolve_gpus(struct job *job, const struct opts *o, char **envp, char entries[][64], char *err,
                          size_t errlen)
{
    static char parent[GPUS_MAX][64];
    int ids[GPUS_MAX], all = 0, bad = 0;
    const char *scope;
    char why[512];
    const char *spec = o->gpus[0] ? o->gpus : "all";
    const char *origin = o->gpus[0] ? o->origin_gpus : "the default (every GPU of this node)";
    int nparent = s_visible_list(o, envp, parent, &scope, &bad, why, sizeof why);

    if (bad && strstr(why, "hides every GPU")) {
        snprintf(err, errlen, "%s '%s': %s of %s (the scheduler gave this job none); ask it for GPUs, or run CPU "
                 "workers with --nproc-per-node N", origin, spec, why, job->node.hostname);
        return -1;
    }
    if (bad) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    int n = gpus_parse(spec, ids, GPUS_MAX, &all, why, sizeof why);
    if (n < 0) {
        snprintf(err, errlen, "%s '%s': %s", origin, spec, why);
        return -1;
    }
    if (all) {
        if (nparent > 0) {
            n = nparent;
        } else {
            n = gpus_count_cuda(30000, why, sizeof why);
            if (n <= 0) {
                snprintf(err, errlen, "%s: no GPU found on %s (%s); for CPU workers use --nproc-per-node N",
                         origin, job->node.hostname, n == 0 ? "the CUDA runtime reports 0 devices" : why);
                return -1;
            }
        }
        for (int i = 0; i < n; i++)
            snprintf(entries[i], 64, "%.63s", nparent > 0 ? parent[i] : "");
        for (int i = 0; nparent <= 0 && i < n; i++)
            snprintf(entries[i], 64, "%d", i);
        job->node.set_device_order = nparent < 0;
        return n;
    }
    int limit = nparent >= 0 ? -1 : s_driver_gpu_count();
    for (int i = 0; i < n; i++) {
        char label[16];
        snprintf(label, sizeof label, "%d", ids[i]);
        if (limit >= 0 && ids[i] >= limit) {
            snprintf(err, errlen, "%s '%s': GPU %d does not exist; %s has %d GPU%s (0..%d)", origin, spec, ids[i],
                     job->node.hostname, limit, limit == 1 ? "" : "s", limit - 1);
            return -1;
        }
        int k = 0;
        while (k < nparent && strcmp(parent[k], label) != 0)
            k++;
        if (nparent >= 0 && k == nparent) {
            char list[512];
            size_t used = 0;
            for (int j = 0; j < nparent && used + 70 < sizeof list; j++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", j ? "," : "", parent[j]);
            snprintf(err, errlen, "%s '%s': GPU %d does not exist on %s: it is not in %s=%s, whose labels --gpus "
                     "and --devices name (as Paddle reads them; not positions); name GPUs of that list, or use "
                     "--gpus all or --nproc-per-node N", origin, spec, ids[i], job->node.hostname, scope, list);
            return -1;
        }
        snprintf(entries[i], 64, "%s", label);
    }
    job->node.set_device_order = nparent < 0;
    return n;
}

/* torchrun's and Paddle's --nproc-per-node on a node with GPUs and no --gpus: worker i on the i-th visible GPU,
 * CUDA_VISIBLE_DEVICES left as inherited; 0 on a node without GPUs (CPU workers), the count, or -1. */
static int s_resolve_nproc_gpus(struct job *job, const struct opts *o, char **envp, char entries[][64], char *err,
                                size_t errlen)
{
    static char parent[GPUS_MAX][64];
    const char *scope;
    char why[512];
    int bad = 0, n = s_visible_list(o, envp, parent, &scope, &bad, why, sizeof why);
    if (n < 0 && !bad) { /* no list: the driver's GPUs, numbered as CUDA numbers them */
        scope = "the driver's list";
        n = s_driver_gpu_count();
        for (int i = 0; i < n; i++)
            snprintf(parent[i], 64, "%d", i);
    }
    if (n <= 0) {
        if (strcmp(o->nproc_kind, "gpu") == 0) {
            snprintf(err, errlen, "%s gpu: %s has no GPU%s%s; use --nproc-per-node cpu or N for CPU workers",
                     o->origin_nproc, job->node.hostname, bad ? " (" : "", bad ? why : "");
            if (bad)
                strncat(err, ")", errlen - strlen(err) - 1);
            return -1;
        }
        return 0;
    }
    int want = o->nproc_kind[0] ? n : o->nproc;
    if (want > n) {
        snprintf(err, errlen, "%s asks for %d workers, but %s has %d GPU%s (%s): one GPU per worker, as Paddle's "
                 "FLAGS_selected_gpus needs; ask for at most %d, or run CPU workers with CUDA_VISIBLE_DEVICES= "
                 "(empty)", o->origin_nproc, want, job->node.hostname, n, n == 1 ? "" : "s", scope, n);
        return -1;
    }
    for (int i = 0; i < want; i++)
        snprintf(entries[i], 64, "%.63s", parent[i]);
    job->node.gpu_inherit = 1;
    job->node.gpus_visible = n;
    return want;
}

int jobworkers_setup(struct job *job, const struct opts *o, char **envp, char *err, size_t errlen)
{
    static char entries[GPUS_MAX][64];
    int n = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    ncpu = ncpu < 1 ? 1 : ncpu > OPTS_MAX_WORKERS ? OPTS_MAX_WORKERS : ncpu;
    /* Without --gpus and --nproc-per-node, a node with an NVIDIA driver runs one worker per GPU. */
    job->node.gpu_mode = o->gpus[0] != '\0' || (o->nproc == 0 && !o->nproc_kind[0] && (s_driver_gpu_count() > 0));
    if (job->node.gpu_mode) {
        n = s_resolve_gpus(job, o, envp, entries, err, errlen);
        if (n < 0)
            return -1;
        if ((o->nproc && o->nproc != n) || o->nproc_kind[0]) {
            snprintf(err, errlen, "%s asks for %s%.0d workers but %s '%s' names %d GPU%s: one worker per GPU; "
                     "drop one of them", o->origin_nproc, o->nproc_kind, o->nproc, o->origin_gpus, o->gpus, n,
                     n == 1 ? "" : "s");
            return -1;
        }
    } else if (strcmp(o->nproc_kind, "cpu") == 0) {
        n = (int)ncpu;
    } else {
        n = s_resolve_nproc_gpus(job, o, envp, entries, err, errlen);
        if (n < 0)
            return -1;
        job->node.gpu_mode = n > 0;
        if (n == 0)
            n = o->nproc ? o->nproc : o->nproc_kind[0] ? (int)ncpu : 1;
    }
    job->node.nworkers = n;
    job->workers = calloc((size_t)n, sizeof *job->workers);
    if (!job->workers) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t vlen = 0;
    for (int i = 0; job->node.gpu_mode && i < n; i++)
        vlen += strlen(entries[i]) + 1;
    if (job->node.gpu_mode) {
        job->node.visible_devices = calloc(vlen + 1, 1);
        if (!job->node.visible_devices) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        struct worker *w = &job->workers[i];
        w->local_rank = i;
        w->rank = job->gen.rank_base + i;
        w->out_fd = w->err_fd = w->exec_fd = w->log_fd = -1;
        if (job->node.gpu_mode) {
            snprintf(w->gpu, sizeof w->gpu, "%s", entries[i]);
            if (i)
                strcat(job->node.visible_devices, ",");
            strcat(job->node.visible_devices, entries[i]);
        }
    }
    return 0;
}
