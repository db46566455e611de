/* hang_json: traces as JSON (jansson): `plaunch __stacks`'s output, and one rank's stacks within a bound for the
 * REPORT an agent sends the coordinator; decoding checks every key, type, count, length and range (a peer's
 * bytes, or a capture process's). The schema is in docs/hang.md. */
#ifndef PLAUNCH_HANG_JSON_H
#define PLAUNCH_HANG_JSON_H

#include <stddef.h>

#include "launcher/hang/hang_trace.h"

#define HANG_JSON_MAX (8u << 20)      /* the largest text hang_json_decode takes */
#define HANG_JSON_RANK_MAX (16u << 10) /* the default bound of one rank's stacks sent to the coordinator */
#define HANG_JSON_MIN 1024u            /* the smallest bound hang_json_encode accepts: a rank's header fits */

/* Who a rank document is about. */
struct hang_json_rank {
    int rank;                  /* 0 .. WIRE_MAX_WORLD - 1 */
    char node[HANG_SHORT_MAX]; /* the node's name */
    char gpu[HANG_SHORT_MAX];  /* its local GPU ("" on a CPU job) */
    int pid;                   /* the worker's pid */
    char error[HANG_ERR_MAX];  /* why the trace is missing or partial ("" none) */
};

/* {"v":1,...} of t (who NULL: no rank keys, as __stacks prints). max 0: no bound; else the text is at most max
 * bytes (at least HANG_JSON_MIN): other threads' frames, other threads, other processes, long strings and at last
 * the main threads' outer frames are dropped in that order until it fits, and "cut" says what went. malloc'ed
 * NUL-terminated text (caller frees), or NULL (out of memory, max below HANG_JSON_MIN). */
char *hang_json_encode(const struct hang_trace *t, const struct hang_json_rank *who, size_t max);
/* Decodes len bytes (at most HANG_JSON_MAX) into a new trace (caller destroys); the rank keys, when present, into
 * *who with *has_who 1 (who may be NULL when they are not wanted). NULL with a message naming the key on anything
 * the schema does not allow: an unknown key, a wrong type, a count, string or number out of its bound, a duplicate
 * key, a version other than 1. */
struct hang_trace *hang_json_decode(const char *text, size_t len, struct hang_json_rank *who, int *has_who,
                                    char *err, size_t errlen);

#endif
