/* status_ask: `plaunch status --master HOST:PORT`: one STATUS_REQUEST to the coordinator on a TLS session with the
 * job's credentials, as an agent would open one (but asking to be served directly, never by a relay), and its
 * STATUS_ANSWER; every wait bounded by one deadline. */
#include "launcher/cli/status_ask.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "launcher/agent/creds.h"
#include "launcher/goodput/goodput.h"
#include "launcher/agent/link.h"
#include "common/tls/tls_chan.h"
#include "common/wire/wire.h"

struct ask {
    void *sock;
    tls_chan_t *ch;            /* NULL: --insecure */
    unsigned char *frame;
    char job_id[WIRE_MAX_JOB_ID + 1];
    char *answer;
    size_t len;
    int done;
    char *err;
    size_t errlen;
};

static uint64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void s_flush(struct ask *a)
{
    size_t n;
    while (a->ch && (n = tls_chan_pull(a->ch, a->frame, TLS_CHAN_FRAME_MAX)) > 0)
        zmq_send(a->sock, a->frame, n, ZMQ_DONTWAIT);
}

static int s_send(struct ask *a, const wire_msg_t *m)
{
    size_t len;
    void *buf = wire_encode_alloc(m, &len, a->err, a->errlen);
    if (!buf)
        return -1;
    int rc = a->ch ? tls_chan_send(a->ch, buf, len) : (zmq_send(a->sock, buf, len, ZMQ_DONTWAIT) < 0 ? -1 : 0);
    free(buf);
    if (rc < 0) {
        snprintf(a->err, a->errlen, "cannot send the request: %s", a->ch ? tls_chan_error(a->ch) : zmq_strerror(errno));
        return -1;
    }
    s_flush(a);
    return 0;
}

/* One message of the coordinator: HELLO (we ask), STATUS_ANSWER (done), REFUSE (done, failed). */
static int s_message(struct ask *a, const void *data, size_t len, uint64_t allowed)
{
    char err[512];
    wire_msg_t *m = wire_decode(data, len, allowed, err, sizeof err);
    if (!m) {
        snprintf(a->err, a->errlen, "a message from the coordinator that is not for this asker: %s", err);
        return -1;
    }
    int rc = 0;
    if (m->body_case == WIRE_HELLO) {
        snprintf(a->job_id, sizeof a->job_id, "%s", m->job_id);
        Plaunch__StatusRequest rq = PLAUNCH__STATUS_REQUEST__INIT;
        wire_msg_t q;
        rq.max_bytes = WIRE_MAX_STATUS;
        wire_init(&q, a->job_id, m->generation, WIRE_STATUS_REQUEST, &rq);
        rc = s_send(a, &q);
    } else if (m->body_case == WIRE_STATUS_ANSWER) {
        a->answer = malloc(m->status_answer->json.len + 1);
        if (a->answer) {
            memcpy(a->answer, m->status_answer->json.data, m->status_answer->json.len);
            a->answer[m->status_answer->json.len] = 0;
            a->len = m->status_answer->json.len;
        }
        a->done = 1;
        rc = a->answer ? 0 : -1;
        if (!a->answer)
            snprintf(a->err, a->errlen, "out of memory");
    } else if (m->body_case == WIRE_REFUSE) {
        snprintf(a->err, a->errlen, "the coordinator refused: %.900s", m->refuse->text);
        rc = -1;
    } else if (m->body_case == WIRE_REDIRECT) {
        snprintf(a->err, a->errlen, "the coordinator sent this asker to a relay (%.300s): ask the coordinator of a "
                 "job with relays from one of its nodes' log directories instead", m->redirect->endpoint);
        rc = -1;
    }
    wire_free(&m);
    return rc;
}

static int s_frame(struct ask *a, const unsigned char *data, size_t len)
{
    if (!a->ch)
        return s_message(a, data, len, WIRE_TO_STATUS);
    if (len && !(data[0] >= 0x14 && data[0] <= 0x17)) /* plaintext before any session: a REFUSE or REDIRECT */
        return s_message(a, data, len, WIRE_TO_AGENT_PLAIN);
    if (tls_chan_feed(a->ch, data, len) < 0) {
        snprintf(a->err, a->errlen, "TLS with the coordinator failed: %s (are these the job's credentials?)",
                 tls_chan_error(a->ch));
        return -1;
    }
    s_flush(a);
    void *msg;
    size_t mlen;
    int r;
    while (!a->done && (r = tls_chan_recv(a->ch, &msg, &mlen)) == 1) {
        int rc = s_message(a, msg, mlen, WIRE_TO_STATUS);
        free(msg);
        if (rc < 0)
            return -1;
    }
    if (tls_chan_state(a->ch) == TLS_CHAN_FAILED) {
        snprintf(a->err, a->errlen, "TLS with the coordinator failed: %s", tls_chan_error(a->ch));
        return -1;
    }
    return 0;
}

