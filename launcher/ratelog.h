/* ratelog: warnings caused by peers that did not authenticate, with a bounded cost: the first few of a kind from
 * one address are logged as they come, the rest are counted and summed up in one line per kind and address at the
 * end of the interval ("refused 19,873 frames from 198.18.0.9 in the last 10 s: not TLS"), and an interval has a
 * cap on its detailed lines. One flooding peer therefore costs a few lines, however fast it sends. */
#ifndef PLAUNCH_RATELOG_H
#define PLAUNCH_RATELOG_H

#include "loop.h"

/* A kind of event: "<verb> <count> <noun> from <addr> in the last N s: <why>". Static storage: the pointer is the
 * key. */
struct ratelog_kind {
    const char *verb; /* "refused", "closed" */
    const char *one;  /* "frame", "connection" */
    const char *many; /* "frames", "connections" */
    const char *why;  /* "not TLS" */
};

typedef struct ratelog ratelog_t;

#define RATELOG_INTERVAL_MS 10000 /* the summing-up period */
#define RATELOG_BURST 3           /* detailed lines per kind and address in one interval */
#define RATELOG_LINES 10          /* detailed lines of all kinds in one interval */
#define RATELOG_ADDRS 8           /* kinds and addresses counted one by one; the rest per kind, all addresses */

/* interval_ms <= 0 means RATELOG_INTERVAL_MS. NULL with errno on allocation failure. */
ratelog_t *ratelog_new(loop_t *loop, int interval_ms);
/* Writes what is still counted (as summaries), then frees; sets *r to NULL; safe on NULL and twice. */
void ratelog_destroy(ratelog_t **r);
/* One event from addr: logs fmt as a warning while within the burst and line cap, else counts it. Returns 1 when
 * the line was logged, 0 when it was counted. */
int ratelog_warn(ratelog_t *r, const struct ratelog_kind *kind, const char *addr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* n events that need no detailed line of their own (frames of a connection already reported). */
void ratelog_count(ratelog_t *r, const struct ratelog_kind *kind, const char *addr, long n);
/* Logs the summaries now and starts a new interval (the end of an interval does the same). */
void ratelog_flush(ratelog_t *r);

#endif
