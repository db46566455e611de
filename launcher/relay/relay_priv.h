/* relay_priv: the relay's state, shared by relay.c (life cycle, connections, heartbeats, the coordinator's
 * messages) and the floor below it, relay_kids.c (the children's table and the relay's policy for their sessions:
 * launcher/conn/conn_session.c serves them). Not for other modules. */
#ifndef PLAUNCH_RELAY_PRIV_H
#define PLAUNCH_RELAY_PRIV_H

#include "launcher/conn/conn_guard.h"
#include "launcher/conn/conn_reader.h"
#include "launcher/conn/conn_session.h"
#include "common/wire/heartbeat.h"
#include "common/hindex.h"
#include "launcher/conn/peerlog.h"
#include "launcher/relay/relay.h"
#include "launcher/relay/relay_up.h"

#define RL_LINGER_MS 500

struct rchild {
    int used;
    struct conn_session_slot sess; /* routing id, connection, TLS session (launcher/conn/conn_session.c) */
    uint32_t handle;
    int opened;                 /* HELLO sent, OPENED queued */
    int waiting;                /* authenticated while the relay was held: HELLO at relay_release */
    int watched;                /* it has an ASSIGN: its silence is news */
    uint64_t last_ns;
};

struct relay {
    void *zctx, *router;
    conn_reader_t *reader;     /* the ROUTER's read loop: monitor, frames, closes (launcher/conn/) */
    loop_t *loop;
    tls_ctx_t *tls;
    char job_id[WIRE_MAX_JOB_ID + 1], hello_host[WIRE_MAX_HOST + 1];
    uint32_t generation;
    int max_children, hb_interval_ms, hb_timeout_ms;
    int held;                   /* struct relay_cfg's: children's HELLO waits for relay_release */
    char endpoint[WIRE_MAX_ENDPOINT + 1];
    conn_guard_t *guard;
    peerlog_t *plog;
    conn_session_t *sess;       /* the sessions' server: frames, handshakes, sessions by routing id */
    struct rchild *kids;
    int nkids, cap, live;
    hindex_t by_handle;
    int index_broken;           /* by_handle ran out of memory once: lookups scan */
    uint32_t next_handle;
    int hb_timer;
    long hb_tick_ms;
    struct heartbeat hb;        /* to each watched child, and the silence rule */
    struct relay_up up;
    long unknown;               /* handles from the coordinator that are over */
};

/* relay_kids.c */
/* The sessions' server, calling the relay's handlers (relay_kids.c) and drain (the monitor's news, relay.c's).
 * NULL + message. */
conn_session_t *relay_kids_server(relay_t *r, void (*drain)(void *arg), char *err, size_t errlen);
int relay_kids_find_handle(const relay_t *r, uint32_t handle);
int relay_kids_send(relay_t *r, struct rchild *c, const void *buf, size_t len);
/* Ends child i's session. why: CLOSED for the coordinator (NULL: nothing, it asked or knows already); say_bye: a
 * close_notify leaves first. */
void relay_kids_end(relay_t *r, int i, const char *why, int say_bye);
void relay_kids_free(relay_t *r);
/* HELLO to child i and OPENED up (once it authenticated and the relay is not held). */
void relay_kids_hello(relay_t *r, int i);

#endif
