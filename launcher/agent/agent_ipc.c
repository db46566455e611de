/* agent_ipc: the node agent's ipc:// endpoint for libplaunch workers: takes their NCCL id and barrier
 * requests up to the coordinator and hands each answer or refusal back to the workers waiting for it. */
#include "launcher/agent/agent_ipc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/zrouter.h"
#include "common/lograte.h"

#define IPC_MAX_ROUTING_ID 256

/* A worker waiting for the answer about key: its rank and ROUTER routing id. */
struct waiter {
    wire_type_t answer; /* WIRE_NCCL_ID or WIRE_BARRIER_DONE */
    char key[WIRE_MAX_KEY + 1];
    uint32_t rank;
    unsigned char rid[IPC_MAX_ROUTING_ID];
    size_t rid_len;
};

struct agent_ipc {
    void *sock;
    loop_t *loop;
    char job_id[WIRE_MAX_JOB_ID + 1];
    uint32_t generation;
    agent_ipc_up_fn up;
    void *arg;
    struct waiter *waiters;
    int nwaiters, cap;
    struct lograte refusals;   /* refusals are the workers' to report: the log only counts them */
};

static void s_send_to(agent_ipc_t *ipc, const unsigned char *rid, size_t rid_len, const wire_msg_t *m)
{
    char err[256];
    size_t len;
    void *buf = wire_encode_alloc(m, &len, err, sizeof err);
    if (!buf) {
        log_error("agent: cannot encode %s for a worker: %s", wire_type_name(m->body_case), err);
        ipc->up(ipc->arg, NULL); /* a worker would wait for it: the job ends */
        return;
    }
    /* ROUTER_MANDATORY: a worker that went away makes this fail instead of queueing; nothing else to do. */
    if (zmq_send(ipc->sock, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(ipc->sock, buf, len, ZMQ_DONTWAIT) < 0)
        log_debug("agent: worker gone before its %s: %s", wire_type_name(m->body_case), zmq_strerror(errno));
    free(buf);
}

/* The request a worker message makes: its type, key and rank (key "" when it is not a known request). */
static const char *s_request(const wire_msg_t *m, uint32_t *rank)
{
    *rank = 0;
    switch (m ? m->body_case : WIRE_NONE) {
    case WIRE_NCCL_ID_PUT:
        *rank = m->nccl_id_put->rank;
        return m->nccl_id_put->key;
    case WIRE_NCCL_ID_GET:
        *rank = m->nccl_id_get->rank;
        return m->nccl_id_get->key;
    case WIRE_BARRIER:
        *rank = m->barrier->rank;
        return m->barrier->key;
    default:
        return "";
    }
}

/* Refuses the request m (NULL: a message that did not decode) of the worker at rid. */
static void s_refuse(agent_ipc_t *ipc, const unsigned char *rid, size_t rid_len, const wire_msg_t *req, int code,
                     const char *text)
{
    Plaunch__Refuse r;
    wire_msg_t m;
    uint32_t rank = 0;
    const char *key = s_request(req, &rank);
    wire_refuse_init(&m, &r, ipc->job_id, ipc->generation, code, text, *key ? (uint32_t)req->body_case : 0, key,
                     rank);
    lograte_msg(&ipc->refusals, LOG_INFO, "agent refused a worker's %s '%s': %s",
                r.request ? wire_type_name(req->body_case) : "message", r.key, text);
    s_send_to(ipc, rid, rid_len, &m);
}

/* A worker waits for the answer about (key, rank); a repeated request of a rank still waiting (its own call timed
 * out and it asked again) keeps one waiter, which then answers the newest caller: the coordinator counts an
 * arrival once as well, and a second answer would be taken for the rank's next call. Returns 1 for a repeat. */
static int s_add_waiter(agent_ipc_t *ipc, wire_type_t answer, const char *key, uint32_t rank,
                        const unsigned char *rid, size_t rid_len)
{
    for (int i = 0; i < ipc->nwaiters; i++) {
        struct waiter *w = &ipc->waiters[i];
        if (w->answer == answer && w->rank == rank && strcmp(w->key, key) == 0) {
            memcpy(w->rid, rid, rid_len);
            w->rid_len = rid_len;
            return 1;
        }
    }
    if (ipc->nwaiters == ipc->cap) {
        int cap = ipc->cap ? ipc->cap * 2 : 16;
        struct waiter *w = realloc(ipc->waiters, (size_t)cap * sizeof *w);
        if (!w)
            return -1;
        ipc->waiters = w;
        ipc->cap = cap;
    }
    struct waiter *w = &ipc->waiters[ipc->nwaiters++];
    w->answer = answer;
    snprintf(w->key, sizeof w->key, "%s", key);
    w->rank = rank;
    memcpy(w->rid, rid, rid_len);
    w->rid_len = rid_len;
    return 0;
}

/* One request from a worker: check it, remember who waits, pass it up. */
static void s_on_request(agent_ipc_t *ipc, const unsigned char *rid, size_t rid_len, const void *data, size_t len)
{
    char err[512];
    wire_msg_t *m = wire_decode(data, len, WIRE_TO_AGENT_IPC, err, sizeof err);
    if (!m) {
        s_refuse(ipc, rid, rid_len, NULL, PLAUNCH__REFUSE__CODE__BAD_REQUEST, err);
        return;
    }
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, ipc->job_id, err, sizeof err) < 0) {
        s_refuse(ipc, rid, rid_len, m,
                 m->protocol_version != WIRE_PROTOCOL_VERSION ? PLAUNCH__REFUSE__CODE__BAD_VERSION
                                                              : PLAUNCH__REFUSE__CODE__BAD_JOB, err);
        goto out;
    }
    if (m->generation != ipc->generation) {
        snprintf(err, sizeof err, "request from generation %u; the job is in generation %u", m->generation,
                 ipc->generation);
        s_refuse(ipc, rid, rid_len, m, PLAUNCH__REFUSE__CODE__STALE_GENERATION, err);
        goto out;
    }
    int repeat = 0;
    if (m->body_case == WIRE_NCCL_ID_GET)
        repeat = s_add_waiter(ipc, WIRE_NCCL_ID, m->nccl_id_get->key, m->nccl_id_get->rank, rid, rid_len);
    else if (m->body_case == WIRE_BARRIER)
        repeat = s_add_waiter(ipc, WIRE_BARRIER_DONE, m->barrier->key, m->barrier->rank, rid, rid_len);
    if (repeat < 0)
        s_refuse(ipc, rid, rid_len, m, PLAUNCH__REFUSE__CODE__BAD_REQUEST, "the agent is out of memory");
    else if (!repeat && ipc->up(ipc->arg, m) < 0)
        s_refuse(ipc, rid, rid_len, m, PLAUNCH__REFUSE__CODE__SHUTTING_DOWN,
                 "the job is not running a generation (stopping, or between generations)");
