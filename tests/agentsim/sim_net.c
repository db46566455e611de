/* sim_net: one simulator thread: an epoll loop over its agents' ZeroMQ sockets (their ZMQ_FD), each agent's DEALER
 * carrying its TLS 1.3 session one record batch per frame, as the real agent's link does, and a fresh socket and
 * session with the link's back-off whenever the connection closes. */
#include "tests/agentsim/sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <zmq.h>

#include "launcher/agent/link.h"

#define SN_EVENTS 256
/* New sessions a thread opens per tick: what its first agents receive (REDIRECTs, handshakes) is read in between,
 * as on nodes that start together, instead of after thousands of sockets were made (3.6 s at 4,096 nodes). */
#define SN_OPENS_PER_TICK 32

static int s_fd_of(void *sock)
{
    int fd = -1;
    size_t len = sizeof fd;
    return zmq_getsockopt(sock, ZMQ_FD, &fd, &len) == 0 ? fd : -1;
}

static void s_unwatch(struct sim_agent *a, void **sock)
{
    if (!*sock)
        return;
    int fd = s_fd_of(*sock);
    if (fd >= 0)
        epoll_ctl(a->th->epfd, EPOLL_CTL_DEL, fd, NULL);
    zmq_close(*sock);
    *sock = NULL;
}

static int s_watch(struct sim_agent *a, void *sock, int is_mon)
{
    struct epoll_event ev = { .events = EPOLLIN };
    int fd = s_fd_of(sock);
    ev.data.u64 = (uint64_t)(a - a->th->agents) << 1 | (uint64_t)is_mon;
    return fd >= 0 ? epoll_ctl(a->th->epfd, EPOLL_CTL_ADD, fd, &ev) : -1;
}

/* Sends every pending TLS record; a frame per pull, like the real link. */
static void s_flush(struct sim_agent *a)
{
    size_t n;
    while (a->ch && a->sock && (n = tls_chan_pull(a->ch, a->th->frame, TLS_CHAN_FRAME_MAX)) > 0)
        if (zmq_send(a->sock, a->th->frame, n, ZMQ_DONTWAIT) < 0)
            atomic_fetch_add(&a->th->run->drops, 1);
}

static void s_set_state(struct sim_agent *a, enum sim_state st)
{
    a->th->handshaking += (st == SA_HANDSHAKE) - (a->st == SA_HANDSHAKE);
    a->st = st;
}

void sim_net_reset(struct sim_agent *a, int retry)
{
    if (a->host) { /* its link starts over by itself */
        a->open = retry ? a->open : 0;
        return;
    }
    if (a->at_relay && retry && !a->relay_ep[0]) /* its relay failed it: the coordinator serves it itself */
        a->direct = 1;
    if (a->ch) {
        s_flush(a);
        tls_chan_destroy(&a->ch);
    }
    if (a->mon)
        zmq_socket_monitor(a->sock, NULL, 0);
    s_unwatch(a, &a->mon);
    s_unwatch(a, &a->sock);
    a->open = 0;
    if (!retry) {
        tls_chan_destroy(&a->keep);
        free(a->hello);
        a->hello = NULL;
        return;
    }
    if (a->st == SA_HANDSHAKE || a->st == SA_JOINING)
        s_set_state(a, SA_WAIT);
    if (a->relay_ep[0]) { /* a REDIRECT: at once, no failure */
        a->retry_at = 0;
        return;
    }
    a->retry_at = sim_now_ns() + (uint64_t)a->backoff_ms * 1000000u;
    a->backoff_ms = a->backoff_ms ? (a->backoff_ms * 2 > 1000 ? 1000 : a->backoff_ms * 2) : 50;
}

/* The routing id that asks the coordinator to serve this agent itself (link.c's). */
static int s_ask_direct(struct sim_agent *a)
{
    char rid[LINK_DIRECT_LEN + 9];
    snprintf(rid, sizeof rid, "%s%08x", LINK_DIRECT, (unsigned)(a->idx * 2654435761u) ^ (unsigned)a->sessions);
    return zmq_setsockopt(a->sock, ZMQ_ROUTING_ID, rid, LINK_DIRECT_LEN + 8);
}

static void s_drain(struct sim_agent *a);
static void s_on_monitor(struct sim_agent *a);

