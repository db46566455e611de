/* mon_json: rank summaries as JSON, for the REPORT "health" each node sends the coordinator (at most WIRE_MAX_REPORT
 * bytes) and for plaunch report --json; decoding checks every field and bound (a peer's bytes). */
#ifndef PLAUNCH_MON_JSON_H
#define PLAUNCH_MON_JSON_H

#include <stddef.h>

#include "mon_diag.h"

/* {"version":1,"ranks":[{...},...]} of n summaries; malloc'ed NUL-terminated text (caller frees), or NULL. */
char *mon_json_encode(const struct mon_rank_summary *r, int n);
/* Decodes at most max summaries from len bytes; the count, or -1 with a message. */
int mon_json_decode(const char *text, size_t len, struct mon_rank_summary *out, int max, char *err, size_t errlen);

#endif
