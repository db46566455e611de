/* mon_sampler: the agent's handle on the sampler process: spawn (posix_spawn through the child registry, no fork:
 * the agent has threads), non-blocking requests, answers read incrementally into a buffer bounded by what was
 * asked, kill and reap. */
#include "launcher/monitor/sampling/mon_sampler.h"

#include "common/loop.h"
#include "launcher/monitor/sampling/mon_wire.h"
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
/* How long mon_sampler_stop waits for a SIGKILLed sampler to be gone: its end needs CPU, which a loaded 2-core
 * machine gave an ASan build only after 1 s (one stuck in the kernel is left to the agent's reaper). */
#define MON_SAMPLER_REAP_MS 3000

struct s_asked {
    int32_t rank, local_rank, generation;
};

struct mon_sampler {
    pid_t pid;
    int to, from;           /* our ends of the request and answer pipes */
    int dead, reaped;
    int status;             /* its wait status, once reaped */
    size_t pipe_cap;        /* a request up to this size goes into the (empty) pipe whole */
    int kind;               /* the outstanding request's kind, 0 none */
    uint32_t n;             /* its count */
    struct s_asked asked[MON_TARGETS_MAX];
    unsigned char *buf;     /* the request, then its answer */
    size_t have, want, cap;
    struct mon_wire_hdr hdr;
    int hdr_ok;
    char note[MON_WIRE_NOTE_MAX + 1];
    char cuda[MON_WIRE_CUDA_MAX];
    char *pf;               /* preflight lines */
    int pf_n, nvml_ok;
};

/* A close-on-exec copy of fd at 3 or above, so that dup2 onto 0 and 1 in the child can never be a no-op. */
static int s_high(int fd)
{
    if (fd > 2)
        return fd;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return h;
}

static int s_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    p[0] = s_high(p[0]);
    p[1] = s_high(p[1]);
    if (p[0] >= 0 && p[1] >= 0)
        return 0;
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    return -1;
}

/* The loop's reaper took the sampler (proc.h): how it ended is kept for the message. */
static void s_on_exit(void *owner, const struct proc_exit *e)
{
    mon_sampler_t *m = owner;
    m->reaped = 1;
    m->status = e->status;
}

static int s_spawn(mon_sampler_t *m, const char *exe, int use_nvml, int req, int ans)
{
    sigset_t none, dfl;
    char *argv[] = { (char *)exe, "__monitor", use_nvml ? NULL : "--no-nvml", NULL };
    sigemptyset(&none);
    sigemptyset(&dfl);
    /* The agent blocks and ignores signals it takes through signalfd: the sampler starts with the defaults, so
     * that SIGPIPE ends it when the agent is gone. */
    int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaddset(&dfl, sigs[i]);
    /* Its own process group: a terminal's Ctrl-C is the agent's to handle, not the sampler's. */
    struct proc_spawn sp = { .path = exe, .argv = argv, .stdio = { req, ans, PROC_KEEP }, .group = 1, .mask = &none,
                             .dfl = &dfl };
    m->pid = proc_spawn(&sp, s_on_exit, m);
    return m->pid > 0 ? 0 : errno;
}

mon_sampler_t *mon_sampler_start(const char *exe, int use_nvml, char *err, size_t errlen)
{
    int req[2] = { -1, -1 }, ans[2] = { -1, -1 };
    mon_sampler_t *m = calloc(1, sizeof *m);
    if (m == NULL) {
        snprintf(err, errlen, "cannot start the sampler: out of memory");
        return NULL;
    }
    m->to = m->from = -1;
    if (exe == NULL)
        exe = "/proc/self/exe";
    if (s_pipe(req) < 0 || s_pipe(ans) < 0) {
        snprintf(err, errlen, "cannot start the sampler: pipe: %s", strerror(errno));
        goto error;
    }
    /* Room for the largest request at once (the default 64 KiB; less when the user's pipe budget is spent). */
    size_t need = sizeof(struct mon_wire_hdr) + mon_wire_request_len(MON_WIRE_SAMPLES, MON_TARGETS_MAX);
    int sz = fcntl(req[1], F_GETPIPE_SZ);
    if (sz >= 0 && (size_t)sz < need)
        fcntl(req[1], F_SETPIPE_SZ, (int)need);
    sz = fcntl(req[1], F_GETPIPE_SZ);
    m->pipe_cap = sz > 0 ? (size_t)sz : 4096;
    int rc = s_spawn(m, exe, use_nvml, req[0], ans[1]);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the sampler %s __monitor: %s", exe, strerror(rc));
        goto error;
    }
    close(req[0]);
    close(ans[1]);
    m->to = req[1], m->from = ans[0];
    fcntl(m->to, F_SETFL, fcntl(m->to, F_GETFL) | O_NONBLOCK);
    fcntl(m->from, F_SETFL, fcntl(m->from, F_GETFL) | O_NONBLOCK);
    return m;
