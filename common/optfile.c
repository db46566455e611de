/* optfile: files named by options, opened without blocking, refused unless regular, read within a bound. */
#include "common/optfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *s_kind(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO (named pipe)" : S_ISCHR(mode) ? "a character device"
           : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

int optfile_open(const char *path, const char *what, size_t max_bytes, char *err, size_t errlen)
{
    struct stat st;
    /* O_NONBLOCK: opening a FIFO waits for a writer otherwise, and plaunch reads its options with signals blocked.
     * O_NOCTTY: a terminal named by mistake must not become ours. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s '%s': %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot stat %s '%s': %s", what, path, strerror(errno));
        goto error;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s '%s' is %s, not a regular file: give the path of a file", what, path,
                 s_kind(st.st_mode));
        goto error;
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        snprintf(err, errlen, "%s '%s' is too large: %lld bytes, at most %zu", what, path, (long long)st.st_size,
                 max_bytes);
        goto error;
    }
    if (fcntl(fd, F_SETFL, 0) < 0) { /* a regular file ignores O_NONBLOCK; clear it all the same */
        snprintf(err, errlen, "cannot read %s '%s': %s", what, path, strerror(errno));
        goto error;
    }
    return fd;
error:
    close(fd);
    return -1;
}

FILE *optfile_fopen(const char *path, const char *what, size_t max_bytes, char *err, size_t errlen)
{
    int fd = optfile_open(path, what, max_bytes, err, errlen);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "re");
    if (fd >= 0 && !f) {
        snprintf(err, errlen, "cannot read %s '%s': %s", what, path, strerror(errno));
        close(fd);
    }
    return f;
}

int optfile_read_fd(int fd, const char *path, const char *what, char *buf, size_t cap, size_t *len, char *err,
                    size_t errlen)
{
    size_t got = 0;
    for (;;) {
        char extra;
        /* Past cap-1 bytes, one more byte read means the file is longer than the bound. */
        ssize_t n = got < cap - 1 ? read(fd, buf + got, cap - 1 - got) : read(fd, &extra, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "cannot read %s '%s': %s", what, path, strerror(errno));
            return -1;
        }
        if (n == 0)
            break;
        if (got == cap - 1) {
            snprintf(err, errlen, "%s '%s' is too large: more than %zu bytes", what, path, cap - 1);
            return -1;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    *len = got;
    return 0;
}
