/* agent_ipc: the node agent's ipc:// endpoint for libplaunch workers: takes their NCCL id and barrier
 * requests up to the coordinator and hands the answers back to every worker waiting on the key. */
#include "agent_ipc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define IPC_MAX_ROUTING_ID 256

/* A worker waiting for the answer about key: its ROUTER routing id. */
struct waiter {
    wire_type_t answer; /* WIRE_NCCL_ID or WIRE_BARRIER_DONE */
    char key[WIRE_MAX_KEY + 1];
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
};

static void s_send_to(agent_ipc_t *ipc, const unsigned char *rid, size_t rid_len, const wire_msg_t *m)
{
    unsigned char buf[1024];
    char err[256];
    ssize_t n = wire_encode(m, buf, sizeof buf, err, sizeof err);
    if (n < 0) {
        log_error("agent: cannot encode %s for a worker: %s", wire_type_name(m->body_case), err);
        return;
    }
    /* ROUTER_MANDATORY: a worker that went away makes this fail instead of queueing; nothing else to do. */
    if (zmq_send(ipc->sock, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(ipc->sock, buf, (size_t)n, ZMQ_DONTWAIT) < 0)
        log_debug("agent: worker gone before its %s: %s", wire_type_name(m->body_case), zmq_strerror(errno));
}

static void s_refuse(agent_ipc_t *ipc, const unsigned char *rid, size_t rid_len, int code, const char *text)
{
    Plaunch__Refuse r = PLAUNCH__REFUSE__INIT;
    wire_msg_t m;
    r.code = code;
    r.text = (char *)text;
    wire_init(&m, ipc->job_id, ipc->generation, WIRE_REFUSE, &r);
    s_send_to(ipc, rid, rid_len, &m);
}

static int s_add_waiter(agent_ipc_t *ipc, wire_type_t answer, const char *key, const unsigned char *rid,
                        size_t rid_len)
{
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
        log_warn("agent: bad message from a worker: %s", err);
        s_refuse(ipc, rid, rid_len, PLAUNCH__REFUSE__CODE__BAD_REQUEST, err);
        return;
    }
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, ipc->job_id, err, sizeof err) < 0) {
        log_warn("agent: worker refused: %s", err);
        s_refuse(ipc, rid, rid_len,
                 m->protocol_version != WIRE_PROTOCOL_VERSION ? PLAUNCH__REFUSE__CODE__BAD_VERSION
                                                              : PLAUNCH__REFUSE__CODE__BAD_JOB, err);
        goto out;
    }
    if (m->generation != ipc->generation) {
        snprintf(err, sizeof err, "request from generation %u; the job is in generation %u", m->generation,
                 ipc->generation);
        s_refuse(ipc, rid, rid_len, PLAUNCH__REFUSE__CODE__STALE_GENERATION, err);
        goto out;
    }
    if (m->body_case == WIRE_NCCL_ID_GET)
        s_add_waiter(ipc, WIRE_NCCL_ID, m->nccl_id_get->key, rid, rid_len);
    else if (m->body_case == WIRE_BARRIER)
        s_add_waiter(ipc, WIRE_BARRIER_DONE, m->barrier->key, rid, rid_len);
    if (ipc->up(ipc->arg, m) < 0)
        s_refuse(ipc, rid, rid_len, PLAUNCH__REFUSE__CODE__SHUTTING_DOWN, "the coordinator is not reachable");
out:
    wire_free(&m);
}

static int s_on_readable(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    agent_ipc_t *ipc = arg;
    for (int budget = 0; budget < 256; budget++) {
        zmq_msg_t rid, body;
        zmq_msg_init(&rid);
        if (zmq_msg_recv(&rid, ipc->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&rid);
            return 0;
        }
        zmq_msg_init(&body);
        int more = zmq_msg_more(&rid) && zmq_msg_recv(&body, ipc->sock, ZMQ_DONTWAIT) >= 0;
        /* Drop anything beyond one frame: a well-formed DEALER sends exactly one. */
        while (zmq_msg_more(&body)) {
            zmq_msg_t extra;
            zmq_msg_init(&extra);
            zmq_msg_recv(&extra, ipc->sock, ZMQ_DONTWAIT);
            more = 0;
            int again = zmq_msg_more(&extra);
            zmq_msg_close(&extra);
            if (!again)
                break;
        }
        if (more && zmq_msg_size(&rid) <= IPC_MAX_ROUTING_ID)
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
}

void agent_ipc_deliver(agent_ipc_t *ipc, const wire_msg_t *m)
{
    const char *key = m->body_case == WIRE_NCCL_ID ? m->nccl_id->key
                      : m->body_case == WIRE_BARRIER_DONE ? m->barrier_done->key : NULL;
    if (!key) {
        log_warn("agent: %s from the coordinator has no worker to go to", wire_type_name(m->body_case));
        return;
    }
    int j = 0;
    for (int i = 0; i < ipc->nwaiters; i++) {
        struct waiter *w = &ipc->waiters[i];
        if (w->answer == m->body_case && strcmp(w->key, key) == 0)
            s_send_to(ipc, w->rid, w->rid_len, m);
        else
            ipc->waiters[j++] = *w;
    }
    ipc->nwaiters = j;
}
