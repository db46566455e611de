/* hang_text: bounded growing text, and a trace rendered as text (every process, Python and native thread, frame by
 * frame) as hang.<generation>.txt shows it. Used by hang_group; callable on its own (one rank's stacks in a log). */
#ifndef PLAUNCH_HANG_TEXT_H
#define PLAUNCH_HANG_TEXT_H

#include <stddef.h>

#include "launcher/hang/hang_trace.h"

/* A text of at most max - 1 bytes; once an append does not fit it is dropped and full is set. Zero it, set max. */
struct hang_text {
    char *p;
    size_t len, cap, max;
    int full, oom;
};

/* Appends len bytes of s (all or nothing). */
void hang_text_append(struct hang_text *b, const char *s, size_t len);
/* Appends a formatted line of at most 4 KiB. */
void hang_text_put(struct hang_text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (malloc'ed, caller frees; "" when nothing was put), or NULL when memory ran out. b is spent. */
char *hang_text_take(struct hang_text *b);
/* t's processes, threads and frames. */
void hang_text_trace(struct hang_text *b, const struct hang_trace *t);
/* hang_text_trace after a header naming rank (rank >= 0), all of it only if reserve bytes stay free after it;
 * 0, or -1 when it was left out. */
int hang_text_trace_within(struct hang_text *b, const struct hang_trace *t, size_t reserve, int rank);

#endif
