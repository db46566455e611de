/* libplaunch: the worker side of plaunch: ranks from the environment, NCCL ids and barriers through the local
 * agent over ipc:// (one ZeroMQ DEALER per handle; every call has a timeout). */
#include "worker/plaunch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/ownfile.h"
#include "common/wire/wire.h"

#define PL_DEFAULT_TIMEOUT_MS 600000 /* NCCL id waits for rank 0 to start: generous, but never forever */
#define PL_VERDICT_MARGIN_MS 2000     /* a barrier waits this much past its timeout for the coordinator's verdict */

struct plaunch {
    void *zctx;
    void *sock;
    int rank, world, local_rank, generation;
    int timeout_ms;
    char job_id[WIRE_MAX_JOB_ID + 1];
    char err[512];
};

static int s_fail(plaunch_t *p, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int s_fail(plaunch_t *p, int e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    errno = e;
    return -1;
}

/* Reads an integer environment variable in [lo, hi]; -1 with a message when absent or malformed. */
static int s_env_int(plaunch_t *p, const char *name, long lo, long hi, int *out)
{
    const char *v = getenv(name);
    char *end = NULL;
    if (!v || !*v)
        return s_fail(p, EINVAL, "%s is not set: start this program with plaunch", name);
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return s_fail(p, EINVAL, "%s='%s' is not a number from %ld to %ld", name, v, lo, hi);
    *out = (int)x;
    return 0;
}

plaunch_t *plaunch_open(void)
{
    plaunch_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    const char *agent = getenv("PLAUNCH_AGENT"), *job = getenv("PLAUNCH_JOB_ID"), *tmo = getenv("PLAUNCH_TIMEOUT_MS");
    if (s_env_int(p, "RANK", 0, WIRE_MAX_WORLD - 1, &p->rank) < 0 ||
        s_env_int(p, "WORLD_SIZE", 1, WIRE_MAX_WORLD, &p->world) < 0 ||
        s_env_int(p, "LOCAL_RANK", 0, WIRE_MAX_LOCAL - 1, &p->local_rank) < 0 ||
        s_env_int(p, "PLAUNCH_GENERATION", 0, INT_MAX, &p->generation) < 0)
        goto error;
    if (!agent || strncmp(agent, "ipc://", 6) != 0 || !job || !*job || strlen(job) > WIRE_MAX_JOB_ID) {
        s_fail(p, EINVAL, "PLAUNCH_AGENT / PLAUNCH_JOB_ID missing or malformed: start this program with plaunch");
        goto error;
    }
    snprintf(p->job_id, sizeof p->job_id, "%s", job);
    p->timeout_ms = tmo && atoi(tmo) > 0 ? atoi(tmo) : PL_DEFAULT_TIMEOUT_MS;
    int linger = 0;
    p->zctx = zmq_ctx_new();
    if (!p->zctx || !(p->sock = zmq_socket(p->zctx, ZMQ_DEALER)) ||
        zmq_setsockopt(p->sock, ZMQ_LINGER, &linger, sizeof linger) < 0 || zmq_connect(p->sock, agent) < 0) {
        s_fail(p, errno, "cannot connect to the plaunch agent at %s: %s", agent, zmq_strerror(errno));
        goto error;
    }
    return p;
error:;
    int e = errno;
    /* plaunch_open has no handle to report through: say why on stderr once, keep errno. */
    fprintf(stderr, "libplaunch: %s\n", p->err);
    plaunch_close(&p);
    errno = e;
    return NULL;
}

void plaunch_close(plaunch_t **pp)
{
    if (!pp || !*pp)
        return;
    plaunch_t *p = *pp;
    if (p->sock)
        zmq_close(p->sock);
    if (p->zctx)
        zmq_ctx_term(p->zctx);
    free(p);
    *pp = NULL;
}

int plaunch_rank(const plaunch_t *p) { return p->rank; }
int plaunch_world_size(const plaunch_t *p) { return p->world; }
int plaunch_local_rank(const plaunch_t *p) { return p->local_rank; }
int plaunch_generation(const plaunch_t *p) { return p->generation; }
const char *plaunch_error(const plaunch_t *p) { return p && p->err[0] ? p->err : "no error"; }

static int s_send(plaunch_t *p, wire_type_t type, void *body)
{
    wire_msg_t m;
    char err[256];
    unsigned char buf[1024];
    wire_init(&m, p->job_id, (uint32_t)p->generation, type, body);
    ssize_t n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    if (n < 0)
        return s_fail(p, EINVAL, "%s", err);
    if (zmq_send(p->sock, buf, (size_t)n, 0) < 0)
        return s_fail(p, errno, "sending %s to the agent: %s", wire_type_name(type), zmq_strerror(errno));
    return 0;
}

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the refusal r is about a request of this rank for key (the agent's refusal of a message it could not
 * read names no request: it can only be about the call under way). */
static int s_refuses(const plaunch_t *p, const Plaunch__Refuse *r, const char *key)
{
    return !r->request || (r->rank == (uint32_t)p->rank && strcmp(r->key, key) == 0);
}

/* Waits for the agent's answer about key (NCCL_ID or BARRIER_DONE) until timeout_ms; returns the message. A
 * refusal of the request ends the wait at once with its reason. */
static wire_msg_t *s_wait(plaunch_t *p, wire_type_t want, const char *key, int timeout_ms)
{
    int64_t deadline = s_now_ms() + timeout_ms;
    unsigned char buf[4096];
    for (;;) {
        int64_t left = deadline - s_now_ms();
        zmq_pollitem_t it = { .socket = p->sock, .events = ZMQ_POLLIN };
        int r = left > 0 ? zmq_poll(&it, 1, (long)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            s_fail(p, ETIMEDOUT, "no answer from the plaunch agent for %s '%s' within %d ms (is every rank calling "
                   "it? rank 0 must be running)", wire_type_name(want), key, timeout_ms);
            return NULL;
        }
        int n = zmq_recv(p->sock, buf, sizeof buf, ZMQ_DONTWAIT);
        if (n < 0)
            continue;
        char err[256];
        wire_msg_t *m = wire_decode(buf, (size_t)(n > (int)sizeof buf ? (int)sizeof buf : n), WIRE_TO_WORKER, err,
                                    sizeof err);
        if (!m) {
            s_fail(p, EPROTO, "bad message from the agent: %s", err);
            return NULL;
        }
        if (m->body_case == WIRE_REFUSE && s_refuses(p, m->refuse, key)) {
            s_fail(p, EPROTO, "plaunch refused %s '%s' of rank %d: %s",
                   m->refuse->request ? wire_type_name(m->refuse->request) : wire_type_name(want), key, p->rank,
                   m->refuse->text);
            wire_free(&m);
            return NULL;
        }
        if (m->body_case == WIRE_STOP) {
            s_fail(p, ECANCELED, "the job is stopping (%s)", m->stop->text);
            wire_free(&m);
            return NULL;
        }
        const char *mkey = m->body_case == WIRE_NCCL_ID ? m->nccl_id->key
                           : m->body_case == WIRE_BARRIER_DONE ? m->barrier_done->key : "";
        if (m->body_case == want && strcmp(mkey, key) == 0)
            return m;
        wire_free(&m); /* an answer to an earlier call that timed out, or a refusal of one */
    }
}

static int s_check_key(plaunch_t *p, const char *key)
{
    size_t len = key ? strlen(key) : 0;
    if (len == 0 || len > WIRE_MAX_KEY)
        return s_fail(p, EINVAL, "key must be 1 to %d characters", WIRE_MAX_KEY);
    for (size_t i = 0; i < len; i++)
        if (key[i] <= ' ' || key[i] > '~')
            return s_fail(p, EINVAL, "key '%s' must be printable ASCII without spaces", key);
    return 0;
}

/* ncclGetUniqueId through dlopen: libplaunch itself needs no NCCL to build or to run on ranks != 0. */
static int s_nccl_unique_id(plaunch_t *p, unsigned char id[PLAUNCH_NCCL_ID_BYTES])
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        h = dlopen("libnccl.so", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return s_fail(p, ENOENT, "rank 0 cannot load NCCL (libnccl.so.2): %s; install NCCL or add its lib "
                      "directory to LD_LIBRARY_PATH", dlerror());
    int (*get)(void *) = (int (*)(void *))dlsym(h, "ncclGetUniqueId");
    const char *(*str)(int) = (const char *(*)(int))dlsym(h, "ncclGetErrorString");
    if (!get)
        return s_fail(p, ENOENT, "libnccl has no ncclGetUniqueId");
    int rc = get(id);
    if (rc != 0)
        return s_fail(p, EIO, "ncclGetUniqueId failed: %s", str ? str(rc) : "unknown NCCL error");
    return 0;
}

int plaunch_nccl_id(plaunch_t *p, const char *key, unsigned char id[PLAUNCH_NCCL_ID_BYTES])
{
    if (s_check_key(p, key) < 0)
        return -1;
    if (p->rank == 0) {
        Plaunch__NcclIdPut put = PLAUNCH__NCCL_ID_PUT__INIT;
        if (s_nccl_unique_id(p, id) < 0)
            return -1;
        put.key = (char *)key;
        put.rank = 0;
        put.id.data = id;
        put.id.len = PLAUNCH_NCCL_ID_BYTES;
        if (s_send(p, WIRE_NCCL_ID_PUT, &put) < 0)
            return -1;
        /* Then ask for it like every rank: the answer proves the coordinator holds it (a PUT alone could still
         * sit in a socket when a short-lived rank 0 exits). */
    }
    Plaunch__NcclIdGet get = PLAUNCH__NCCL_ID_GET__INIT;
    get.key = (char *)key;
    get.rank = (uint32_t)p->rank;
    if (s_send(p, WIRE_NCCL_ID_GET, &get) < 0)
        return -1;
    wire_msg_t *m = s_wait(p, WIRE_NCCL_ID, key, p->timeout_ms);
    if (!m)
        return -1;
    /* Every rank takes the coordinator's copy: if rank 0 asked twice for one key in a generation, the first id
     * is the one the other ranks already use. */
    memcpy(id, m->nccl_id->id.data, PLAUNCH_NCCL_ID_BYTES);
    wire_free(&m);
    return 0;
}

int plaunch_barrier(plaunch_t *p, const char *key, int timeout_ms)
{
    if (s_check_key(p, key) < 0)
        return -1;
    if (timeout_ms <= 0)
        timeout_ms = p->timeout_ms;
    if ((uint32_t)timeout_ms > WIRE_MAX_MS)
        return s_fail(p, EINVAL, "barrier '%s': timeout %d ms is longer than %u ms", key, timeout_ms, WIRE_MAX_MS);
    Plaunch__Barrier b = PLAUNCH__BARRIER__INIT;
    b.key = (char *)key;
    b.rank = (uint32_t)p->rank;
    b.timeout_ms = (uint32_t)timeout_ms;
    if (s_send(p, WIRE_BARRIER, &b) < 0)
        return -1;
    /* The coordinator decides the timeout for every rank at once; waiting a little longer here only guards
     * against an agent that went away, and the verdict normally comes first. */
    int64_t wait_ms = (int64_t)timeout_ms + PL_VERDICT_MARGIN_MS + timeout_ms / 10;
    wire_msg_t *m = s_wait(p, WIRE_BARRIER_DONE, key, wait_ms > INT_MAX ? INT_MAX : (int)wait_ms);
    if (!m)
        return -1;
    int status = m->barrier_done->status;
    wire_free(&m);
    if (status != PLAUNCH__BARRIER_DONE__STATUS__OK)
        return s_fail(p, status == PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT ? ETIMEDOUT : ECANCELED,
                      "barrier '%s' %s", key,
                      status == PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT
                          ? "timed out: not every rank arrived within the timeout of a rank that did (the "
                            "first one's, unless a later rank gave a shorter one)"
                          : "aborted: the generation ended");
    return 0;
}

int plaunch_progress(plaunch_t *p, unsigned long long step)
{
    /* the file is opened once per process; a fork's child shares the descriptor, which writes the same file */
    static int fd = -1;
    const char *path = getenv("PLAUNCH_PROGRESS_FILE");
    char line[32];
    if (!path || !path[0]) {
        errno = ENOENT;
        return p ? s_fail(p, ENOENT, "PLAUNCH_PROGRESS_FILE is not set: this program does not run under plaunch") : -1;
    }
    if (fd < 0) {
        char err[512];
        int f = ownfile_open(AT_FDCWD, NULL, path, 0, "unset PLAUNCH_PROGRESS_FILE", err, sizeof err);
        if (f < 0)
            return p ? s_fail(p, errno, "PLAUNCH_PROGRESS_FILE: %s", err) : -1;
        if (!__sync_bool_compare_and_swap(&fd, -1, f))
            close(f);
    }
    /* fixed width: each write replaces the whole number at offset 0 in one call, never a shorter tail */
    int len = snprintf(line, sizeof line, "%20llu\n", step);
    if (pwrite(fd, line, (size_t)len, 0) != len)
        return p ? s_fail(p, errno ? errno : EIO, "cannot write PLAUNCH_PROGRESS_FILE %s: %s", path, strerror(errno))
                 : -1;
    return 0;
}
