/* util: small helpers every module needs the same way: whole writes to a descriptor, a lookup in an envp array
 * (the launcher reads the environment it was given, not the global one, so tests can pass their own), and the one
 * rule that turns a wait status into an exit code. */
#ifndef PLAUNCH_UTIL_H
#define PLAUNCH_UTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf, retrying short writes and EINTR; 0, or -1 with errno (EPIPE, ENOSPC, ...). */
int util_write_all(int fd, const void *buf, size_t len);
/* The value of NAME in envp ("NAME=value"), or NULL. */
const char *util_env_get(char **envp, const char *name);
/* The exit code a shell would report for a wait status: the code, 128+N when killed by signal N, 125 otherwise. */
int util_exit_code(int wait_status);
/* A small text file (a sysfs or cgroup value, at most cap-1 bytes are read) into buf, NUL-terminated, trailing
 * white space dropped. Returns its length, or -1 (unreadable or empty). */
ssize_t util_read_small(const char *path, char *buf, size_t cap);

#endif