/* A new socket and session (the real link never reuses a socket across sessions either). */
static int s_connect(struct sim_agent *a)
{
    struct sim_run *run = a->th->run;
    char mon_ep[96];
    int zero = 0, ivl = 10, ivl_max = 1000;
    int64_t maxmsg = TLS_CHAN_FRAME_MAX + 64;
    char ep[sizeof a->endpoint + WIRE_MAX_ENDPOINT];
    snprintf(mon_ep, sizeof mon_ep, "inproc://agentsim-%d-%d", a->idx, ++a->sessions);
    a->at_relay = a->relay_ep[0] != '\0';
    if (a->at_relay) /* from its own address, to the relay's */
        snprintf(ep, sizeof ep, "tcp://%s:0;%s", a->addr, a->relay_ep + strlen("tcp://"));
    else
        snprintf(ep, sizeof ep, "%s", a->endpoint);
    a->relay_ep[0] = '\0';
    a->sock = zmq_socket(run->zctx, ZMQ_DEALER);
    if (!a->sock || (a->direct && !a->at_relay && s_ask_direct(a) < 0) ||
        zmq_setsockopt(a->sock, ZMQ_LINGER, &zero, sizeof zero) < 0 ||
        zmq_setsockopt(a->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl) < 0 ||
        zmq_setsockopt(a->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max) < 0 ||
        zmq_setsockopt(a->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) < 0 ||
        zmq_setsockopt(a->sock, ZMQ_SNDHWM, &zero, sizeof zero) < 0 ||
        zmq_socket_monitor(a->sock, mon_ep, ZMQ_EVENT_DISCONNECTED) < 0 ||
        !(a->mon = zmq_socket(run->zctx, ZMQ_PAIR)) || zmq_connect(a->mon, mon_ep) < 0 ||
        zmq_connect(a->sock, ep) < 0 || s_watch(a, a->sock, 0) < 0 || s_watch(a, a->mon, 1) < 0) {
        sim_log(run, "agent %d: cannot connect to %s: %s (raise the descriptor limit?)", a->idx, run->o->endpoint,
                zmq_strerror(errno));
        sim_net_reset(a, 1);
        return -1;
    }
    s_set_state(a, SA_HANDSHAKE);
    if (a->keep && a->hello) { /* the handshake begun at the coordinator goes on at the relay */
        a->ch = a->keep;
        a->keep = NULL;
        if (zmq_send(a->sock, a->hello, a->hello_len, ZMQ_DONTWAIT) < 0)
            atomic_fetch_add(&run->drops, 1);
    } else {
        tls_chan_destroy(&a->keep);
        a->ch = tls_chan_new(run->tls);
        if (!a->ch || tls_chan_connect(a->ch) < 0) {
            sim_log(run, "agent %d: TLS: %s", a->idx, a->ch ? tls_chan_error(a->ch) : "out of memory");
            sim_net_reset(a, 1);
            return -1;
        }
        size_t n = tls_chan_pull(a->ch, a->th->frame, TLS_CHAN_FRAME_MAX);
        free(a->hello);
        a->hello = n && !a->direct ? malloc(n) : NULL;
        a->hello_len = a->hello ? n : 0;
        if (a->hello)
            memcpy(a->hello, a->th->frame, n);
        if (n && zmq_send(a->sock, a->th->frame, n, ZMQ_DONTWAIT) < 0)
            atomic_fetch_add(&run->drops, 1);
    }
    s_flush(a);
    /* ZMQ_FD signals only a change after a read found nothing: read both sockets once so that it will */
    s_drain(a);
    s_on_monitor(a);
    return 0;
}

static void s_deliver(struct sim_agent *a, const void *data, size_t len)
{
    char err[512];
    wire_msg_t *m = wire_decode(data, len, WIRE_TO_AGENT, err, sizeof err);
    if (!m) {
        sim_log(a->th->run, "agent %d: bad message from the coordinator: %s", a->idx, err);
        a->errors++;
        return;
    }
    if (m->body_case == WIRE_HELLO) {
        free(a->hello); /* no REDIRECT after a HELLO */
        a->hello = NULL;
        a->open = 1;
        a->backoff_ms = 0;
        if (a->st == SA_HANDSHAKE)
            s_set_state(a, SA_JOINING);
    }
    sim_agent_on_msg(a, m);
    wire_free(&m);
}

/* A plaintext answer to the ClientHello: a REDIRECT, followed at once, as the real link does. */
static int s_on_plain(struct sim_agent *a, const unsigned char *data, size_t len)
{
    char err[256];
    if (a->at_relay || a->open || len == 0 || (data[0] >= 0x14 && data[0] <= 0x17))
        return 0;
    wire_msg_t *m = wire_decode(data, len, WIRE_TO_AGENT_PLAIN, err, sizeof err);
    int redirect = m && m->body_case == WIRE_REDIRECT && strncmp(m->redirect->endpoint, "tcp://", 6) == 0;
    if (redirect) { /* a new socket (a DEALER that disconnects may still send on the old pipe), the same handshake */
        if (!a->direct) { /* one that asks to be served directly asks again, on a new session */
            snprintf(a->relay_ep, sizeof a->relay_ep, "%s", m->redirect->endpoint);
            a->redirected = 1;
            a->keep = a->ch; /* its ClientHello is still good there */
            a->ch = NULL;
        }
        sim_net_reset(a, 1);
    } else {
        sim_log(a->th->run, "agent %d: a plaintext frame from the coordinator: %s", a->idx,
                m ? wire_type_name(m->body_case) : err);
    }
    wire_free(&m);
    return redirect;
}

