/* procfile: reads a /proc or cgroup file whole, whatever its length (they are generated as they are read and
 * give no size up front), so that no list is ever cut in the middle of an entry. */
#ifndef PLAUNCH_PROCFILE_H
#define PLAUNCH_PROCFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Reads path (relative to dirfd, or AT_FDCWD) to its end into *buf, grown with realloc (*cap is its size; both
 * may start as NULL and 0, and the caller frees *buf), NUL-terminated. Returns the length, or -1 with errno. */
ssize_t procfile_read(int dirfd, const char *path, char **buf, size_t *cap);

#endif
