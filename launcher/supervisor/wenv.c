/* wenv: the environment of each worker: the inherited one plus the torch/Paddle/CUDA/PLAUNCH contract. */
#include "launcher/supervisor/wenv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/supervisor/errfile.h"
#include "common/gpus/gpus.h"
#include "common/log.h"

#define GPUS_LIST_MAX (GPUS_MAX * 5) /* "0,1,...,1023" */

/* Every variable plaunch owns: an inherited value is dropped so a nested launch cannot leak stale ranks (and the
 * token, so that a worker never holds the job's credential). */
static const char *const s_owned[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_NAME",
    "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE",
    "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT",
    "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_GLOBAL_SIZE", "PADDLE_LOCAL_SIZE", "PADDLE_GLOBAL_RANK",
    "PADDLE_LOCAL_RANK", "PADDLE_RANK_IN_NODE", "PADDLE_LOG_DIR", "FLAGS_selected_gpus",
    "PLAUNCH_AGENT", "PLAUNCH_JOB_ID", "PLAUNCH_GENERATION", "PLAUNCH_NODE_RANK", "PLAUNCH_NNODES",
    "PLAUNCH_GPU", "PLAUNCH_PROGRESS_FILE",
    "PLAUNCH_TOKEN", /* the control plane's secret: not for the program, its children or its logs */
};
#define NOWNED (sizeof s_owned / sizeof *s_owned)
/* Dropped only when plaunch sets its own value: the GPU list and its numbering (GPU mode, unless the inherited
 * list is kept), Paddle's backend (CPU mode). */
static const char *const s_gpu_owned[] = { "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER" };

static int s_is(const char *entry, const char *name)
{
    size_t len = strlen(name);
    return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

int wenv_init(struct job *job, char **environ_in)
{
    size_t n = 0, k = 0;
    while (environ_in && environ_in[n])
        n++;
    job->node.base_env = calloc(n + 1, sizeof *job->node.base_env);
    if (!job->node.base_env)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ_in[i];
        int drop = 0;
        for (size_t j = 0; j < NOWNED && !drop; j++)
            drop = s_is(e, s_owned[j]);
        drop = drop || (job->node.gpu_mode && !job->node.gpu_inherit && s_is(e, s_gpu_owned[0]));
        drop = drop || (job->node.set_device_order && s_is(e, s_gpu_owned[1]));
        drop = drop || (!job->node.gpu_mode && s_is(e, "PADDLE_DISTRI_BACKEND"));
        if (s_is(e, "OMP_NUM_THREADS"))
            job->node.base_has_omp = 1;
        if (!drop)
            job->node.base_env[k++] = (char *)e;
    }
    job->node.base_env[k] = NULL;
    return 0;
}

void wenv_fini(struct job *job)
{
    free(job->node.base_env);
    job->node.base_env = NULL;
}

struct envbuf {
    char **vec;
    size_t nvec;
    char *text;
    size_t used, cap;
    int overflow;
};

