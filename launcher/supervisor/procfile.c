/* procfile: reads a /proc or cgroup file whole into a growing buffer. */
#include "launcher/supervisor/procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

ssize_t procfile_read(int dirfd, const char *path, char **buf, size_t *cap)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        if (len + 1 >= *cap) {
            size_t ncap = *cap ? *cap * 2 : 4096;
            char *nb = realloc(*buf, ncap);
            if (!nb) {
                close(fd);
                errno = ENOMEM;
                return -1;
            }
            *buf = nb;
            *cap = ncap;
        }
        ssize_t n = read(fd, *buf + len, *cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    (*buf)[len] = '\0';
    return (ssize_t)len;
}
