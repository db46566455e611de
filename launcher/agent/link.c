/* link: an agent's session with a remote coordinator: a ZeroMQ DEALER carrying TLS 1.3 records (or plaintext
 * frames with --insecure), wire messages in and out, and a fresh handshake whenever the session or its connection
 * breaks. The connection of a session that was open stays up until the next session is: the coordinator takes a
 * member's closed connection for a dead agent (after a short grace), so a live one must never close it first.
 * A coordinator of many nodes may answer the ClientHello with a plaintext REDIRECT to a relay: the session is then
 * opened there (same credentials); when that one fails, the next goes back to the coordinator, asking to be served
 * directly. */
#include "launcher/agent/link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/rand.h>
#include <zmq.h>

#include "launcher/conn/conn_guard.h"
#include "common/log.h"

/* A peer that took our connection has this long to answer our ClientHello (a coordinator closes a connection that
 * has not authenticated after CONN_AUTH_MS; one that holds it longer and says nothing is no plaunch coordinator). */
#define LINK_HANDSHAKE_MS (CONN_AUTH_MS + 5000)

struct link {
    void *zctx, *sock;
    void *mon;               /* PAIR receiving sock's monitor events (its connection closed) */
    void *old_sock;          /* the socket of the last open session, closed once a new session is open */
    loop_t *loop;
    char endpoint[300];      /* the coordinator's */
    char relay[WIRE_MAX_ENDPOINT + 1]; /* the relay a REDIRECT named, for the next session; "" none */
    int at_relay;            /* the current socket is the relay's */
    int direct;              /* ask the coordinator to serve this node itself (a relay; a node its relay failed) */
    tls_ctx_t *tls;          /* NULL: plaintext */
    tls_chan_t *ch;
    int open;                /* session usable for messages */
    link_msg_fn on_msg;
    link_drop_fn on_drop;
    void *arg;
    unsigned char *frame;    /* TLS_CHAN_FRAME_MAX scratch */
    unsigned char *hello;    /* this session's ClientHello, for a relay a REDIRECT names (the same handshake goes on
                                there: TLS 1.3's first flight names no server); NULL none */
    size_t hello_len;
    tls_chan_t *keep;        /* that handshake, taken over by the next s_connect */
    int backoff_ms;          /* before the next handshake after a broken session */
    int retry_timer;
    int stopped;             /* a fatal failure: no more handshakes */
    /* the handshake deadline: armed when the connection is up, until the peer answers */
    int hs_timer;
    int answered;            /* this session's peer sent a frame */
    int zmtp_up;             /* ... finished the ZeroMQ handshake */
    int unanswered;          /* sessions in a row whose connected peer never answered */
};

/* Sends every pending TLS record as its own frame. */
static void s_flush(link_t *l)
{
    size_t n;
    while (l->ch && (n = tls_chan_pull(l->ch, l->frame, TLS_CHAN_FRAME_MAX)) > 0)
        if (zmq_send(l->sock, l->frame, n, ZMQ_DONTWAIT) < 0)
            log_debug("link: frame to %s not queued: %s", l->endpoint, zmq_strerror(errno));
}

/* Gives what sock still holds (a TLS alert, a BYE, close_notify) 200 ms to leave once it is closed; sockets are
 * made with no linger, so that a broken session never delays the next. */
static void s_linger(void *sock)
{
    int ms = 200;
    zmq_setsockopt(sock, ZMQ_LINGER, &ms, sizeof ms);
}

/* Closes sock and its monitor. */
static void s_close(link_t *l, void **sock, void **mon)
{
    if (*mon) {
        loop_remove_socket(l->loop, *mon);
        zmq_socket_monitor(*sock, NULL, 0);
        zmq_close(*mon);
        *mon = NULL;
    }
    if (*sock) {
        loop_remove_socket(l->loop, *sock);
        zmq_close(*sock);
        *sock = NULL;
    }
}

/* Opens the socket; a new socket (not just a new TLS session) so no frame of the old session reaches the
 * coordinator after the new ClientHello. */
static int s_connect(link_t *l, char *err, size_t errlen);

