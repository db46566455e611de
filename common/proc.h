/* proc: the registry of this process's children: each pid with its owner (a callback and its argument), an
 * optional deadline, signals only to a registered child, and the one place that reaps.
 *
 * The kernel keeps one table of children per process, and so does this module: whoever starts a child registers
 * it here (proc_spawn does both; a part that forks or clones itself calls proc_add before it returns to the loop),
 * and from then on the pid is proven ours until it is reaped, which only this module does. Attached to the
 * process's loop (proc_attach), it reaps on SIGCHLD (a signalfd of its own) and tells each owner of its child's
 * end; a child nobody registered (a descendant re-parented to a subreaper) is reaped and forgotten. An owner that
 * must see its child gone before it goes on waits for it with proc_wait, bounded, on that pid alone.
 *
 * Processes that are short-lived helper tools and own every child they have may keep a local blocking wait of
 * their own instead: the capture process of `plaunch __stacks` (launcher/hang/hang_proc.c waits for its traced
 * threads with waitpid(-1, __WALL): ptrace's stops come only that way) and the one-shot children of
 * `plaunch probe` are such. Never two reapers in one process: where this module is attached, nothing else waits.
 *
 * Single-threaded: call it from the loop's thread only. */
#ifndef PLAUNCH_PROC_H
#define PLAUNCH_PROC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/loop.h"

/* How a registered child ended. */
struct proc_exit {
    pid_t pid;
    int status;  /* the wait status (WIFEXITED, WEXITSTATUS, WIFSIGNALED ...) */
    int late;    /* 1 when this module killed it at its deadline */
};
/* Called from the loop once the child is reaped (it is no longer registered). */
typedef void (*proc_exit_fn)(void *owner, const struct proc_exit *e);
/* Called at the child's deadline, just before it (its group, for a leader) gets SIGKILL. */
typedef void (*proc_late_fn)(void *owner, pid_t pid);

#define PROC_LEADER 1  /* proc_add: the child leads its own process group (proc_signal_group may reach it) */
#define PROC_KEEP (-1) /* proc_spawn's stdio: the descriptor as it is */
#define PROC_NULL (-2) /* proc_spawn's stdio: /dev/null */

/* What proc_spawn starts (posix_spawn: no fork of this process's memory, no copy of its threads). */
struct proc_spawn {
    const char *path;         /* the program */
    char *const *argv;
    char *const *envp;        /* NULL: this process's environment */
    int search;               /* 1: path without '/' is searched in PATH (posix_spawnp) */
    int stdio[3];             /* what becomes descriptors 0, 1, 2: a descriptor, PROC_KEEP or PROC_NULL */
    int group;                /* 1: its own process group, registered as PROC_LEADER */
    const sigset_t *mask;     /* the child's signal mask; NULL: this process's */
    const sigset_t *dfl;      /* signals the child starts with at their default action; NULL: none reset */
};
#define PROC_SPAWN_INIT { .stdio = { PROC_KEEP, PROC_KEEP, PROC_KEEP } }

/* Takes SIGCHLD through a signalfd in loop and reaps there; SIGCHLD must be blocked already. 0, or -1 with a
 * message. Children registered before the attach stay registered. */
int proc_attach(loop_t *loop, char *err, size_t errlen);
/* Leaves the loop (registrations stay: proc_wait still works). */
void proc_detach(void);

/* Registers a child just started by the caller (fork, clone): owner is told of its end through fn (NULL: nobody
 * is told). flags: PROC_LEADER or 0. 0, or -1 with errno (EEXIST: registered already; ENOMEM). */
int proc_add(pid_t pid, int flags, proc_exit_fn fn, void *owner);
/* Starts sp and registers it for owner; the pid, or -1 with errno (posix_spawn's error; nothing is left). */
pid_t proc_spawn(const struct proc_spawn *sp, proc_exit_fn fn, void *owner);

/* sig to owner's child pid (proc_signal_group: to its process group, for a PROC_LEADER); 0, or -1 with errno
 * ESRCH when pid is not a registered child of owner (never signalled then). */
int proc_signal(pid_t pid, const void *owner, int sig);
int proc_signal_group(pid_t pid, const void *owner, int sig);
/* At deadline_ns (loop_now_ns time) late is called (when not NULL) and the child gets SIGKILL (its group, for a
 * leader); its end is then told with late = 1. Needs the loop (proc_attach). Replaces an earlier deadline. 0 or -1. */
int proc_deadline(pid_t pid, const void *owner, uint64_t deadline_ns, proc_late_fn late);

/* Waits for owner's child pid to end, at most timeout_ms (< 0: as long as it takes; 0: only looks), and reaps it:
 * its wait status into *status (may be NULL); fn is not called. 0, or -1 with errno: ETIMEDOUT (still running,
 * still registered), ESRCH (not owner's child). */
int proc_wait(pid_t pid, const void *owner, int timeout_ms, int *status);
/* The owner lets go of its child: nobody is told of its end; the loop reaps it. */
void proc_disown(pid_t pid, const void *owner);

/* A one-shot tool's child: starts sp, waits for its end as long as it takes (`plaunch probe` runs the launcher
 * so) and puts its wait status into *status. 0, or -1 with errno (it could not be started). */
int proc_run(const struct proc_spawn *sp, int *status);

/* Whether pid is a registered child (of anyone). */
int proc_owned(pid_t pid);
/* Reaps children nobody registered (strays the caller found among ours and killed) until deadline_ns; pids holds
 * *n of them, and keeps those not yet reaped (registered ones are dropped, never waited for). Their count. */
int proc_reap_strays(pid_t *pids, int *n, uint64_t deadline_ns);

#endif