out:
    wire_free(&m);
}

static int s_on_readable(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    agent_ipc_t *ipc = arg;
    for (int budget = 0; budget < 256; budget++) {
        zmq_msg_t rid, body;
        int more = zrouter_recv(ipc->sock, &rid, &body);
        if (more < 0) {
            zmq_msg_close(&rid);
            zmq_msg_close(&body);
            return 0;
        }
        if (more > 0 && zmq_msg_size(&rid) <= IPC_MAX_ROUTING_ID)
            s_on_request(ipc, zmq_msg_data(&rid), zmq_msg_size(&rid), zmq_msg_data(&body), zmq_msg_size(&body));
        zmq_msg_close(&rid);
        zmq_msg_close(&body);
    }
    return 0;
}

agent_ipc_t *agent_ipc_new(void *zctx, loop_t *loop, const char *endpoint, const char *job_id,
                           agent_ipc_up_fn up, void *arg, char *err, size_t errlen)
{
    agent_ipc_t *ipc = calloc(1, sizeof *ipc);
    int one = 1, zero = 0;
    int64_t maxmsg = WIRE_MAX_MSG;
    if (!ipc)
        return NULL;
    ipc->loop = loop;
    ipc->up = up;
    ipc->arg = arg;
    lograte_init(&ipc->refusals, LOGRATE_INTERVAL_S);
    snprintf(ipc->job_id, sizeof ipc->job_id, "%s", job_id);
    ipc->sock = zmq_socket(zctx, ZMQ_ROUTER);
    if (!ipc->sock || zmq_setsockopt(ipc->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one) < 0 ||
        zmq_setsockopt(ipc->sock, ZMQ_LINGER, &zero, sizeof zero) < 0 ||
        zmq_setsockopt(ipc->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) < 0 ||
        zmq_bind(ipc->sock, endpoint) < 0) {
        snprintf(err, errlen, "cannot listen for workers on %s: %s", endpoint, zmq_strerror(errno));
        goto error;
    }
    if (loop_add_socket(loop, ipc->sock, ZMQ_POLLIN, s_on_readable, ipc) < 0) {
        snprintf(err, errlen, "event loop: %s", strerror(errno));
        goto error;
    }
    return ipc;
error:
    agent_ipc_destroy(&ipc);
    return NULL;
}