error:
    for (int i = 0; i < 2; i++) {
        if (req[i] >= 0)
            close(req[i]);
        if (ans[i] >= 0)
            close(ans[i]);
    }
    free(m);
    return NULL;
}

int mon_sampler_fd(const mon_sampler_t *m)
{
    return m ? m->from : -1;
}

pid_t mon_sampler_pid(const mon_sampler_t *m)
{
    return m ? m->pid : -1;
}

static int s_grow(mon_sampler_t *m, size_t cap)
{
    if (cap <= m->cap)
        return 0;
    unsigned char *b = realloc(m->buf, cap);
    if (b == NULL)
        return -1;
    m->buf = b, m->cap = cap;
    return 0;
}

/* Writes the request in m->buf (len bytes) and expects an answer of kind to n items. */
static int s_send(mon_sampler_t *m, int kind, uint32_t n, size_t len)
{
    ssize_t w;
    do
        w = write(m->to, m->buf, len);
    while (w < 0 && errno == EINTR);
    if (w != (ssize_t)len) {
        /* The pipe is empty between requests (an answer comes only after its request was read whole), so anything
         * short of all of it means the sampler is gone or broken. */
        m->dead = 1;
        errno = w < 0 && errno != EAGAIN ? errno : EPIPE;
        return -1;
    }
    m->kind = kind, m->n = n;
    m->have = 0, m->want = sizeof m->hdr, m->hdr_ok = 0;
    return 0;
}

static int s_check(const mon_sampler_t *m, int n)
{
    if (m == NULL || n < 1 || n > MON_TARGETS_MAX) {
        errno = EINVAL;
        return -1;
    }
    if (m->dead) {
        errno = EPIPE;
        return -1;
    }
    if (m->kind) {
        errno = EBUSY;
        return -1;
    }
    return 0;
}

static int s_prepare(mon_sampler_t *m, int kind, int n, size_t *len)
{
    *len = sizeof(struct mon_wire_hdr) + mon_wire_request_len(kind, (uint32_t)n);
    if (*len > m->pipe_cap) {
        errno = E2BIG;
        return -1;
    }
    size_t need = mon_wire_answer_max(kind, (uint32_t)n);
    if (s_grow(m, need > *len ? need : *len) < 0)
        return -1;
    struct mon_wire_hdr h = { .magic = MON_WIRE_MAGIC, .kind = (uint8_t)kind, .count = (uint32_t)n,
                              .len = (uint32_t)(*len - sizeof h) };
    memcpy(m->buf, &h, sizeof h);
    return 0;
}

int mon_sampler_request(mon_sampler_t *m, const struct mon_target *t, int n)
{
    size_t len;
    if (s_check(m, n) < 0 || s_prepare(m, MON_WIRE_SAMPLES, n, &len) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        struct mon_wire_target w = { .rank = t[i].rank, .local_rank = t[i].local_rank,
                                     .generation = t[i].generation, .pid = (int32_t)t[i].pid };
        snprintf(w.gpu, sizeof w.gpu, "%s", t[i].gpu);
        memcpy(m->buf + sizeof(struct mon_wire_hdr) + (size_t)i * sizeof w, &w, sizeof w);
        m->asked[i] = (struct s_asked){ t[i].rank, t[i].local_rank, t[i].generation };
    }
    return s_send(m, MON_WIRE_SAMPLES, (uint32_t)n, len);
}

