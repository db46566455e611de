/* mon_proc: host metrics of a rank from /proc: its process tree (the worker and every descendant, through
 * /proc/PID/task/TID/children), their RSS, threads and CPU time (a % of one core against the previous sample of the
 * same rank), and the node's MemAvailable / MemTotal. Owned by the sampler process. */
#ifndef PLAUNCH_MON_PROC_H
#define PLAUNCH_MON_PROC_H

#include <sys/types.h>

#include "launcher/monitor/sampling/mon_sample.h"

#define MON_PROC_TREE_MAX 4096 /* processes of one rank that are counted */

typedef struct mon_proc mon_proc_t;

mon_proc_t *mon_proc_new(void);
void mon_proc_destroy(mon_proc_t **p);
/* The pids of root's tree (root first) into out (at most cap): their count, 0 when root is gone. */
int mon_proc_tree(mon_proc_t *p, pid_t root, pid_t *out, int cap);
/* Fills rss_mib, cpu_pct (NAN at the first sample of a rank), threads and procs of s for the tree of pid, whose
 * pids (as mon_proc_tree) go into tree; their count. A worker that is gone: procs 0, threads 0, rss 0. */
int mon_proc_sample(mon_proc_t *p, int rank, pid_t pid, struct mon_sample *s, pid_t *tree, int cap);
/* The node's MemAvailable / MemTotal, 0..1; NAN unknown. */
double mon_proc_mem_avail(void);

#endif
