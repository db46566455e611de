/* secfile: small secret files (private keys, tokens) read only when owner-only, written with an exact mode. */
#include "secfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "optfile.h"

int secfile_read(const char *path, const char *what, char *buf, size_t cap, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    int fd = optfile_open(path, what, cap - 1, err, errlen); /* a regular file, not a FIFO or a device */
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot stat %s %s: %s", what, path, strerror(errno));
        goto error;
    }
    /* Checked on the open descriptor, so a chmod race cannot slip a readable file past us. */
    if (st.st_mode & 077) {
        snprintf(err, errlen, "%s %s is accessible by group or others (mode %04o); run: chmod 600 %s", what, path,
                 (unsigned)(st.st_mode & 07777), path);
        goto error;
    }
    if (optfile_read_fd(fd, path, what, buf, cap, len, err, errlen) < 0)
        goto error;
    close(fd);
    return 0;
error:
    close(fd);
    return -1;
}

static int s_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int secfile_write(const char *path, const void *data, size_t len, mode_t mode, int overwrite, char *err,
                  size_t errlen)
{
    char tmp[4096];
    const char *target = path;
    int fd;
    if (overwrite) {
        if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
            snprintf(err, errlen, "path too long: %s", path);
            return -1;
        }
        fd = mkostemp(tmp, O_CLOEXEC);
        target = tmp;
    } else {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 0600);
    }
    if (fd < 0) {
        if (errno == EEXIST)
            snprintf(err, errlen, "%s already exists; refusing to overwrite it", path);
        else
            snprintf(err, errlen, "cannot create %s: %s", target, strerror(errno));
        return -1;
    }
    /* Written owner-only and widened last, so a secret is never readable by others, whatever the umask. */
    if (s_write_all(fd, data, len) < 0 || fsync(fd) < 0 || fchmod(fd, mode) < 0) {
        snprintf(err, errlen, "cannot write %s: %s", target, strerror(errno));
        goto error;
    }
    if (close(fd) < 0) {
        fd = -1;
        snprintf(err, errlen, "cannot write %s: %s", target, strerror(errno));
        goto error;
    }
    fd = -1;
    if (overwrite && rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot replace %s: %s", path, strerror(errno));
        goto error;
    }
    return 0;
error:
    if (fd >= 0)
        close(fd);
    unlink(target);
    return -1;
}
