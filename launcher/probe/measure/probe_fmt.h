/* probe_fmt: how the probe's reports spell versions, sizes and rank lists. */
#ifndef PLAUNCH_PROBE_FMT_H
#define PLAUNCH_PROBE_FMT_H

#include <stddef.h>
#include <stdint.h>

/* "12.4" from 12040 (cudaDriverGetVersion's encoding); "unknown" from 0. */
void probe_fmt_cuda_version(int v, char *buf, size_t len);
/* "2.28.9" from 22809, and the pre-2.9 encoding 2708 as "2.7.8"; "unknown" from 0. */
void probe_fmt_nccl_version(int v, char *buf, size_t len);
/* "1 MiB", "512 KiB" when a binary unit is exact, else "87.0 MB" (decimal). */
void probe_fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* A number as nccl-tests prints it in a column of `width`: two decimals, else one, else none, else exponent;
 * buf must hold width + 1 bytes. */
void probe_fmt_float(double v, int width, char *buf, size_t len);
/* "0-3,6" from ranks {0,1,2,3,6}; truncated with "..." when buf is short. */
void probe_fmt_ranks(const int *ranks, size_t n, char *buf, size_t len);

#endif
