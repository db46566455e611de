/* peerlog: warnings caused by peers that did not authenticate, with a bounded cost: the first few of a kind from
 * one address are logged as they come, the rest are counted and summed up in one line per kind and address at the
 * end of the interval ("refused 19,873 frames from 198.18.0.9 in the last 10 s: not TLS"), and an interval has a
 * cap on its detailed lines. One flooding peer therefore costs a few lines, however fast it sends. (common/lograte
 * limits one stream of repeated messages; this follows many peers at once, each counted by address, and writes
 * its summaries when the interval ends, not at the next event.) */
#ifndef PLAUNCH_PEERLOG_H
#define PLAUNCH_PEERLOG_H

#include "common/loop.h"

/* A kind of event: "<verb> <count> <noun> from <addr> in the last N s: <why>". Static storage: the pointer is the
 * key. */
struct peerlog_kind {
    const char *verb; /* "refused", "closed" */
    const char *one;  /* "frame", "connection" */
    const char *many; /* "frames", "connections" */
    const char *why;  /* "not TLS" */
};

typedef struct peerlog peerlog_t;

#define PEERLOG_INTERVAL_MS 10000 /* the summing-up period */
#define PEERLOG_BURST 3           /* detailed lines per kind and address in one interval */
#define PEERLOG_LINES 10          /* detailed lines of all kinds in one interval */
#define PEERLOG_ADDRS 8           /* kinds and addresses counted one by one; the rest per kind, all addresses */

/* interval_ms <= 0 means PEERLOG_INTERVAL_MS. NULL with errno on allocation failure. */
peerlog_t *peerlog_new(loop_t *loop, int interval_ms);
/* Writes what is still counted (as summaries), then frees; sets *r to NULL; safe on NULL and twice. */
void peerlog_destroy(peerlog_t **r);
/* One event from addr: logs fmt as a warning while within the burst and line cap, else counts it. Returns 1 when
 * the line was logged, 0 when it was counted. */
int peerlog_warn(peerlog_t *r, const struct peerlog_kind *kind, const char *addr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* n events that need no detailed line of their own (frames of a connection already reported). */
void peerlog_count(peerlog_t *r, const struct peerlog_kind *kind, const char *addr, long n);
/* Logs the summaries now and starts a new interval (the end of an interval does the same). */
void peerlog_flush(peerlog_t *r);

#endif
