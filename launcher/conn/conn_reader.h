/* conn_reader: the read loop of a ROUTER that takes unauthenticated peers, for the coordinator and relays alike: its
 * socket monitor's news first (accepted descriptors go to conn_guard, so a frame's connection is then known), then
 * the ROUTER's frames, at most CONN_READER_BUDGET a round, to the owner's handler; the closes the monitor reported
 * are taken in (conn_guard_gone) only once the ROUTER holds no more frames (a TLS alert sent just before a close is
 * still read: it says why the peer gave up), or at once when a new connection reuses the descriptor. */
#ifndef PLAUNCH_CONN_READER_H
#define PLAUNCH_CONN_READER_H

#include <stddef.h>

#include "launcher/conn/conn_guard.h"
#include "common/loop.h"

#define CONN_READER_BUDGET 1024 /* frames a round: the loop's other handlers run between rounds */
#define CONN_READER_GONE_MAX 64 /* closes held back until the ROUTER is read; more are taken in at once */

struct conn_reader_ops {
    /* One frame of connection fd (ZMQ_SRCFD) from routing id rid, within CONN_MAX_RID and TLS_CHAN_FRAME_MAX
     * (larger ones and malformed messages are dropped here). */
    void (*frame)(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len);
    /* After each round of reading (NULL: nothing): the owner's queued work (admissions, batches up). */
    void (*after)(void *arg);
    /* A new connection, after conn_guard took it in (NULL: nothing). */
    void (*accepted)(void *arg, int fd);
};

typedef struct conn_reader conn_reader_t;

/* Monitors router (before it binds or connects: the monitor must see every connection) and registers it and its
 * monitor with the loop; guard takes the connections in. Borrows router, guard and ops. NULL + message. */
conn_reader_t *conn_reader_new(void *zctx, loop_t *loop, void *router, conn_guard_t *guard,
                               const struct conn_reader_ops *ops, void *arg, char *err, size_t errlen);
/* Takes in every pending monitor event, without reading the ROUTER (conn_session's drain). */
void conn_reader_drain(conn_reader_t *r);
/* One round: the monitor's news, frames while there are some (up to the budget), the held closes once none is
 * left, then ops->after. What the loop runs when either socket is readable; an owner's timer may run it too. */
void conn_reader_read(conn_reader_t *r);
/* Inside conn_guard's end callback for a close this reader took in: 1 and *error when that connection failed its
 * ZeroMQ handshake (not a ZeroMQ peer), else 0. */
int conn_reader_zmtp_failed(const conn_reader_t *r, unsigned *error);
/* Takes both sockets out of the loop and closes the monitor (the ROUTER stays the owner's); NULL-safe. */
void conn_reader_destroy(conn_reader_t **r);

#endif
