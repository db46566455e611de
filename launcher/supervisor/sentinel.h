/* sentinel: a tiny watcher process that ends the job cgroup (cgroup.h) and the workers' process groups if the
 * launcher itself dies (SIGKILL, OOM) so that no worker or worker child outlives it. Workers also carry
 * PR_SET_PDEATHSIG, but their own children do not; the sentinel covers those. */
#ifndef PLAUNCH_SENTINEL_H
#define PLAUNCH_SENTINEL_H

#include <sys/types.h>

/* Creates the job cgroup (cgroup_create) and forks the sentinel; marker is an environment entry
 * ("PLAUNCH_AGENT=...") that every worker carries, used to find descendants that left their process group
 * when there is no cgroup. Returns its pid, or -1 with errno. */
pid_t sentinel_start(const char *marker);
/* Tells the sentinel about a new worker process group (call right after fork). */
void sentinel_watch(pid_t pgid);
/* The group is gone (its leader reaped, no member left): its number may be reused by anyone. */
void sentinel_forget(pid_t pgid);
/* Normal shutdown: every worker is reaped; removes the job cgroup, and the sentinel exits without killing. */
void sentinel_release(void);

#endif
