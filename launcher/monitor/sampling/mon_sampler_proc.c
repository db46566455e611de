/* mon_sampler_proc: the sampler process (`plaunch __monitor`): one request at a time from stdin, one answer each on
 * stdout (frames of mon_wire.h); NVML, /proc and the preflight checks are its only work. */
#include "launcher/monitor/sampling/mon_sampler.h"

#include "launcher/monitor/sampling/mon_gpu.h"
#include "launcher/monitor/sampling/mon_nvml.h"
#include "launcher/monitor/sampling/mon_preflight.h"
#include "launcher/monitor/sampling/mon_proc.h"
#include "launcher/monitor/sampling/mon_wire.h"
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

struct s_sampler {
    struct mon_nvml nv;
    int nvml_ok;
    char note[MON_WIRE_NOTE_MAX];
    mon_proc_t *proc;
    mon_gpu_t *gpu;
    struct mon_wire_target targets[MON_TARGETS_MAX];
    pid_t tree[MON_PROC_TREE_MAX];
    unsigned char *out; /* the answer being built: mon_wire_answer_max(any kind, MON_TARGETS_MAX) */
};

/* Reads exactly len bytes: 1, 0 at EOF before the first byte, -1 at EOF inside or on an error. */
static int s_read_all(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, (char *)buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 && got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

static int64_t s_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Header and note at the front of s->out; returns where the body starts. */
static size_t s_answer_head(struct s_sampler *s, int kind, uint32_t count)
{
    struct mon_wire_hdr h = { .magic = MON_WIRE_MAGIC, .kind = (uint8_t)kind,
                              .flags = s->nvml_ok ? MON_WIRE_NVML_OK : 0, .note_len = (uint16_t)strlen(s->note),
                              .count = count };
    memcpy(s->out, &h, sizeof h);
    memcpy(s->out + sizeof h, s->note, h.note_len);
    return sizeof h + h.note_len;
}

static int s_send(struct s_sampler *s, size_t len)
{
    struct mon_wire_hdr h;
    memcpy(&h, s->out, sizeof h);
    h.len = (uint32_t)(len - sizeof h);
    memcpy(s->out, &h, sizeof h);
    if (util_write_all(STDOUT_FILENO, s->out, len) < 0) {
        fprintf(stderr, "plaunch __monitor: cannot write an answer: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

static int s_samples(struct s_sampler *s, uint32_t n)
{
    size_t o = s_answer_head(s, MON_WIRE_SAMPLES, n);
    double avail = mon_proc_mem_avail();
    mon_gpu_round(s->gpu);
    for (uint32_t i = 0; i < n; i++) {
        const struct mon_wire_target *t = &s->targets[i];
        struct mon_sample m;
        mon_sample_clear(&m);
        m.t_ms = s_unix_ms();
        m.rank = t->rank, m.local_rank = t->local_rank, m.generation = t->generation;
        memcpy(m.gpu, t->gpu, sizeof m.gpu);
        int ntree = 0;
        if (t->pid > 0)
            ntree = mon_proc_sample(s->proc, t->rank, (pid_t)t->pid, &m, s->tree, MON_PROC_TREE_MAX);
        if (m.gpu[0])
            mon_gpu_sample(s->gpu, m.gpu, s->tree, ntree, &m);
        m.host_avail_frac = avail;
        memcpy(s->out + o, &m, sizeof m);
        o += sizeof m;
    }
    return s_send(s, o);
}

static int s_preflight(struct s_sampler *s, int kind, uint32_t n, const char (*gpus)[MON_GPU_MAX])
{
    const char *list[MON_TARGETS_MAX];
    for (uint32_t i = 0; i < n; i++)
        list[i] = gpus[i];
    char cuda[MON_WIRE_CUDA_MAX] = "";
    size_t o = s_answer_head(s, kind, 0), len = 0;
    if (s->nvml_ok)
        mon_nvml_cuda_version(&s->nv, cuda, sizeof cuda);
    memcpy(s->out + o, cuda, sizeof cuda);
    o += sizeof cuda;
    int lines = kind == MON_WIRE_PROCS
                    ? mon_preflight_procs(&s->nv, s->nvml_ok, list, (int)n, (char *)s->out + o, MON_WIRE_TEXT_MAX, &len)
                    : mon_preflight_run(&s->nv, s->proc, getppid(), list, (int)n, (char *)s->out + o,
                                        MON_WIRE_TEXT_MAX, &len);
    struct mon_wire_hdr h;
    memcpy(&h, s->out, sizeof h);
    h.count = (uint32_t)lines;
    memcpy(s->out, &h, sizeof h);
    return s_send(s, o + len);
}

/* One request: 1 answered, 0 EOF, -1 a request it cannot take (message on stderr), -2 the answer was not sent. */
static int s_serve_one(struct s_sampler *s, char (*gpus)[MON_GPU_MAX])
{
    struct mon_wire_hdr h;
    char err[256];
    int r = s_read_all(STDIN_FILENO, &h, sizeof h);
    if (r <= 0) {
        if (r < 0)
            fprintf(stderr, "plaunch __monitor: a request header was cut short\n");
        return r;
    }
    if (mon_wire_check_request(&h, err, sizeof err) < 0) {
        fprintf(stderr, "plaunch __monitor: bad request: %s\n", err);
        return -1;
    }
    void *body = h.kind == MON_WIRE_SAMPLES ? (void *)s->targets : (void *)gpus;
    if (s_read_all(STDIN_FILENO, body, h.len) <= 0) {
        fprintf(stderr, "plaunch __monitor: a request of %u bytes was cut short\n", (unsigned)h.len);
        return -1;
    }
    for (uint32_t i = 0; i < h.count; i++) {
        const char *g = h.kind == MON_WIRE_SAMPLES ? s->targets[i].gpu : gpus[i];
        if (memchr(g, '\0', MON_GPU_MAX) == NULL) {
            fprintf(stderr, "plaunch __monitor: bad request: GPU entry %u is not a string\n", (unsigned)i);
            return -1;
        }
    }
    r = h.kind == MON_WIRE_SAMPLES ? s_samples(s, h.count) : s_preflight(s, h.kind, h.count, gpus);
    return r < 0 ? -2 : 1;
}

int mon_sampler_main(int argc, char **argv)
{
    int use_nvml = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-nvml") == 0) {
            use_nvml = 0;
        } else {
            fprintf(stderr, "plaunch __monitor: unknown argument '%s' (the sampler, started by plaunch itself, "
                            "takes only --no-nvml)\n", argv[i]);
            return 2;
        }
    }
    /* Gone with the agent even while an NVML call hangs (EOF on stdin covers the rest). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGPIPE, SIG_DFL);
    static struct s_sampler s;
    static char gpus[MON_TARGETS_MAX][MON_GPU_MAX];
    if (!use_nvml)
        snprintf(s.note, sizeof s.note, "NVML not used (--no-nvml): host metrics only");
    else
        s.nvml_ok = mon_nvml_open(&s.nv, NULL, s.note, sizeof s.note) == 0;
    size_t cap = mon_wire_answer_max(MON_WIRE_SAMPLES, MON_TARGETS_MAX);
    if (cap < mon_wire_answer_max(MON_WIRE_PREFLIGHT, MON_TARGETS_MAX))
        cap = mon_wire_answer_max(MON_WIRE_PREFLIGHT, MON_TARGETS_MAX);
    s.proc = mon_proc_new();
    s.gpu = mon_gpu_new(&s.nv);
    s.out = malloc(cap);
    int code = 0;
    if (s.proc == NULL || s.gpu == NULL || s.out == NULL) {
        fprintf(stderr, "plaunch __monitor: out of memory\n");
        code = 1;
    }
    for (int r = 1; code == 0 && r == 1;) {
        r = s_serve_one(&s, gpus);
        code = r >= 0 ? 0 : r == -1 ? 2 : 1;
    }
    mon_gpu_destroy(&s.gpu);
    mon_proc_destroy(&s.proc);
    free(s.out);
    if (s.nvml_ok)
        mon_nvml_close(&s.nv);
    return code;
}