static void s_on_frame(struct sim_agent *a, const void *data, size_t len)
{
    if (!a->ch || s_on_plain(a, data, len))
        return;
    if (tls_chan_feed(a->ch, data, len) < 0) {
        sim_log(a->th->run, "agent %d: TLS with the coordinator failed: %s", a->idx, tls_chan_error(a->ch));
        sim_net_reset(a, 1);
        return;
    }
    s_flush(a);
    void *msg;
    size_t mlen;
    while (a->ch && tls_chan_recv(a->ch, &msg, &mlen) == 1) {
        s_deliver(a, msg, mlen);
        free(msg);
    }
    if (a->ch && tls_chan_state(a->ch) == TLS_CHAN_FAILED) {
        sim_log(a->th->run, "agent %d: TLS session failed: %s", a->idx, tls_chan_error(a->ch));
        sim_net_reset(a, 1);
    }
}

/* Takes every frame waiting on a's socket. Called on its descriptor's wake-up and after every send: ZMQ_FD only
 * says that something changed, and a send may consume the notice of frames that arrived meanwhile, so the socket
 * is read until it says EAGAIN (the coordinator sends a few frames per agent; it cannot starve the others). */
static void s_drain(struct sim_agent *a)
{
    if (a->in_drain)
        return;
    a->in_drain = 1;
    while (a->sock) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, a->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        if (zmq_msg_size(&msg) <= TLS_CHAN_FRAME_MAX && !zmq_msg_more(&msg))
            s_on_frame(a, zmq_msg_data(&msg), zmq_msg_size(&msg));
        zmq_msg_close(&msg);
    }
    a->in_drain = 0;
}

/* The monitor: the DEALER's connection closed (the coordinator closed it, or a limit of its did). */
static void s_on_monitor(struct sim_agent *a)
{
    int closed = 0;
    while (a->mon) {
        zmq_msg_t ev;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, a->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            break;
        }
        uint16_t event = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&event, zmq_msg_data(&ev), 2);
        closed |= event == ZMQ_EVENT_DISCONNECTED;
        int more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) {
            zmq_msg_init(&ev);
            zmq_msg_recv(&ev, a->mon, ZMQ_DONTWAIT);
            zmq_msg_close(&ev);
        }
    }
    if (closed)
        s_drain(a); /* what arrived before the close (a relay's BYE) comes first */
    if (closed && a->sock && a->st != SA_DONE && a->st != SA_FAILED)
        sim_net_reset(a, 1);
}

int sim_net_send(struct sim_agent *a, const wire_msg_t *m)
{
    unsigned char buf[8192];
    char err[256];
    if (a->host)
        return a->open ? sim_host_send(a, m) : -1;
    if (!a->open || !a->ch)
        return -1;
    ssize_t n = wire_encode(m, buf, sizeof buf, err, sizeof err);
    if (n < 0) {
        sim_log(a->th->run, "agent %d: cannot encode %s: %s", a->idx, wire_type_name(m->body_case), err);
        a->errors++;
        return -1;
    }
    if (tls_chan_send(a->ch, buf, (size_t)n) < 0) {
        sim_log(a->th->run, "agent %d: %s", a->idx, tls_chan_error(a->ch));
        return -1;
    }
    s_flush(a);
    s_drain(a);
    return 0;
}

/* Every SIM_TICK_MS: sessions to (re)start within the window, then each agent's own deadlines. */
static void s_tick(struct sim_thread *th, uint64_t now)
{
    const struct sim_opts *o = th->run->o;
    int phase = atomic_load(&th->run->phase), opens = 0;
    int window = o->window > 0 ? (o->window + o->threads - 1) / o->threads : 0;
    for (int i = 0; i < th->n; i++) {
        struct sim_agent *a = &th->agents[i];
        if (a->host || phase == SIM_HOSTS)
            continue; /* a relay runs on a thread of its own; the others wait for 'G' */
        if (phase == SIM_QUIT) {
            sim_net_reset(a, 0);
            continue;
        }
        if (a->st == SA_WAIT && !a->sock && a->retry_at <= now && (!window || th->handshaking < window) &&
            opens++ < SN_OPENS_PER_TICK)
            s_connect(a);
        else if (a->sock)
            sim_agent_tick(a, now);
    }
}

void *sim_net_thread(void *arg)
{
    struct sim_thread *th = arg;
    struct epoll_event evs[SN_EVENTS];
    uint64_t next = sim_now_ns();
    while (atomic_load(&th->run->phase) != SIM_QUIT) {
        uint64_t now = sim_now_ns();
        if (now >= next) {
            s_tick(th, now);
            next = now + SIM_TICK_MS * 1000000ull;
        }
        int ms = (int)((next - now + 999999) / 1000000);
        int n = epoll_wait(th->epfd, evs, SN_EVENTS, ms);
        for (int i = 0; i < n; i++) {
            struct sim_agent *a = &th->agents[evs[i].data.u64 >> 1];
            if (evs[i].data.u64 & 1)
                s_on_monitor(a);
            else
                s_drain(a);
        }
    }
    s_tick(th, sim_now_ns()); /* closes every socket */
    return NULL;
}
