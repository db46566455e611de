/* idlist: comma-separated lists of non-negative ids and ascending ranges ("0,2-3"), used for GPUs and ranks. */
#include "common/idlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a decimal number in [0, maxval]; -1 when s[0..len) is not one. */
static long s_parse_num(const char *s, size_t len, int maxval)
{
    long v = 0;
    if (len == 0 || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= maxval ? v : -1;
}

static int s_contains(const int *ids, int n, int id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

int idlist_parse(const char *spec, const char *what, int maxval, int *ids, int max, char *err, size_t errlen)
{
    int n = 0;
    if (spec == NULL || *spec == '\0') {
        snprintf(err, errlen, "empty %s list", what);
        return -1;
    }
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *dash = memchr(p, '-', len);
        long lo, hi;
        if (dash) {
            lo = s_parse_num(p, (size_t)(dash - p), maxval);
            hi = s_parse_num(dash + 1, len - (size_t)(dash - p) - 1, maxval);
        } else {
            lo = hi = s_parse_num(p, len, maxval);
        }
        if (lo < 0 || hi < 0 || hi < lo) {
            snprintf(err, errlen, "'%.*s' is not a %s id (0..%d) or an ascending range like 0-3",
                     (int)len, p, what, maxval);
            return -1;
        }
        for (long id = lo; id <= hi; id++) {
            if (n >= max) {
                snprintf(err, errlen, "more than %d %s ids listed", max, what);
                return -1;
            }
            if (s_contains(ids, n, (int)id)) {
                snprintf(err, errlen, "%s %ld is listed twice", what, id);
                return -1;
            }
            ids[n++] = (int)id;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return n;
}
