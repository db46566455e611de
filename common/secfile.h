/* secfile: small secret files (private keys, tokens) read only when owner-only, written with an exact mode. */
#ifndef PLAUNCH_SECFILE_H
#define PLAUNCH_SECFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the regular file path into buf (NUL-terminated, so at most cap-1 bytes) and sets *len. Refuses a FIFO, a
 * device or a directory (common/optfile.h), a file over cap-1 bytes, and a file that group or others may read or
 * write, naming the chmod that fixes it; what names the file in messages ("key file"). 0, or -1 with a message. */
int secfile_read(const char *path, const char *what, char *buf, size_t cap, size_t *len, char *err, size_t errlen);

/* Creates path with exactly mode and contents data. Without overwrite an existing path is an error (O_EXCL); with
 * it the file is replaced atomically (temporary file + rename). 0, or -1 with a message; nothing is left behind on
 * failure. */
int secfile_write(const char *path, const void *data, size_t len, mode_t mode, int overwrite, char *err,
                  size_t errlen);

#endif