static int s_retry(loop_t *loop, int id, void *arg)
{
    link_t *l = arg;
    char err[256];
    l->retry_timer = 0;
    if (!l->stopped && s_connect(l, err, sizeof err) < 0)
        log_error("link: %s", err);
    return 0;
}

/* Ends the session. keep: its connection still works, and may be the one the coordinator knows us by. */
static void s_reset(link_t *l, const char *why, int keep)
{
    /* a relay that refuses our credentials may be no relay of this job: the coordinator decides */
    int fatal = l->ch && !l->open && l->tls && !l->at_relay && tls_chan_state(l->ch) == TLS_CHAN_FAILED;
    if (l->at_relay && why) /* its relay failed this node: the coordinator serves it itself */
        l->direct = 1;
    if (l->ch) {
        s_flush(l); /* the alert tells the coordinator why */
        tls_chan_destroy(&l->ch);
    }
    void *none = NULL;
    if (l->hs_timer > 0)
        loop_timer_cancel(l->loop, l->hs_timer);
    l->hs_timer = 0;
    if (keep && l->open && !l->old_sock) { /* read no more from it; close it when the next session is open */
        s_close(l, &none, &l->mon);
        loop_remove_socket(l->loop, l->sock);
        l->old_sock = l->sock;
        l->sock = NULL;
    }
    if (fatal && l->sock) /* the alert must leave: with no linger it was lost when the socket closed at once */
        s_linger(l->sock);
    s_close(l, &l->sock, &l->mon);
    l->open = 0;
    if (fatal) {
        l->stopped = 1;
    } else if (l->retry_timer <= 0) {
        /* a broken session: try again, soon at first, then at most once a second */
        l->retry_timer = loop_timer_after_ms(l->loop, l->backoff_ms, s_retry, l);
        l->backoff_ms = l->backoff_ms ? (l->backoff_ms * 2 > 1000 ? 1000 : l->backoff_ms * 2) : 50;
    }
    if (l->on_drop && why)
        l->on_drop(l->arg, why, fatal);
}

void link_reset(link_t *l, const char *why)
{
    s_reset(l, why, 1);
}

static void s_deliver(link_t *l, const void *data, size_t len)
{
    char err[512];
    wire_msg_t *m = wire_decode(data, len, WIRE_TO_AGENT, err, sizeof err);
    if (!m) {
        log_warn("link: bad message from the coordinator at %s: %s", l->endpoint, err);
        return;
    }
    int hello = m->body_case == WIRE_HELLO;
    if (hello) {
        l->open = 1;
        l->backoff_ms = 0;
        free(l->hello); /* no REDIRECT comes after a HELLO */
        l->hello = NULL;
    }
    l->on_msg(l->arg, m);
    wire_free(&m);
    if (hello && l->old_sock) { /* the new session is open and our JOIN is queued on it: the old one can go */
        void *none = NULL;
        s_close(l, &l->old_sock, &none);
    }
}

/* A plaintext answer to our ClientHello: a REDIRECT to a relay (followed at once), or a REFUSE (logged: the
 * handshake's failure then says the rest). Nothing else, and only from the coordinator before a session opened. */
static int s_on_plain(link_t *l, const unsigned char *data, size_t len)
{
    char err[256];
    if (l->at_relay || l->open || len == 0 || (data[0] >= 0x14 && data[0] <= 0x17))
        return 0; /* a TLS record */
    wire_msg_t *m = wire_decode(data, len, WIRE_TO_AGENT_PLAIN, err, sizeof err);
    if (m && m->body_case == WIRE_REDIRECT && strncmp(m->redirect->endpoint, "tcp://", 6) == 0) {
        if (!l->direct) /* a node that asks to be served directly (a relay) asks again, on a new session */
            snprintf(l->relay, sizeof l->relay, "%s", m->redirect->endpoint);
        log_debug("link: the coordinator at %s sends this node to relay %s", l->endpoint, l->relay);
        wire_free(&m);
        l->keep = l->relay[0] ? l->ch : NULL; /* its ClientHello is still good: resent to the relay */
        l->ch = l->relay[0] ? NULL : l->ch;
        s_reset(l, NULL, 0);
        if (l->retry_timer > 0) /* no back-off: this is no failure */
            loop_timer_cancel(l->loop, l->retry_timer);
        l->retry_timer = 0;
        l->backoff_ms = 0;
        if (s_connect(l, err, sizeof err) < 0)
            log_error("link: %s", err);
        return 1;
    }
    if (m && m->body_case == WIRE_REFUSE)
        log_error("the coordinator at %s refused this node: %s", l->endpoint, m->refuse->text);
    else
        log_debug("link: a plaintext frame from %s that is no REDIRECT: %s", l->endpoint, m ? "ignored" : err);
    wire_free(&m);
    return 0;
}

