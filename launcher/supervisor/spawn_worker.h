/* spawn_worker: fork and exec one worker in its own process group, output into pipes, exec errors reported. */
#ifndef PLAUNCH_SPAWN_WORKER_H
#define PLAUNCH_SPAWN_WORKER_H

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

/* Starts argv[0] (searched in PATH of envp) with envp, stdin from /dev/null, stdout into a new pipe whose
 * read end is returned in *out_fd, stderr into a second pipe (*err_fd) or, with err_fd NULL, into the first;
 * *exec_fd receives the errno of a failed exec (read it after the child exited: 4 bytes = failure, EOF = exec
 * worked). The child is a process-group leader, gets SIGKILL when the launcher dies, and starts with the signal
 * mask and dispositions reset. Returns the pid, or -1 with errno (nothing left open). */
struct topo_bind;
/* bind: the worker's CPUs and memory policy, applied between fork and exec when bind->apply (NULL: none). */
pid_t spawn_process(char *const argv[], char *const envp[], const struct topo_bind *bind, int *out_fd, int *err_fd,
                    int *exec_fd);

/* Workers get this RLIMIT_NOFILE (the one plaunch was started with, before it raised its own). */
void spawn_set_worker_nofile(const struct rlimit *rl);

/* Reads the exec errno recorded for a child that has exited: 0 when exec had worked. Closes *exec_fd. */
int spawn_exec_errno(int *exec_fd);
/* Why argv[0] could not be run (exec_errno from spawn_exec_errno), naming the real cause: a file that is
 * missing, a command not in PATH, a file that is not executable, the interpreter of its #! line missing, or the
 * Python interpreter plaunch put in front (python: that name, "" when none) not found. */
void spawn_explain_exec(char *const argv[], int exec_errno, const char *python, char *buf, size_t cap);
/* How a worker ended, for the log: "exited with code N", "was killed by SIGX", "could not be started: ...". */
void spawn_describe_exit(int wait_status, int exec_errno, char *buf, size_t cap);

#endif