char *status_ask(const char *master, const struct opts *o, int timeout_ms, size_t *len, char *err, size_t errlen)
{
    char host[256], ep[300];
    int port, insecure = 0, zero = 0;
    int64_t maxmsg = TLS_CHAN_FRAME_MAX + 64;
    unsigned char rid[LINK_DIRECT_LEN + 8];
    struct ask a = { .err = err, .errlen = errlen };
    if (creds_split_master(master, host, sizeof host, &port, err, errlen) < 0)
        return NULL;
    tls_ctx_t *tls = creds_tls(o, host, host, 0, "", &insecure, err, errlen);
    if (!tls && !insecure)
        return NULL;
    snprintf(ep, sizeof ep, "tcp://%s:%d", host, port);
    memcpy(rid, LINK_DIRECT, LINK_DIRECT_LEN); /* served by the coordinator itself, never sent to a relay */
    RAND_bytes(rid + LINK_DIRECT_LEN, 8);
    for (size_t i = LINK_DIRECT_LEN; i < sizeof rid; i++)
        rid[i] = (unsigned char)('a' + rid[i] % 26);
    void *zctx = zmq_ctx_new();
    a.frame = malloc(TLS_CHAN_FRAME_MAX);
    a.sock = zctx ? zmq_socket(zctx, ZMQ_DEALER) : NULL;
    if (!a.frame || !a.sock || zmq_setsockopt(a.sock, ZMQ_ROUTING_ID, rid, sizeof rid) < 0 ||
        zmq_setsockopt(a.sock, ZMQ_LINGER, &zero, sizeof zero) < 0 ||
        zmq_setsockopt(a.sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) < 0 || zmq_connect(a.sock, ep) < 0) {
        snprintf(err, errlen, "cannot connect to the coordinator at %s: %s", ep, zmq_strerror(errno));
        goto out;
    }
    if (tls) {
        a.ch = tls_chan_new(tls);
        if (!a.ch || tls_chan_connect(a.ch) < 0) {
            snprintf(err, errlen, "TLS: %s", a.ch ? tls_chan_error(a.ch) : "out of memory");
            goto out;
        }
        tls_chan_set_max_msg(a.ch, WIRE_MAX_STATUS + 4096);
        s_flush(&a);
    } else {
        zmq_send(a.sock, "", 0, ZMQ_DONTWAIT); /* plaintext: an empty frame announces us, the coordinator speaks */
    }
    uint64_t deadline = s_now_ms() + (uint64_t)timeout_ms;
    while (!a.done) {
        uint64_t now = s_now_ms();
        if (now >= deadline) {
            snprintf(err, errlen, "no answer from the coordinator at %s within %.1f s (is the job running there, "
                     "and are these its credentials?)", master, timeout_ms / 1000.0);
            break;
        }
        zmq_pollitem_t it = { a.sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, (long)(deadline - now)) <= 0 || !(it.revents & ZMQ_POLLIN))
            continue;
        int n = zmq_recv(a.sock, a.frame, TLS_CHAN_FRAME_MAX, ZMQ_DONTWAIT);
        if (n < 0 || n > TLS_CHAN_FRAME_MAX)
            continue;
        if (s_frame(&a, a.frame, (size_t)n) < 0)
            break;
    }
    if (a.done && a.ch) { /* close politely: the coordinator forgets this session at once */
        tls_chan_close(a.ch);
        s_flush(&a);
    }
out:
    if (a.sock)
        zmq_close(a.sock);
    if (zctx)
        zmq_ctx_term(zctx);
    tls_chan_destroy(&a.ch);
    tls_ctx_destroy(&tls);
    free(a.frame);
    if (!a.done) {
        free(a.answer);
        return NULL;
    }
    *len = a.len;
    return a.answer;
}
