/* conn_reader: one read loop for the ROUTERs of the coordinator and the relays (conn_reader.h says the order). */
#include "launcher/conn/conn_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "launcher/conn/conn_router.h"
#include "launcher/conn/conn_session.h"
#include "common/tls/tls_chan.h"
#include "common/zrouter.h"

struct gone {
    int fd, zmtp_failed;
    unsigned zmtp_error;
};

struct conn_reader {
    loop_t *loop;
    void *router, *monitor;
    conn_guard_t *guard;
    struct conn_reader_ops ops;
    void *arg;
    int zmtp_failed;        /* the monitor reported a failed ZeroMQ handshake: its DISCONNECTED comes next */
    unsigned zmtp_error;
    struct gone gone[CONN_READER_GONE_MAX];
    int ngone;
    const struct gone *ending; /* the close conn_guard_gone is ending now (conn_reader_zmtp_failed) */
};

/* Ends the held closes. A copy: an end's callback may drain the monitor again. */
static void s_settle(conn_reader_t *r)
{
    struct gone gone[CONN_READER_GONE_MAX];
    int n = r->ngone;
    memcpy(gone, r->gone, (size_t)n * sizeof *gone);
    r->ngone = 0;
    for (int i = 0; i < n; i++) {
        r->ending = &gone[i];
        conn_guard_gone(r->guard, gone[i].fd);
    }
    r->ending = NULL;
}

void conn_reader_drain(conn_reader_t *r)
{
    uint16_t event;
    uint32_t value;
    while (conn_router_event(r->monitor, &event, &value)) {
        if (event == ZMQ_EVENT_ACCEPTED) {
            for (int i = 0; i < r->ngone; i++)
                if (r->gone[i].fd == (int)value) { /* its descriptor was a closed one's: that one ends first */
                    s_settle(r);
                    break;
                }
            conn_guard_accepted(r->guard, (int)value);
            if (r->ops.accepted)
                r->ops.accepted(r->arg, (int)value);
        } else if (event == ZMQ_EVENT_DISCONNECTED) {
            if (r->ngone == CONN_READER_GONE_MAX)
                s_settle(r);
            r->gone[r->ngone++] = (struct gone){ (int)value, r->zmtp_failed, r->zmtp_error };
            r->zmtp_failed = 0;
        } else if (event & (ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)) {
            r->zmtp_failed = 1; /* the connection's DISCONNECTED comes next: it names the descriptor */
            r->zmtp_error = value;
        } else if (event == ZMQ_EVENT_ACCEPT_FAILED && (value == EMFILE || value == ENFILE)) {
            conn_guard_out_of_fds(r->guard); /* libzmq retries accept(2) at once: make room */
        }
    }
}

void conn_reader_read(conn_reader_t *r)
{
    conn_reader_drain(r); /* connections first: a frame's connection is then known */
    for (int budget = 0; budget < CONN_READER_BUDGET; budget++) {
        zmq_msg_t rid, body;
        int ok = zrouter_recv(r->router, &rid, &body);
        if (ok < 0) {
            zmq_msg_close(&rid);
            zmq_msg_close(&body);
            s_settle(r); /* every frame of the closed connections has been read */
            break;
        }
        /* The descriptor the frame came on (ZMQ_SRCFD): the key to its connection, whose address it gives. */
        int cfd = ok ? zmq_msg_get(&body, ZMQ_SRCFD) : -1;
        size_t rl = zmq_msg_size(&rid), bl = zmq_msg_size(&body);
        if (ok && cfd >= 0 && rl <= CONN_MAX_RID && bl <= TLS_CHAN_FRAME_MAX)
            r->ops.frame(r->arg, cfd, zmq_msg_data(&rid), rl, zmq_msg_data(&body), bl);
        zmq_msg_close(&rid);
        zmq_msg_close(&body);
    }
    if (r->ops.after)
        r->ops.after(r->arg);
}

int conn_reader_zmtp_failed(const conn_reader_t *r, unsigned *error)
{
    if (!r || !r->ending || !r->ending->zmtp_failed)
        return 0;
    *error = r->ending->zmtp_error;
    return 1;
}

static int s_on_socket(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    conn_reader_read(arg); /* the monitor's and the ROUTER's alike: connections and frames in their order */
    return 0;
}

conn_reader_t *conn_reader_new(void *zctx, loop_t *loop, void *router, conn_guard_t *guard,
                               const struct conn_reader_ops *ops, void *arg, char *err, size_t errlen)
{
    static unsigned seq; /* readers on several threads (relays in the simulator): atomic */
    char ep[64];
    int zero = 0;
    conn_reader_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *r = (struct conn_reader){ .loop = loop, .router = router, .guard = guard, .ops = *ops, .arg = arg };
    snprintf(ep, sizeof ep, "inproc://plaunch-conn-monitor-%u", __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
    if (zmq_socket_monitor(router, ep, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_ACCEPT_FAILED |
                                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) < 0 ||
        !(r->monitor = zmq_socket(zctx, ZMQ_PAIR)) ||
        zmq_setsockopt(r->monitor, ZMQ_RCVHWM, &zero, sizeof zero) < 0 || /* a lost event would be a lost close */
        zmq_connect(r->monitor, ep) < 0) {
        snprintf(err, errlen, "socket monitor: %s", zmq_strerror(errno));
        conn_reader_destroy(&r);
        return NULL;
    }
    if (loop_add_socket(loop, r->monitor, ZMQ_POLLIN, s_on_socket, r) < 0 ||
        loop_add_socket(loop, router, ZMQ_POLLIN, s_on_socket, r) < 0) {
        snprintf(err, errlen, "event loop: %s", strerror(errno));
        conn_reader_destroy(&r);
        return NULL;
    }
    return r;
}

void conn_reader_destroy(conn_reader_t **pr)
{
    conn_reader_t *r = pr ? *pr : NULL;
    if (!r)
        return;
    *pr = NULL;
    loop_remove_socket(r->loop, r->router);
    if (r->monitor) {
        loop_remove_socket(r->loop, r->monitor);
        zmq_socket_monitor(r->router, NULL, 0);
        zmq_close(r->monitor);
    }
    free(r);
}
