/* idlist: comma-separated lists of non-negative ids and ascending ranges ("0,2-3"), used for GPUs and ranks. */
#ifndef PLAUNCH_IDLIST_H
#define PLAUNCH_IDLIST_H

#include <stddef.h>

/* Parses spec into ids[] (at most max), each in [0, maxval]. Duplicates are an error.
 * Returns the count, or -1 with a message naming the bad part in err. what names the ids ("GPU", "rank"). */
int idlist_parse(const char *spec, const char *what, int maxval, int *ids, int max, char *err, size_t errlen);

#endif