static void s_on_frame(link_t *l, const void *data, size_t len)
{
    l->answered = 1;
    l->unanswered = 0;
    if (!l->tls) {
        s_deliver(l, data, len);
        return;
    }
    if (!l->ch || s_on_plain(l, data, len))
        return;
    if (tls_chan_feed(l->ch, data, len) < 0) {
        char why[512];
        snprintf(why, sizeof why, "TLS with the coordinator at %s failed: %s", l->endpoint, tls_chan_error(l->ch));
        link_reset(l, why);
        return;
    }
    s_flush(l);
    void *msg;
    size_t mlen;
    int r;
    while (l->ch && (r = tls_chan_recv(l->ch, &msg, &mlen)) == 1) {
        s_deliver(l, msg, mlen);
        free(msg);
    }
    if (l->ch && tls_chan_state(l->ch) == TLS_CHAN_FAILED) {
        char why[512];
        snprintf(why, sizeof why, "TLS session with %s failed: %s", l->endpoint, tls_chan_error(l->ch));
        link_reset(l, why);
    }
}

static int s_on_readable(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    link_t *l = arg;
    for (int budget = 0; budget < 256 && l->sock && l->sock == sock; budget++) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, l->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            return 0;
        }
        if (zmq_msg_size(&msg) <= TLS_CHAN_FRAME_MAX && !zmq_msg_more(&msg))
            s_on_frame(l, zmq_msg_data(&msg), zmq_msg_size(&msg));
        zmq_msg_close(&msg);
    }
    return 0;
}

/* The handshake deadline passed with no word from a peer that took our connection: a new session (the caller's
 * --rdzv-timeout ends the waiting; link_no_answer_hint tells it why). */
static int s_handshake_due(loop_t *loop, int id, void *arg)
{
    link_t *l = arg;
    char why[600];
    l->hs_timer = 0;
    if (l->open || l->answered || !l->sock)
        return 0;
    l->unanswered++;
    snprintf(why, sizeof why, "the peer at %s took the connection but %s within %d s: it does not answer as a "
             "plaunch coordinator (another program on that port, or a firewall that holds connections?)",
             l->at_relay ? "the relay's address" : l->endpoint,
             l->zmtp_up ? "gave no answer to our TLS ClientHello" : "never finished the ZeroMQ handshake",
             LINK_HANDSHAKE_MS / 1000);
    s_reset(l, why, 0);
    return 0;
}

/* The TCP connection of the current socket is up: its peer has LINK_HANDSHAKE_MS to answer. */
static void s_connected(link_t *l)
{
    if (!l->tls || l->open || l->answered)
        return;
    if (l->hs_timer > 0)
        loop_timer_cancel(l->loop, l->hs_timer);
    l->hs_timer = loop_timer_after_ms(l->loop, LINK_HANDSHAKE_MS, s_handshake_due, l);
}

/* The connection of the current socket closed (the coordinator closed it, or died): a new session, at once. */
static int s_on_monitor(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    link_t *l = arg;
    int closed = 0;
    for (;;) {
        zmq_msg_t ev;
        zmq_msg_init(&ev);
        if (!l->mon || zmq_msg_recv(&ev, l->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            break;
        }
        uint16_t event = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&event, zmq_msg_data(&ev), 2);
        closed |= event == ZMQ_EVENT_DISCONNECTED;
        if (event == ZMQ_EVENT_CONNECTED)
            s_connected(l);
        l->zmtp_up |= event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
        int more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) { /* the event's address frame */
            zmq_msg_init(&ev);
            zmq_msg_recv(&ev, l->mon, ZMQ_DONTWAIT);
            zmq_msg_close(&ev);
        }
    }
    if (closed && l->sock) {
        char why[400];
        s_on_readable(loop, -1, l->sock, 0, l); /* what arrived before the close (a relay's BYE) comes first */
        if (!l->sock)
            return 0;
        snprintf(why, sizeof why, "the connection to the coordinator at %s closed", l->endpoint);
        s_reset(l, why, 0);
    }
    return 0;
}