static int s_request_gpus(mon_sampler_t *m, int kind, const char *const *gpus, int n)
{
    size_t len;
    if (s_check(m, n) < 0 || s_prepare(m, kind, n, &len) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char g[MON_GPU_MAX] = "";
        snprintf(g, sizeof g, "%s", gpus[i]);
        memcpy(m->buf + sizeof(struct mon_wire_hdr) + (size_t)i * MON_GPU_MAX, g, sizeof g);
    }
    return s_send(m, kind, (uint32_t)n, len);
}

int mon_sampler_request_preflight(mon_sampler_t *m, const char *const *gpus, int n)
{
    return s_request_gpus(m, MON_WIRE_PREFLIGHT, gpus, n);
}

int mon_sampler_request_procs(mon_sampler_t *m, const char *const *gpus, int n)
{
    return s_request_gpus(m, MON_WIRE_PROCS, gpus, n);
}

/* The sampler closed its answers: say how it ended when it already has (reaping it then). */
static int s_gone(mon_sampler_t *m, const char *what, char *err, size_t errlen)
{
    char how[64] = "it is exiting";
    if (!m->reaped && proc_wait(m->pid, m, 0, &m->status) == 0)
        m->reaped = 1;
    if (m->reaped && WIFEXITED(m->status))
        snprintf(how, sizeof how, "it exited with status %d", WEXITSTATUS(m->status));
    else if (m->reaped)
        snprintf(how, sizeof how, "it was killed by signal %d", WTERMSIG(m->status));
    snprintf(err, errlen, "the sampler (pid %d) %s: %s; host metrics only until a new one starts", (int)m->pid,
             what, how);
    m->dead = 1;
    return -1;
}

__attribute__((format(printf, 4, 5))) static int s_nonsense(mon_sampler_t *m, char *err, size_t errlen,
                                                             const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "the sampler (pid %d) %s: stop it and start a new one", (int)m->pid, what);
    m->dead = 1;
    return -1;
}

static int s_take_samples(mon_sampler_t *m, const unsigned char *body, struct mon_sample *out, int max, int *n,
                          char *err, size_t errlen)
{
    int k = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        struct mon_sample s;
        memcpy(&s, body + (size_t)i * sizeof s, sizeof s);
        const struct s_asked *a = &m->asked[i];
        if (s.rank != a->rank || s.local_rank != a->local_rank || s.generation != a->generation)
            return s_nonsense(m, err, errlen, "answered sample %d for rank %d, which was not asked there", (int)i,
                              s.rank);
        s.gpu[sizeof s.gpu - 1] = '\0';
        s.pci[sizeof s.pci - 1] = '\0';
        if (k < max)
            out[k++] = s;
    }
    *n = k;
    return 1;
}

static int s_take_preflight(mon_sampler_t *m, const unsigned char *body, size_t len, char *err, size_t errlen)
{
    memcpy(m->cuda, body, sizeof m->cuda);
    m->cuda[sizeof m->cuda - 1] = '\0';
    const char *text = (const char *)body + sizeof m->cuda;
    size_t tlen = len - sizeof m->cuda, start = 0;
    uint32_t lines = 0;
    for (size_t i = 0; i < tlen; i++)
        if (text[i] == '\0') {
            if (i - start + 1 > MON_WIRE_LINE_MAX)
                return s_nonsense(m, err, errlen, "sent a preflight line of %d bytes (at most %d)",
                                  (int)(i - start + 1), MON_WIRE_LINE_MAX);
            lines++, start = i + 1;
        }
    if (lines != m->hdr.count || start != tlen)
        return s_nonsense(m, err, errlen, "sent %d preflight lines where it announced %d", (int)lines,
                          (int)m->hdr.count);
    char *pf = malloc(tlen + 1);
    if (pf == NULL) {
        snprintf(err, errlen, "out of memory for the preflight's answer");
        return -1;
    }
    memcpy(pf, text, tlen);
    pf[tlen] = '\0';
    free(m->pf);
    m->pf = pf, m->pf_n = (int)lines;
    return 1;
}

