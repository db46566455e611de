/* relay_priv: the relay's state, shared by relay.c (life cycle, connections, heartbeats, the coordinator's
 * messages) and the floor below it, relay_kids.c (the children's sessions and frames). Not for other modules. */
#ifndef PLAUNCH_RELAY_PRIV_H
#define PLAUNCH_RELAY_PRIV_H

#include "conn_guard.h"
#include "heartbeat.h"
#include "hindex.h"
#include "peerlog.h"
#include "relay.h"
#include "relay_up.h"

#define RL_MAX_RID 256
#define RL_GONE_MAX 64
#define RL_LINGER_MS 500

struct rchild {
    int used;
    unsigned char rid[RL_MAX_RID];
    size_t rid_len;
    int fd;
    uint32_t handle;
    tls_chan_t *ch;
    int opened;                 /* HELLO sent, OPENED queued */
    int watched;                /* it has an ASSIGN: its silence is news */
    uint64_t last_ns;
};

struct relay {
    void *zctx, *router, *monitor;
    loop_t *loop;
    tls_ctx_t *tls;
    char job_id[WIRE_MAX_JOB_ID + 1], hello_host[WIRE_MAX_HOST + 1];
    uint32_t generation;
    int max_children, hb_interval_ms, hb_timeout_ms;
    char endpoint[WIRE_MAX_ENDPOINT + 1];
    conn_guard_t *guard;
    peerlog_t *plog;
    struct rchild *kids;
    int nkids, cap, live;
    hindex_t by_rid, by_handle;
    int index_broken;
    uint32_t next_handle;
    int hb_timer;
    long hb_tick_ms;
    struct heartbeat hb;        /* to each watched child, and the silence rule */
    unsigned char *frame;
    struct relay_up up;
    int gone[RL_GONE_MAX], ngone;
    long unknown;               /* handles from the coordinator that are over */
};

/* relay_kids.c */
int relay_kids_find_handle(const relay_t *r, uint32_t handle);
/* Every pending TLS record of child c, one frame each. */
void relay_kids_flush(relay_t *r, struct rchild *c);
int relay_kids_send(relay_t *r, struct rchild *c, const void *buf, size_t len);
/* Ends child i's session. why: CLOSED for the coordinator (NULL: nothing, it asked or knows already); say_bye: a
 * close_notify leaves first. */
void relay_kids_end(relay_t *r, int i, const char *why, int say_bye);
/* A frame from routing id rid on connection fd (ZMQ_SRCFD): its session's, or a new session's ClientHello. */
void relay_kids_frame(relay_t *r, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len);
void relay_kids_free(relay_t *r);

#endif