static void s_put(struct envbuf *b, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Appends NAME=value into the text area; the vector stores offsets until s_finish turns them into pointers. */
static void s_put(struct envbuf *b, const char *name, const char *fmt, ...)
{
    va_list ap;
    size_t room = b->cap - b->used;
    int n = snprintf(b->text + b->used, room, "%s=", name);
    if (n < 0 || (size_t)n >= room) {
        b->overflow = 1;
        return;
    }
    va_start(ap, fmt);
    int m = vsnprintf(b->text + b->used + n, room - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(n + m) >= room) {
        b->overflow = 1;
        return;
    }
    b->vec[b->nvec++] = (char *)(uintptr_t)b->used;
    b->used += (size_t)(n + m) + 1;
}

char **wenv_build(const struct job *job, const struct worker *w)
{
    size_t nbase = 0;
    while (job->node.base_env[nbase])
        nbase++;
    const size_t nours = 48;
    size_t text_cap = 8192 + strlen(job->gen.endpoints ? job->gen.endpoints : "") * 2 + strlen(job->node.log_dir) * 2 +
                      strlen(job->node.visible_devices ? job->node.visible_devices : "") + sizeof job->node.agent_endpoint +
                      (size_t)job->node.gpus_visible * 5;
    size_t vec_bytes = (nbase + nours + 1) * sizeof(char *);
    char *mem = malloc(vec_bytes + text_cap);
    if (!mem)
        return NULL;
    struct envbuf b = { .vec = (char **)mem, .text = mem + vec_bytes, .cap = text_cap };
    char master[300];
    snprintf(master, sizeof master, "%s:%d", job->gen.master_addr, job->gen.master_port);
    int world = job->gen.world_size, local_world = job->node.nworkers;

    s_put(&b, "RANK", "%d", w->rank);
    s_put(&b, "LOCAL_RANK", "%d", w->local_rank);
    s_put(&b, "WORLD_SIZE", "%d", world);
    s_put(&b, "LOCAL_WORLD_SIZE", "%d", local_world);
    s_put(&b, "GROUP_RANK", "%d", job->gen.node_rank);
    s_put(&b, "GROUP_WORLD_SIZE", "%d", job->gen.nnodes);
    s_put(&b, "ROLE_NAME", "%s", job->opt.role[0] ? job->opt.role : "default");
    s_put(&b, "ROLE_RANK", "%d", w->rank);
    s_put(&b, "ROLE_WORLD_SIZE", "%d", world);
    s_put(&b, "MASTER_ADDR", "%s", job->gen.master_addr);
    s_put(&b, "MASTER_PORT", "%d", job->gen.master_port);
    s_put(&b, "TORCHELASTIC_RESTART_COUNT", "%d", job->gen.generation);
    s_put(&b, "TORCHELASTIC_MAX_RESTARTS", "%d", job->opt.max_restarts);
    s_put(&b, "TORCHELASTIC_RUN_ID", "%s", job->node.job_id);
    s_put(&b, "TORCHELASTIC_USE_AGENT_STORE", "False");
    char errpath[PATH_MAX + 32];
    errfile_path(job->node.log_dir, w->rank, errpath, sizeof errpath);
    s_put(&b, "TORCHELASTIC_ERROR_FILE", "%s", errpath);
    /* Variables plaunch sets only where the user did not. */
    int user_aeh = 0, user_gloo = 0, user_nccl = 0, user_fh = 0, user_fr = 0, user_frdump = 0, user_frfile = 0;
    int user_unbuf = 0;
    for (size_t i = 0; i < nbase; i++) {
        user_unbuf |= s_is(job->node.base_env[i], "PYTHONUNBUFFERED");
        user_fh |= s_is(job->node.base_env[i], "PYTHONFAULTHANDLER");
        user_fr |= s_is(job->node.base_env[i], "TORCH_NCCL_TRACE_BUFFER_SIZE");
        user_frdump |= s_is(job->node.base_env[i], "TORCH_NCCL_DUMP_ON_TIMEOUT");
        user_frfile |= s_is(job->node.base_env[i], "TORCH_FR_DUMP_TEMP_FILE");
        user_aeh |= s_is(job->node.base_env[i], "TORCH_NCCL_ASYNC_ERROR_HANDLING") ||
                    s_is(job->node.base_env[i], "NCCL_ASYNC_ERROR_HANDLING");
        user_gloo |= s_is(job->node.base_env[i], "GLOO_SOCKET_IFNAME");
        user_nccl |= s_is(job->node.base_env[i], "NCCL_SOCKET_IFNAME");
    }
    /* As torchrun: 1 only when unset; a value under torch's older name is the user's choice too. */
    if (!user_aeh)
        s_put(&b, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
    /* Across hosts, the interface that routes to MASTER_ADDR, unless the user chose one ("=" makes NCCL match the
     * name exactly, not as a prefix). */
    if (job->gen.socket_ifname[0] && !user_gloo)
        s_put(&b, "GLOO_SOCKET_IFNAME", "%s", job->gen.socket_ifname);
    if (job->gen.socket_ifname[0] && !user_nccl)
        s_put(&b, "NCCL_SOCKET_IFNAME", "=%s", job->gen.socket_ifname);
    /* Hang localisation: CPython prints every thread's traceback on SIGABRT (a hung rank's stack lands in its
     * workerlog); torch's NCCL flight recorder keeps the last collectives and dumps them into the log directory
     * (as nccl_trace.RANK) when its watchdog times out. */
    if (!user_fh)
        s_put(&b, "PYTHONFAULTHANDLER", "1");
    /* A worker's stdout is a pipe, so CPython would hold its prints in a block buffer: the hang watch would see
     * no output from a healthy job, and a rank plaunch stops would lose what it printed last. torchrun leaves
     * buffering alone; plaunch does not, unless the user chose. */
    if (!user_unbuf)
        s_put(&b, "PYTHONUNBUFFERED", "1");
    if (!user_fr)
        s_put(&b, "TORCH_NCCL_TRACE_BUFFER_SIZE", "2000");
    if (!user_frdump)
        s_put(&b, "TORCH_NCCL_DUMP_ON_TIMEOUT", "1");
    if (!user_frfile)
        s_put(&b, "TORCH_FR_DUMP_TEMP_FILE", "%s/nccl_trace.", job->node.log_dir);
    s_put(&b, "PLAUNCH_PROGRESS_FILE", "%s/progress.%d", job->node.run_dir, w->local_rank);
    /* A bound worker's OpenMP threads: one per core of its share (torchrun's 1 where plaunch binds nothing). */
    if (!job->node.base_has_omp && w->local_rank < job->node.bind.n && job->node.bind.w[w->local_rank].apply)
        s_put(&b, "OMP_NUM_THREADS", "%d", job->node.bind.w[w->local_rank].ncores);
    else if (!job->node.base_has_omp && local_world > 1)
        s_put(&b, "OMP_NUM_THREADS", "1");

    s_put(&b, "PADDLE_TRAINER_ID", "%d", w->rank);
    s_put(&b, "PADDLE_TRAINERS_NUM", "%d", world);
    s_put(&b, "PADDLE_TRAINER_ENDPOINTS", "%s", job->gen.endpoints ? job->gen.endpoints : "");
    s_put(&b, "PADDLE_CURRENT_ENDPOINT", "%s:%d", job->node.host_addr, job->gen.endpoint_ports[w->local_rank]);
    s_put(&b, "PADDLE_MASTER", "%s", master);
    s_put(&b, "PADDLE_NNODES", "%d", job->gen.nnodes);
    s_put(&b, "PADDLE_GLOBAL_SIZE", "%d", world);
    s_put(&b, "PADDLE_LOCAL_SIZE", "%d", local_world);
    s_put(&b, "PADDLE_GLOBAL_RANK", "%d", w->rank);
    s_put(&b, "PADDLE_LOCAL_RANK", "%d", w->local_rank);
    s_put(&b, "PADDLE_RANK_IN_NODE", "%d", w->local_rank);
    s_put(&b, "PADDLE_LOG_DIR", "%s", job->node.log_dir);

    if (job->node.gpu_mode) {
        if (!job->node.gpu_inherit)
            s_put(&b, "CUDA_VISIBLE_DEVICES", "%s", job->node.visible_devices);
        if (job->node.set_device_order)
            s_put(&b, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        /* Paddle's one worker on a node of several GPUs gets them all (its --nproc_per_node 1) */
        if (job->node.gpu_inherit && local_world == 1 && job->node.gpus_visible > 1) {
            char all[GPUS_LIST_MAX];
            size_t o = 0;
            for (int i = 0; i < job->node.gpus_visible && o + 8 < sizeof all; i++)
                o += (size_t)snprintf(all + o, sizeof all - o, "%s%d", i ? "," : "", i);
            s_put(&b, "FLAGS_selected_gpus", "%s", all);
        } else {
            s_put(&b, "FLAGS_selected_gpus", "%d", w->local_rank);
        }
        s_put(&b, "PLAUNCH_GPU", "%s", w->gpu);
    } else {
        s_put(&b, "PADDLE_DISTRI_BACKEND", "gloo"); /* as Paddle gives CPU workers */
    }
    s_put(&b, "PLAUNCH_AGENT", "%s", job->node.agent_endpoint);
    s_put(&b, "PLAUNCH_JOB_ID", "%s", job->node.job_id);
    s_put(&b, "PLAUNCH_GENERATION", "%d", job->gen.generation);
    s_put(&b, "PLAUNCH_NODE_RANK", "%d", job->gen.node_rank);
    s_put(&b, "PLAUNCH_NNODES", "%d", job->gen.nnodes);
    if (b.overflow) {
        free(mem);
        errno = ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < b.nvec; i++)
        b.vec[i] = b.text + (uintptr_t)b.vec[i];
    for (size_t i = 0; i < nbase; i++)
        b.vec[b.nvec++] = job->node.base_env[i];
    b.vec[b.nvec] = NULL;
    return b.vec;
}
