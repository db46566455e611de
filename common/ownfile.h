/* ownfile: directories and files that plaunch (often root) writes where other users may reach: opened without
 * following links and proved to be this user's before anything in them is created, truncated or written. */
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

/* Opens name inside dirfd (a descriptor from ownfile_open_dir of dirpath, which only names it in messages) for
 * reading and writing, positioned at its end, close-on-exec: created exclusively with mode 0644, or, when it
 * exists, used only if it is a regular file of this user with one link (never through a symbolic link, never a
 * FIFO or device). Returns the descriptor, or -1 with a message that names the file and the fix. */
int ownfile_open(int dirfd, const char *dirpath, const char *name, int flags, const char *fix, char *err,
                 size_t errlen);

/* Empties fd, a file already proved ours (a file that is empty already is not touched); 0, or -1 with errno. */
int ownfile_empty(int fd);

#endif
