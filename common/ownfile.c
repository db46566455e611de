/* ownfile: files plaunch creates by name: opened without following links and proved to be this user's before
 * anything in them is truncated or written, or written under a random temporary name and renamed into place. */
#include "common/ownfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* "uid 65534 (nobody)" */
static const char *s_user(uid_t uid, char *buf, size_t cap)
{
    struct passwd *pw = getpwuid(uid);
    snprintf(buf, cap, "uid %u%s%s%s", (unsigned)uid, pw ? " (" : "", pw ? pw->pw_name : "", pw ? ")" : "");
    return buf;
}

/* The directory itself, with every symbolic link on the way refused: openat2(RESOLVE_NO_SYMLINKS) where the kernel
 * has it (5.6), else O_NOFOLLOW, which covers the last component only. */
static int s_open_nolinks(const char *path)
{
    struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS };
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
        return fd;
    return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int ownfile_open_dir(const char *path, const char *what, const char *fix, char *err, size_t errlen)
{
    struct stat st;
    char who[128];
    int fd = s_open_nolinks(path);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s %s: %s; %s", what, path,
                 errno == ELOOP ? "a symbolic link was swapped in on the way" : strerror(errno), fix);
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot stat %s %s: %s; %s", what, path, strerror(errno), fix);
        goto error;
    }
    /* Whoever may add or rename entries here can plant a link where plaunch is about to write. */
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        snprintf(err, errlen, "%s %s belongs to %s, not to the user running plaunch (uid %u): its owner could "
                 "plant links there; %s, or make it yours (chown %u %s)", what, path,
                 s_user(st.st_uid, who, sizeof who), (unsigned)geteuid(), fix, (unsigned)geteuid(), path);
        goto error;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        snprintf(err, errlen, "%s %s is writable by %s (mode %04o) without the sticky bit: they could plant links "
                 "there; %s, or run: chmod go-w %s", what, path,
                 (st.st_mode & S_IWOTH) ? "every user" : "its group", (unsigned)(st.st_mode & 07777), fix, path);
        goto error;
    }
    return fd;
error:
    close(fd);
    return -1;
}

int ownfile_empty(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    /* An empty file is left alone: truncating it anyway makes ext4 (auto_da_alloc) flush all that is written
     * next when it is closed, which the job's end would wait for. */
    if (st.st_size > 0 && ftruncate(fd, 0) < 0)
        return -1;
    return lseek(fd, 0, SEEK_SET) < 0 ? -1 : 0;
}

/* The existing entry name, opened without following a link or blocking on a FIFO, if it is ours to write. */
static int s_open_existing(int dirfd, const char *path, const char *name, int flags, const char *fix, char *err,
                           size_t errlen)
{
    struct stat st;
    char who[128];
    int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                                     ((flags & OWNFILE_APPEND) ? O_APPEND : 0));
    if (fd < 0) {
        if (errno == ELOOP || errno == EMLINK)
            snprintf(err, errlen, "%s is a symbolic link; plaunch never writes through links there: remove it "
                     "(rm %s) or %s", path, path, fix);
        else if (errno != ENOENT)
            snprintf(err, errlen, "cannot open %s: %s; %s", path, strerror(errno), fix);
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot stat %s: %s; %s", path, strerror(errno), fix);
        goto error;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file (%s): remove it or %s", path,
                 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : "a device or socket", fix);
        goto error;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s belongs to %s, not to the user running plaunch (uid %u): plaunch writes only "
                 "its own files; remove it or %s", path, s_user(st.st_uid, who, sizeof who), (unsigned)geteuid(),
                 fix);
        goto error;
    }
    if (st.st_nlink != 1) {
        snprintf(err, errlen, "%s has %lu hard links: writing it would change another file too; remove it or %s",
                 path, (unsigned long)st.st_nlink, fix);
        goto error;
    }
    /* Proved ours: only now may it be emptied. */
    if ((flags & OWNFILE_TRUNC) && ownfile_empty(fd) < 0) {
        snprintf(err, errlen, "cannot truncate %s: %s; %s", path, strerror(errno), fix);
        goto error;
    }
    return fd;
error:
    close(fd);
    errno = EPERM;
    return -1;
}