/* A routing id the coordinator reads as "serve me directly": the prefix and random bytes (unique per socket). */
static int s_ask_direct(void *sock)
{
    unsigned char rid[LINK_DIRECT_LEN + 8];
    memcpy(rid, LINK_DIRECT, LINK_DIRECT_LEN);
    if (RAND_bytes(rid + LINK_DIRECT_LEN, 8) != 1)
        return -1;
    for (size_t i = LINK_DIRECT_LEN; i < sizeof rid; i++)
        rid[i] = (unsigned char)('a' + rid[i] % 26); /* never a zero byte: those ids are libzmq's own */
    return zmq_setsockopt(sock, ZMQ_ROUTING_ID, rid, sizeof rid);
}

static int s_connect(link_t *l, char *err, size_t errlen)
{
    static unsigned seq;
    char mon_ep[96];
    s_close(l, &l->sock, &l->mon);
    /* Nodes started together (srun, a Job's pods) often come up before the coordinator listens: the first retry
     * after 10 ms, doubling up to 1 s, so they join within milliseconds of its start (100 ms cost 0.1 s here). */
    int zero = 0, ivl = 10, ivl_max = 1000;
    int64_t maxmsg = TLS_CHAN_FRAME_MAX + 64;
    /* atomic: the agent simulator runs links on several threads of one process */
    snprintf(mon_ep, sizeof mon_ep, "inproc://plaunch-link-monitor-%u",
             __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
    l->at_relay = l->relay[0] != '\0';
    const char *to = l->at_relay ? l->relay : l->endpoint;
    l->sock = zmq_socket(l->zctx, ZMQ_DEALER);
    if (!l->sock || (!l->at_relay && l->direct && s_ask_direct(l->sock) < 0) ||
        zmq_setsockopt(l->sock, ZMQ_LINGER, &zero, sizeof zero) < 0 ||
        zmq_setsockopt(l->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl) < 0 ||
        zmq_setsockopt(l->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max) < 0 ||
        zmq_setsockopt(l->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) < 0 ||
        zmq_setsockopt(l->sock, ZMQ_SNDHWM, &zero, sizeof zero) < 0 || /* a refused frame: a broken TLS session */
        zmq_socket_monitor(l->sock, mon_ep,
                           ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED) < 0 || !(l->mon = zmq_socket(l->zctx, ZMQ_PAIR)) ||
        zmq_connect(l->mon, mon_ep) < 0 || zmq_connect(l->sock, to) < 0) {
        snprintf(err, errlen, "cannot connect to the %s at %s: %s", l->at_relay ? "relay" : "coordinator", to,
                 zmq_strerror(errno));
        l->relay[0] = '\0';
        return -1;
    }
    l->relay[0] = '\0'; /* one session there: if it breaks, the next starts at the coordinator */
    l->answered = l->zmtp_up = 0;
    if (loop_add_socket(l->loop, l->sock, ZMQ_POLLIN, s_on_readable, l) < 0 ||
        loop_add_socket(l->loop, l->mon, ZMQ_POLLIN, s_on_monitor, l) < 0) {
        snprintf(err, errlen, "event loop: %s", strerror(errno));
        return -1;
    }
    if (!l->tls) {
        /* Plaintext: the coordinator speaks first once it sees us; an empty frame announces us. */
        zmq_send(l->sock, "", 0, ZMQ_DONTWAIT);
        return 0;
    }
    if (l->keep && l->hello) { /* a REDIRECT: the handshake that began at the coordinator goes on at the relay */
        l->ch = l->keep;
        l->keep = NULL;
        zmq_send(l->sock, l->hello, l->hello_len, ZMQ_DONTWAIT);
        return 0;
    }
    tls_chan_destroy(&l->keep);
    l->ch = tls_chan_new(l->tls);
    if (!l->ch || tls_chan_connect(l->ch) < 0) {
        snprintf(err, errlen, "TLS: %s", l->ch ? tls_chan_error(l->ch) : "out of memory");
        return -1;
    }
    size_t n = tls_chan_pull(l->ch, l->frame, TLS_CHAN_FRAME_MAX);
    free(l->hello);
    l->hello = n && !l->direct ? malloc(n) : NULL; /* kept while a REDIRECT may come */
    l->hello_len = l->hello ? n : 0;
    if (l->hello)
        memcpy(l->hello, l->frame, n);
    if (n && zmq_send(l->sock, l->frame, n, ZMQ_DONTWAIT) < 0)
        log_debug("link: frame to %s not queued: %s", to, zmq_strerror(errno));
    s_flush(l);
    return 0;
}

link_t *link_new(void *zctx, loop_t *loop, const char *endpoint, tls_ctx_t *tls, const struct link_first *first,
                 link_msg_fn on_msg, link_drop_fn on_drop, void *arg, char *err, size_t errlen)
{
    link_t *l = calloc(1, sizeof *l);
    if (!l || !(l->frame = malloc(TLS_CHAN_FRAME_MAX))) {
        free(l);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->zctx = zctx;
    l->loop = loop;
    l->tls = tls;
    l->on_msg = on_msg;
    l->on_drop = on_drop;
    l->arg = arg;
    snprintf(l->endpoint, sizeof l->endpoint, "%s", endpoint);
    l->direct = first && first->direct;
    if (first && first->relay && first->relay[0] && tls) /* its first session at the layout's relay */
        snprintf(l->relay, sizeof l->relay, "%s", first->relay);
    if (s_connect(l, err, errlen) < 0) {
        link_destroy(&l);
        return NULL;
    }
    return l;
}

void link_destroy(link_t **pl)
{
    if (!pl || !*pl)
        return;
    link_t *l = *pl;
    if (l->ch) {
        tls_chan_close(l->ch);
        s_flush(l);
        tls_chan_destroy(&l->ch);
    }
    if (l->retry_timer > 0)
        loop_timer_cancel(l->loop, l->retry_timer);
    if (l->hs_timer > 0)
        loop_timer_cancel(l->loop, l->hs_timer);
    if (l->sock) /* let a last BYE and close_notify leave */
        s_linger(l->sock);
    void *none = NULL;
    s_close(l, &l->sock, &l->mon);
    s_close(l, &l->old_sock, &none);
    tls_chan_destroy(&l->keep);
    free(l->hello);
    free(l->frame);
    free(l);
    *pl = NULL;
}

int link_send(link_t *l, const wire_msg_t *m)
{
    char err[256];
    size_t len;
    if (!l->open || (l->tls && (!l->ch || tls_chan_state(l->ch) != TLS_CHAN_OPEN))) { /* closed by the peer too */
        errno = ENOTCONN;
        return -1;
    }
    void *buf = wire_encode_alloc(m, &len, err, sizeof err);
    if (!buf) {
        log_error("link: cannot encode %s: %s", wire_type_name(m->body_case), err);
        errno = EBADMSG; /* not a session problem: the sender must not wait for an answer */
        return -1;
    }
    int rc = 0;
    if (!l->tls) {
        rc = zmq_send(l->sock, buf, len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
    } else if (tls_chan_send(l->ch, buf, len) < 0) {
        log_error("link: %s", tls_chan_error(l->ch));
        rc = -1;
    } else {
        s_flush(l);
    }
    free(buf);
    return rc;
}

int link_is_open(const link_t *l)
{
    return l->open;
}

const char *link_no_answer_hint(const link_t *l)
{
    if (l && l->unanswered)
        return "the peer there took every connection but answered no TLS handshake: no plaunch coordinator listens "
               "there; check --master (its host and port) and that plaunch runs on that node";
    return "is plaunch running there, with the same credentials, and is the port reachable?";
}

int link_at_relay(const link_t *l)
{
    return l->sock && l->at_relay;
}

void link_set_direct(link_t *l, int on)
{
    l->direct = on;
}