/* A whole answer is in m->buf. */
static int s_complete(mon_sampler_t *m, struct mon_sample *out, int max, int *n, char *err, size_t errlen)
{
    const unsigned char *p = m->buf + sizeof m->hdr;
    memcpy(m->note, p, m->hdr.note_len);
    m->note[m->hdr.note_len] = '\0';
    m->note[strcspn(m->note, "\n")] = '\0';
    m->nvml_ok = m->hdr.flags & MON_WIRE_NVML_OK;
    int kind = m->kind;
    m->kind = 0;
    *n = 0;
    p += m->hdr.note_len;
    if (kind == MON_WIRE_SAMPLES)
        return s_take_samples(m, p, out, max, n, err, errlen);
    return s_take_preflight(m, p, m->hdr.len - m->hdr.note_len, err, errlen);
}

int mon_sampler_read(mon_sampler_t *m, struct mon_sample *out, int max, int *n, char *err, size_t errlen)
{
    *n = 0;
    if (m == NULL || m->dead) {
        snprintf(err, errlen, "the sampler is gone");
        return -1;
    }
    for (;;) {
        unsigned char extra;
        ssize_t r = m->kind ? read(m->from, m->buf + m->have, m->want - m->have) : read(m->from, &extra, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return 0;
        if (r < 0) {
            snprintf(err, errlen, "reading the sampler's answer: %s", strerror(errno));
            m->dead = 1;
            return -1;
        }
        if (r == 0)
            return s_gone(m, m->have ? "stopped in the middle of an answer" : "closed its answers", err, errlen);
        if (m->kind == 0)
            return s_nonsense(m, err, errlen, "spoke without being asked");
        m->have += (size_t)r;
        if (m->have < m->want)
            continue;
        if (!m->hdr_ok) {
            memcpy(&m->hdr, m->buf, sizeof m->hdr);
            char why[256];
            if (mon_wire_check_answer(&m->hdr, m->kind, m->n, why, sizeof why) < 0) {
                snprintf(err, errlen, "%s (pid %d): stop it and start a new one", why, (int)m->pid);
                m->dead = 1;
                return -1;
            }
            m->hdr_ok = 1;
            m->want = sizeof m->hdr + m->hdr.len; /* bounded by the check: never past mon_wire_answer_max */
            if (m->want > m->cap)
                return s_nonsense(m, err, errlen, "announced %zu bytes (at most %zu)", m->want, m->cap);
            if (m->want > m->have)
                continue;
        }
        return s_complete(m, out, max, n, err, errlen);
    }
}

const char *mon_sampler_preflight(const mon_sampler_t *m, int *n, char *cuda_driver, size_t cap, int *nvml_ok)
{
    *n = m && m->pf ? m->pf_n : 0;
    if (cuda_driver && cap)
        snprintf(cuda_driver, cap, "%s", m ? m->cuda : "");
    if (nvml_ok)
        *nvml_ok = m ? m->nvml_ok : 0;
    return m && m->pf ? m->pf : "";
}

const char *mon_sampler_note(const mon_sampler_t *m)
{
    return m ? m->note : "";
}

/* SIGKILL, then wait for the end within MON_SAMPLER_REAP_MS and reap it: this process only, never another (the
 * registry refuses a pid that is no longer our child). One stuck in the kernel is left to the loop's reaper. */
static void s_kill_reap(mon_sampler_t *m)
{
    if (m->reaped)
        return;
    proc_signal(m->pid, m, SIGKILL);
    if (proc_wait(m->pid, m, MON_SAMPLER_REAP_MS, NULL) < 0)
        proc_disown(m->pid, m);
    m->reaped = 1;
}

void mon_sampler_stop(mon_sampler_t **mp)
{
    if (mp == NULL || *mp == NULL)
        return;
    mon_sampler_t *m = *mp;
    int saved = errno;
    if (m->to >= 0)
        close(m->to);
    if (m->from >= 0)
        close(m->from);
    s_kill_reap(m);
    free(m->buf);
    free(m->pf);
    free(m);
    *mp = NULL;
    errno = saved;
}