int ownfile_open(int dirfd, const char *dirpath, const char *name, int flags, const char *fix, char *err,
                 size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", dirpath ? dirpath : "", dirpath ? "/" : "", name);
    int oflags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
                 ((flags & OWNFILE_APPEND) ? O_APPEND : 0);
    /* Create, else open what is there; it may vanish in between (then try again). */
    for (int round = 0; round < 4; round++) {
        int fd = openat(dirfd, name, oflags, 0644);
        if (fd < 0 && errno == EEXIST) {
            fd = s_open_existing(dirfd, path, name, flags, fix, err, errlen);
            if (fd < 0 && errno == ENOENT)
                continue;
        } else if (fd < 0) {
            snprintf(err, errlen, "cannot create %s: %s; %s", path, strerror(errno), fix);
        }
        if (fd >= 0 && (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0 || lseek(fd, 0, SEEK_END) < 0)) {
            snprintf(err, errlen, "cannot use %s: %s; %s", path, strerror(errno), fix);
            close(fd);
            return -1;
        }
        return fd;
    }
    snprintf(err, errlen, "cannot create %s: it keeps appearing and disappearing; %s", path, fix);
    return -1;
}

/* ---- whole outputs: a temporary name nobody can guess, renamed into place ---------------------------------- */

int ownfile_new_open(struct ownfile_new *n, const char *path, unsigned mode, int flags, char *err, size_t errlen)
{
    struct stat st;
    *n = (struct ownfile_new){ .fd = -1, .flags = flags, .mode = mode & 07777 };
    if (snprintf(n->path, sizeof n->path, "%s", path) >= (int)sizeof n->path) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    if ((flags & OWNFILE_NOREPLACE) && lstat(path, &st) == 0) {
        snprintf(err, errlen, "%s already exists; refusing to overwrite it", path);
        return -1;
    }
    for (int round = 0; round < 8; round++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
            snprintf(err, errlen, "%s: no random bytes for a temporary name: %s", path, strerror(errno));
            return -1;
        }
        snprintf(n->tmp, sizeof n->tmp, "%s.tmp.%016llx", path, (unsigned long long)r);
        n->fd = open(n->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (n->fd >= 0)
            return 0;
        if (errno != EEXIST) /* EEXIST: a planted name, or chance: another one */
            break;
    }
    snprintf(err, errlen, "%s: cannot write: %s; pick a path in a directory you can write", path,
             errno == EEXIST ? "every temporary name tried exists (someone plants them?)" : strerror(errno));
    return -1;
}

void *ownfile_new_stream(struct ownfile_new *n)
{
    FILE *f = n->fd >= 0 ? fdopen(n->fd, "w") : NULL;
    if (f) {
        n->f = f;
        n->fd = -1;
    }
    return f;
}

void ownfile_new_abort(struct ownfile_new *n)
{
    if (n->f)
        fclose(n->f);
    if (n->fd >= 0)
        close(n->fd);
    if (n->f || n->fd >= 0)
        unlink(n->tmp);
    n->f = NULL;
    n->fd = -1;
}

/* tmp to path, never over an existing path: renameat2(RENAME_NOREPLACE), or link + unlink where the file system
 * lacks it. */
static int s_rename_noreplace(const char *tmp, const char *path)
{
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(tmp, path) < 0)
        return -1;
    unlink(tmp);
    return 0;
}

int ownfile_new_commit(struct ownfile_new *n, int ok, char *err, size_t errlen)
{
    FILE *f = n->f;
    int fd = f ? fileno(f) : n->fd, e = 0;
    if (fd < 0) {
        snprintf(err, errlen, "%s: nothing to commit", n->path);
        return -1;
    }
    if (!ok || (f && (fflush(f) != 0 || ferror(f))) || (!(n->flags & OWNFILE_NOSYNC) && fsync(fd) < 0) ||
        fchmod(fd, n->mode) < 0)
        e = ok ? (errno ? errno : EIO) : -1;
    int closed = f ? fclose(f) : close(fd);
    n->f = NULL;
    n->fd = -1;
    if (!e && closed != 0)
        e = errno ? errno : EIO;
    if (!e && ((n->flags & OWNFILE_NOREPLACE) ? s_rename_noreplace(n->tmp, n->path) : rename(n->tmp, n->path)) < 0)
        e = errno;
    if (!e)
        return 0;
    unlink(n->tmp);
    if (e == EEXIST)
        snprintf(err, errlen, "%s already exists; refusing to overwrite it", n->path);
    else if (e > 0)
        snprintf(err, errlen, "%s: write failed: %s; check free space and permissions", n->path, strerror(e));
    else
        snprintf(err, errlen, "%s: not written", n->path);
    return -1;
}
