/* mon_json: rank summaries as JSON, for the REPORT HEALTH each node sends the coordinator (at most WIRE_MAX_REPORT
 * bytes) and for plaunch report --json; decoding checks every field and bound (a peer's bytes). */
#ifndef PLAUNCH_MON_JSON_H
#define PLAUNCH_MON_JSON_H

#include <stddef.h>

#include "launcher/monitor/diagnosis/mon_diag.h"

/* The largest text mon_json_decode takes (a REPORT's bound). A summary encodes to about 1 KiB: a node with more
 * than ~200 ranks sends them in several reports. */
#define MON_JSON_MAX (256u << 10) /* WIRE_MAX_REPORT; mon_json.c checks they agree */

/* {"version":1,"ranks":[{...},...]} of n summaries (every field, null for NAN; a number outside the range the decoder
 * takes goes as null, or at its bound); malloc'ed NUL-terminated text (caller frees), or NULL (out of memory, or a
 * string that is not UTF-8). */
char *mon_json_encode(const struct mon_rank_summary *r, int n);
/* Decodes at most max summaries from len bytes (at most MON_JSON_MAX) into out; the count, or -1 with a message
 * naming the field (out untouched). Every field must be there, with its type and within its range; an unknown key,
 * a string too long for its field or holding a control character, two summaries of one rank, or a version other
 * than 1 is refused. */
int mon_json_decode(const char *text, size_t len, struct mon_rank_summary *out, int max, char *err, size_t errlen);

#endif
