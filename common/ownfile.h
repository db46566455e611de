/* ownfile: every file plaunch (often root) creates by name, where other users may reach: logs and monitor files
 * opened in place in a directory proved ours, and whole outputs (reports, keys, tokens) written under an
 * unpredictable temporary name and renamed into place; never through a link someone planted. */
#ifndef PLAUNCH_OWNFILE_H
#define PLAUNCH_OWNFILE_H

#include <stddef.h>

/* Opens the directory path (absolute, as realpath(3) gives it) with no symbolic link anywhere on the way, and
 * checks that no one but this user can add or replace entries in it: owned by the effective uid or by root, and
 * writable by group or others only when the sticky bit is set. what names it in messages ("log directory"), fix
 * says what the user can do instead ("choose another --log-dir"). Returns an O_DIRECTORY descriptor, or -1 with a
 * message in err. */
int ownfile_open_dir(const char *path, const char *what, const char *fix, char *err, size_t errlen);

enum ownfile_flags {
    OWNFILE_TRUNC = 1,  /* empty an existing file (only once it is proved ours) */
    OWNFILE_APPEND = 2, /* O_APPEND: for files that more than one process may write (plaunch.log) */
};

/* Opens name inside dirfd (a descriptor from ownfile_open_dir of dirpath, which only names it in messages; or
 * AT_FDCWD and NULL, for a file that a path names in a directory plaunch made for the job) for
 * reading and writing, positioned at its end, close-on-exec: created exclusively with mode 0644, or, when it
 * exists, used only if it is a regular file of this user with one link (never through a symbolic link, never a
 * FIFO or device). Returns the descriptor, or -1 with a message that names the file and the fix. */
int ownfile_open(int dirfd, const char *dirpath, const char *name, int flags, const char *fix, char *err,
                 size_t errlen);

/* A whole output created by name (ownfile_new_open .. ownfile_new_commit or ownfile_new_abort). */
struct ownfile_new {
    int fd;            /* -1 once f owns it, or once committed or aborted */
    void *f;           /* the FILE * of ownfile_new_stream, or NULL */
    int flags;
    unsigned mode;
    char path[4096];
    char tmp[4096 + 32];
};
#define OWNFILE_NOREPLACE 4 /* ownfile_new_open: an existing path is an error (checked again at the commit) */
#define OWNFILE_NOSYNC 8    /* ownfile_new_open: no fsync at the commit: a file rewritten every second from an event
                             * loop (status.json), which must not wait on the disk and costs nothing if lost */

/* Starts the output path (mode: its final permissions, given at the commit): PATH.tmp.<16 random hex digits>,
 * created beside it with O_CREAT | O_EXCL | O_NOFOLLOW and mode 0600, so that no link another user plants there,
 * and no name they guess, is ever written through; other users see nothing until the commit. fd in n->fd. 0, or
 * -1 with a message naming path (nothing left behind). */
int ownfile_new_open(struct ownfile_new *n, const char *path, unsigned mode, int flags, char *err, size_t errlen);
/* A stdio stream on n (it owns n->fd from now on; ownfile_new_commit/abort close it). NULL with errno. */
void *ownfile_new_stream(struct ownfile_new *n);
/* Flushes and syncs (unless OWNFILE_NOSYNC) what was written, gives it its mode and renames it over path (with OWNFILE_NOREPLACE: only if
 * path still does not exist). ok 0 (the caller's own writing failed) aborts instead. 0, or -1 with a message; the
 * temporary file is gone either way. */
int ownfile_new_commit(struct ownfile_new *n, int ok, char *err, size_t errlen);
/* Closes and removes the temporary file; safe twice. */
void ownfile_new_abort(struct ownfile_new *n);

/* Empties fd, a file already proved ours (a file that is empty already is not touched); 0, or -1 with errno. */
int ownfile_empty(int fd);

#endif
