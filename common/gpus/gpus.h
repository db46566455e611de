/* gpus: GPU list parsing ("0,1,2,3", "0-3", "all") and GPU discovery through the CUDA libraries at run time. */
#ifndef PLAUNCH_GPUS_H
#define PLAUNCH_GPUS_H

#include <stddef.h>

#define GPUS_MAX 1024

/* Parses a comma-separated list of ids and ranges ("0,2-3") into ids[]; "all" sets *all = 1 and n = 0.
 * Returns the count (>= 0), or -1 with a message naming the bad part in err. */
int gpus_parse(const char *spec, int *ids, int max, int *all, char *err, size_t errlen);

/* Counts the GPUs the CUDA runtime (or, failing that, the driver API) reports, in a short-lived child
 * process so that CUDA is never initialised in the launcher (a child forked after that cannot use CUDA).
 * Returns the count (0 when there is none), or -1 with the reason in err (no CUDA library, driver error). */
int gpus_count_cuda(int timeout_ms, char *err, size_t errlen);

/* 1 when a CUDA_VISIBLE_DEVICES value leaves no GPU visible: empty (a scheduler hid every GPU), a first entry
 * CUDA cannot use such as -1 (it stops at the first invalid entry), or Slurm's NoDevFiles. */
int gpus_visible_none(const char *value);

/* Splits a CUDA_VISIBLE_DEVICES value into its entries (ids or GPU UUIDs); returns the count or -1.
 * Each entry is copied into entries[i] (at most entry_len bytes). */
int gpus_split_visible(const char *value, char entries[][64], int max, char *err, size_t errlen);

/* Whether a CUDA runtime can run on a driver, both as CUDA's numbers (12040 is 12.4; 0 unknown): 0 yes (or unknown),
 * 1 no (a newer major: every call fails), 2 a newer minor (minor-version compatibility, with limits); why gets the
 * sentence ("" for 0). */
int gpus_cuda_mismatch(int driver, int runtime, char *why, size_t cap);
/* The newest CUDA runtime (libcudart.so.X.Y...) in the directories of an LD_LIBRARY_PATH value, as CUDA's number, 0
 * when none; a directory holding libcuda.so.1 (cuda-compat: the runtime brings its own driver library) is skipped.
 * where gets the library's path. */
int gpus_cudart_version(const char *ld_library_path, char *where, size_t cap);

#endif
