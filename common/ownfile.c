/* ownfile: directories and files that plaunch (often root) writes where other users may reach: opened without
 * following links and proved to be this user's before anything in them is created, truncated or written. */
#include "ownfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
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
    snprintf(path, sizeof path, "%s/%s", dirpath, name);
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
