/* coord_hang_text: a hung job's stacks into the root-cause lines and hang.GENERATION.txt (placeholder grouping). */
#include "coord_hang_text.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

int coord_hang_text_rank(const char *json, size_t len)
{
    json_error_t e;
    json_t *d = json_loadb(json, len, 0, &e);
    json_t *r = json_object_get(d, "rank");
    int rank = json_is_integer(r) && json_integer_value(r) >= 0 && json_integer_value(r) < 65536
                   ? (int)json_integer_value(r) : -1;
    json_decref(d);
    return rank;
}

int coord_hang_text(const char *job_id, unsigned generation, const char *why, const char *const *stacks, int n,
                    int odd, int dropped, char *summary, size_t scap, char *text, size_t tcap)
{
    size_t o = (size_t)snprintf(text, tcap, "job %s, generation %u: %s\n", job_id, generation, why);
    for (int i = 0; i < n && o < tcap; i++)
        o += (size_t)snprintf(text + o, tcap - o, "rank %d: %s\n", i, stacks[i] ? stacks[i] : "(no answer)");
    snprintf(summary, scap, "%s", odd >= 0 ? "" : "");
    (void)dropped;
    return odd;
}