void agent_ipc_destroy(agent_ipc_t **pipc)
{
    if (!pipc || !*pipc)
        return;
    agent_ipc_t *ipc = *pipc;
    if (ipc->sock) {
        loop_remove_socket(ipc->loop, ipc->sock);
        zmq_close(ipc->sock);
    }
    lograte_flush(&ipc->refusals, LOG_INFO);
    free(ipc->waiters);
    free(ipc);
    *pipc = NULL;
}

void agent_ipc_set_job(agent_ipc_t *ipc, const char *job_id)
{
    snprintf(ipc->job_id, sizeof ipc->job_id, "%s", job_id);
}

void agent_ipc_set_generation(agent_ipc_t *ipc, uint32_t gen)
{
    ipc->generation = gen;
    ipc->nwaiters = 0;
    lograte_flush(&ipc->refusals, LOG_INFO);
}

/* Whether waiter w is one that m answers. */
static int s_answers(const wire_msg_t *m, const struct waiter *w)
{
    if (m->body_case == WIRE_NCCL_ID)
        return w->answer == WIRE_NCCL_ID && strcmp(w->key, m->nccl_id->key) == 0;
    if (m->body_case == WIRE_REFUSE) /* a refused PUT also ends rank 0's wait for the id it could not publish */
        return w->answer == (m->refuse->request == WIRE_BARRIER ? WIRE_BARRIER_DONE : WIRE_NCCL_ID) &&
               w->rank == m->refuse->rank && strcmp(w->key, m->refuse->key) == 0;
    const Plaunch__BarrierDone *d = m->barrier_done;
    int listed = d->n_ranks == 0;
    for (size_t i = 0; i < d->n_ranks && !listed; i++)
        listed = d->ranks[i] == w->rank;
    return w->answer == WIRE_BARRIER_DONE && listed && strcmp(w->key, d->key) == 0;
}

void agent_ipc_deliver(agent_ipc_t *ipc, const wire_msg_t *m)
{
    int j = 0, sent = 0;
    if (m->body_case == WIRE_REFUSE && m->refuse->request != WIRE_NCCL_ID_PUT &&
        m->refuse->request != WIRE_NCCL_ID_GET && m->refuse->request != WIRE_BARRIER) {
        log_warn("coordinator refused a request of this node: %s", m->refuse->text);
        return;
    }
    if (m->body_case != WIRE_REFUSE && m->body_case != WIRE_NCCL_ID && m->body_case != WIRE_BARRIER_DONE) {
        log_warn("agent: %s from the coordinator has no worker to go to", wire_type_name(m->body_case));
        return;
    }
    for (int i = 0; i < ipc->nwaiters; i++) {
        struct waiter *w = &ipc->waiters[i];
        if (s_answers(m, w)) {
            s_send_to(ipc, w->rid, w->rid_len, m);
            sent++;
        } else {
            ipc->waiters[j++] = *w;
        }
    }
    ipc->nwaiters = j;
    /* The worker that was told reports it. None waits when the call already failed (rank 0's PUT and GET of one
     * key are both refused, and either ends the call) or the worker went away. */
    if (m->body_case == WIRE_REFUSE)
        lograte_msg(&ipc->refusals, LOG_INFO, "coordinator refused %s '%s' of rank %u%s: %s",
                    wire_type_name(m->refuse->request), m->refuse->key, m->refuse->rank,
                    sent ? " (the worker was told)" : " (no worker waits for it)", m->refuse->text);
}
