/* probe_size.h: byte-size arguments ("64M", "1G", "87000000") shared by `plaunch probe` and its GPU worker. */
#ifndef PLAUNCH_PROBE_SIZE_H
#define PLAUNCH_PROBE_SIZE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Parses a byte count with an optional binary suffix K, M, G or T (1K = 1024, as nccl-tests reads -b/-e).
 * Header-only so the C launcher and the C++ worker read sizes the same way. 0 on success, -1 on a malformed
 * value, a zero, or an overflow. */
static inline int probe_size_parse(const char *s, uint64_t *out)
{
    char *end = NULL;
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (shift && end[0] == 'i' && end[1] == 'B') /* "64MiB" reads as "64M"; "64MB" is refused as ambiguous */
        end += 2;
    if (*end != '\0' || v == 0 || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

#endif
