/* cgroup: the job's cgroup v2 directory, a child of plaunch's own cgroup, that workers are born into, so that
 * every process the job starts (even one that left its session and cleared its environment) ends as a whole.
 * One per launcher process; created before the sentinel forks so that both sides know it. */
#ifndef PLAUNCH_CGROUP_H
#define PLAUNCH_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

/* Creates the job cgroup where cgroup v2 is mounted and plaunch's own cgroup takes a child (root, or a
 * delegated subtree); PLAUNCH_CGROUP=0 turns it off, PLAUNCH_CGROUP=freeze ends it by freezing and killing
 * each process even where cgroup.kill exists. 0 when in use, -1 when not (cgroup_describe says why). */
int cgroup_create(void);
/* One line for plaunch.log: the cgroup and how it is ended, or why there is none. */
const char *cgroup_describe(void);
int cgroup_in_use(void);

/* For spawn_worker: the cgroup's directory (for CLONE_INTO_CGROUP) and its cgroup.procs (for a child that
 * places itself); -1 when no worker is to be placed. */
int cgroup_dir_fd(void);
int cgroup_procs_fd(void);
/* A worker could not be placed (err): later workers are not placed either, and the log says so once. */
void cgroup_placement_failed(int err);

/* Kills every process in the cgroup and waits until it is empty or deadline_ns (CLOCK_MONOTONIC) passes.
 * 0 when empty, -1 when processes remain (a warning is logged). The cgroup stays for the next generation. */
int cgroup_kill(uint64_t deadline_ns);
/* End of the job: kill what is left, remove the directory, close everything. Safe twice. */
void cgroup_remove(void);

#endif
