/* metrics: this process's /metrics: the collectors its parts register (each writes whole metric families into
 * the exposition when a scrape comes), the base labels every sample carries, and the HTTP server that answers. A
 * collector only reads the state of its owner; the owner keeps that state whether or not anyone scrapes. */
#ifndef PLAUNCH_METRICS_H
#define PLAUNCH_METRICS_H

#include <stddef.h>

#include "common/loop.h"
#include "launcher/metrics/metrics_text.h"

#define METRICS_COLLECTORS_MAX 8

typedef struct metrics metrics_t;
/* Writes its families into t (mtext_family, then mtext_sample per sample). */
typedef void (*metrics_collect_fn)(void *arg, struct mtext *t);

/* Serves GET /metrics on addr:port in loop; every sample carries job_id="job_id" and node="node". NULL + message
 * in err (libmicrohttpd absent, the port taken, a bad address). */
metrics_t *metrics_new(loop_t *loop, const char *addr, int port, const char *job_id, const char *node, char *err,
                       size_t errlen);
/* Adds a collector, called in order of registration at each scrape; 0, or -1 when METRICS_COLLECTORS_MAX are in. */
int metrics_add(metrics_t *m, metrics_collect_fn fn, void *arg);
/* Takes out the collector registered with fn and arg (its owner is going away). */
void metrics_remove(metrics_t *m, metrics_collect_fn fn, void *arg);
/* The port it listens on (the one chosen when 0 was asked). */
int metrics_port(const metrics_t *m);
/* The whole exposition as one scrape would see it, malloc'ed (tests, plaunch status); NULL out of memory. */
char *metrics_render(metrics_t *m, size_t *len);
void metrics_destroy(metrics_t **m);

#endif
