/* secfile: small secret files (private keys, tokens) read only when owner-only, written with an exact mode. */
#include "common/secfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/optfile.h"
#include "common/ownfile.h"
#include "common/util.h"

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

int secfile_write(const char *path, const void *data, size_t len, mode_t mode, int overwrite, char *err,
                  size_t errlen)
{
    struct ownfile_new n;
    /* Written owner-only (the temporary file is 0600) and given its mode at the commit, so a secret is never
     * readable by others, whatever the umask. */
    if (ownfile_new_open(&n, path, mode, overwrite ? 0 : OWNFILE_NOREPLACE, err, errlen) < 0)
        return -1;
    if (util_write_all(n.fd, data, len) < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        ownfile_new_abort(&n);
        return -1;
    }
    return ownfile_new_commit(&n, 1, err, errlen);
}
