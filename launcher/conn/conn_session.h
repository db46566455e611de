/* conn_session: the server side of TLS 1.3 sessions over a ROUTER that takes unauthenticated peers (the
 * coordinator's, a relay's), with one set of rules for a peer that has not authenticated. A frame from a routing id
 * without a session is judged here: on a refused or closing connection it is a flood (dropped and counted); a
 * ClientHello opens a session within the cap of handshakes under way; a TLS record of a session that is over is
 * counted silently; anything else is a plaintext client, told so in plaintext (REFUSE) with a bounded warning. A
 * session's frames are fed to its channel and the answer sent as frames; a finished handshake trusts the connection,
 * a failed one is a bounded warning, a ClientHello on a routing id that has a session starts over. Sessions are
 * found by routing id through an index this module keeps.
 *
 * The owner keeps its entries (each embeds a struct conn_session_slot, found by its number through ops->slot) and
 * its policy: it is called through struct conn_session_ops, registered once, never by name. A handler may end any
 * session, the current one included; it must not destroy the server. Libraries never log: warnings go through the
 * owner's peerlog. */
#ifndef PLAUNCH_CONN_SESSION_H
#define PLAUNCH_CONN_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/conn/conn_guard.h"
#include "launcher/conn/peerlog.h"
#include "common/tls/tls_chan.h"

#define CONN_MAX_RID 256 /* longest routing id kept; a frame with a longer one is not read */

/* What the server knows of one session; embedded in the owner's entry. */
struct conn_session_slot {
    unsigned char rid[CONN_MAX_RID];
    size_t rid_len; /* 0: none (a session that broke: frames on its old routing id belong to no session) */
    int fd;         /* its connection (ZMQ_SRCFD; tagged with the slot's number in conn_guard); -1 none */
    tls_chan_t *ch; /* its TLS session; NULL none (plaintext, broken) */
};

/* The owner's handlers. Required unless marked optional. */
struct conn_session_ops {
    /* Entry `slot`'s session, or NULL when that number is no session of this server (out of range, free). */
    struct conn_session_slot *(*slot)(void *arg, int slot);
    /* Numbers 0..n-1 may be entries: scanned when the index ran out of memory. */
    int (*nslots)(void *arg);
    /* A new entry for a ClientHello on fd with routing id rid: its number with rid, rid_len and fd filled in and
     * no channel, or -1 (out of memory). The server then gives it its channel and indexes it. */
    int (*open)(void *arg, int fd, const unsigned char *rid, size_t rid_len);
    /* Frees an entry whose session never answered (its connection is over, or its channel could not be made). */
    void (*release)(void *arg, int slot);
    /* A ClientHello on slot's routing id: the peer starts over. The owner ends or detaches the entry (its rid must
     * no longer match); the new session is then opened as any other. */
    void (*restart)(void *arg, int slot);
    /* The handshake finished: the peer is authenticated (its connection is trusted already). */
    void (*ready)(void *arg, int slot);
    /* One whole message: decrypted, or in plaintext mode the frame itself (borrowed for the call). */
    void (*message)(void *arg, int slot, const void *msg, size_t len);
    /* The session failed: in its handshake (handshake 1; the bounded warning is given already) or later. why is the
     * channel's reason, valid until the entry's channel is destroyed. The owner ends or detaches the entry. */
    void (*failed)(void *arg, int slot, int handshake, const char *why);
    /* Optional: the peer closed its session (close_notify). */
    void (*closed)(void *arg, int slot);
    /* Optional: a ClientHello, before it takes a handshake slot. 1 when the owner took it (sent it elsewhere,
     * refused it over its own cap), 0 to go on. */
    int (*gate)(void *arg, int fd, const unsigned char *rid, size_t rid_len);
    /* Optional: every handshake slot is taken. 0 when the owner keeps the ClientHello to hand it back later
     * (conn_session_hello), -1 when not; without it, or on -1, the connection is closed (CONN_HANDSHAKES). */
    int (*wait)(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *hello, size_t len);
    /* Optional: takes in the socket monitor's news, before a frame without a session is judged (its descriptor
     * may be a new connection's by now). */
    void (*drain)(void *arg);
    /* Optional: plaintext mode only (no TLS context): the first frame of a routing id on a connection that is not
     * refused. The owner takes the peer in or not. */
    void (*plain)(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len);
    /* The owner's generation, for the header of a plaintext REFUSE. */
    uint32_t (*generation)(void *arg);
};

struct conn_session_cfg {
    void *router;       /* the ROUTER (ZMQ_ROUTER_MANDATORY: a send to a gone peer fails with EHOSTUNREACH) */
    conn_guard_t *guard; /* its connections (borrowed; the owner feeds it the monitor's events) */
    peerlog_t *plog;    /* bounded warnings (borrowed) */
    tls_ctx_t *tls;     /* server credentials (borrowed); NULL: plaintext mode, every frame a message */
    const char *job_id; /* for the plaintext REFUSE's header (copied) */
    const char *who;    /* "coordinator", "relay": who requires TLS, in the REFUSE (static) */
    const char *prefix; /* before every warning: "", "relay: " (static) */
};

typedef struct conn_session conn_session_t;

/* A server over cfg's socket and guard, calling ops (copied) with arg. NULL + message (out of memory). */
conn_session_t *conn_session_new(const struct conn_session_cfg *cfg, const struct conn_session_ops *ops, void *arg,
                                 char *err, size_t errlen);
/* Frees the server (not the sessions: the owner closes and frees its entries); sets *s to NULL; safe twice. */
void conn_session_destroy(conn_session_t **s);
/* One frame from routing id rid (at most CONN_MAX_RID bytes) on connection fd (ZMQ_SRCFD), of at most
 * TLS_CHAN_FRAME_MAX bytes: its session's, or judged as above. */
void conn_session_frame(conn_session_t *s, int fd, const unsigned char *rid, size_t rid_len, const void *data,
                        size_t len);
/* A ClientHello the owner kept (ops->wait) taken in now: from the handshake cap on, as a new one. */
void conn_session_hello(conn_session_t *s, int fd, const unsigned char *rid, size_t rid_len, const void *data,
                        size_t len);
/* The session of routing id rid that came on fd (the connection's tag first, then the index), or -1. NULL s: -1. */
int conn_session_find(const conn_session_t *s, int fd, const unsigned char *rid, size_t rid_len);
/* Indexes entry slot under its routing id (after the owner gave an entry a routing id itself: plaintext, a moved
 * session). An entry whose routing id changes or ends needs nothing: its old entry is stale. */
void conn_session_index(conn_session_t *s, int slot);
/* Sends every pending TLS record of e as one frame each. 0, or -1 with errno (EHOSTUNREACH: its connection is
 * gone). */
int conn_session_flush(conn_session_t *s, struct conn_session_slot *e);
/* One whole message on e's session, and its records out. 0, or -1 (no session, not open, or not sent). */
int conn_session_send(conn_session_t *s, struct conn_session_slot *e, const void *msg, size_t len);

#endif
