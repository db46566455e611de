/* hang_group: the ranks of a hung job grouped by where they are: a signature per rank (the main thread of its
 * main process: Python frames when there are any, else native ones; addresses and offsets never count), groups of
 * identical signatures ordered by size, the odd ones out, and the two renderings: a one-paragraph summary for the
 * root-cause block and the full text of hang.<generation>.txt. Called by the coordinator. */
#ifndef PLAUNCH_HANG_GROUP_H
#define PLAUNCH_HANG_GROUP_H

#include <stddef.h>

#include "launcher/hang/hang_trace.h"

#define HANG_GROUP_SUMMARY_MAX 2048     /* bytes of the summary paragraph */
#define HANG_GROUP_TEXT_MAX (8u << 20)  /* bytes of the full text; past it groups keep their ranks, not stacks */

/* One rank's input (borrowed until hang_group_destroy). */
struct hang_rank {
    int rank;
    const char *node;               /* the node's name */
    const char *gpu;                /* its local GPU, "" or NULL on a CPU job */
    int pid;                        /* the worker's pid */
    const struct hang_trace *trace; /* its stacks, NULL when none came */
    const char *error;              /* why they are missing or partial, "" or NULL */
};

typedef struct hang_group hang_group_t;

/* Groups n ranks; NULL out of memory. */
hang_group_t *hang_group_new(const struct hang_rank *ranks, int n);
void hang_group_destroy(hang_group_t **g);
/* Groups of ranks with stacks (ranks without any are apart). */
int hang_group_count(const hang_group_t *g);
/* The ranks that are odd ones out (alone in their group while one group holds at least half of at least three
 * ranks with stacks) into out, at most cap; their count. */
int hang_group_odd(const hang_group_t *g, int *out, int cap);
/* "ranks 0-1,3 share stack A (all_reduce in torch/distributed/distributed_c10d.py:2501 <- train.py:40); rank 2:
 * stack B (stuck_here in train.py:12) <- the odd one out": each group with its most informative frame (the
 * innermost outside the C library, the interpreter and Python's standard library, and the innermost user frame
 * below it when that one is in a library), at most HANG_GROUP_SUMMARY_MAX bytes. malloc'ed (caller frees), or NULL. */
char *hang_group_summary(const hang_group_t *g);
/* The full text: the summary, then each group with its ranks (rank, node, GPU, pid) and the stacks of its first
 * rank (every process and thread, Python and native), then the ranks without stacks and why; at most
 * HANG_GROUP_TEXT_MAX bytes. malloc'ed (caller frees), or NULL. */
char *hang_group_text(const hang_group_t *g, int generation);
/* n ranks (any order, repeats allowed) as ranges: "0-1,3,7-9"; cut with ",..." to fit cap. The length written. */
size_t hang_group_ranges(const int *ranks, int n, char *buf, size_t cap);

#endif
