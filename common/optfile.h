/* optfile: files that options name (config, token, certificates and keys, probe input): opened without blocking
 * (a FIFO would otherwise block the open, with signals blocked), refused unless a regular file (a device such as
 * /dev/zero never ends), and read within a documented bound. A symlink to a regular file is fine. */
#ifndef PLAUNCH_OPTFILE_H
#define PLAUNCH_OPTFILE_H

#include <stddef.h>
#include <stdio.h>

/* The bounds, documented in plaunch(1). */
#define OPTFILE_MAX_CONFIG (1u << 20)   /* --config */
#define OPTFILE_MAX_TOKEN 4096u         /* --token-file */
#define OPTFILE_MAX_PEM (64u << 10)     /* certificates and keys */
#define OPTFILE_MAX_REPORT (64u << 20)  /* plaunch probe --report */
#define OPTFILE_MAX_THRESHOLDS (1u << 20) /* plaunch probe --thresholds */

/* Opens path for reading: a regular file of at most max_bytes, else -1 with a message naming what ("config file")
 * and the path, e.g. "config file /dev/zero is a character device, not a regular file". Returns the descriptor
 * (close-on-exec, blocking again). */
int optfile_open(const char *path, const char *what, size_t max_bytes, char *err, size_t errlen);
/* The same as a stdio stream ("re"); NULL + message. */
FILE *optfile_fopen(const char *path, const char *what, size_t max_bytes, char *err, size_t errlen);
/* Reads all of fd (opened by optfile_open) into buf[cap], NUL-terminated: at most cap-1 bytes, and refuses a file
 * that turns out longer (one that grew, or lied about its size). 0, or -1 with a message; the caller closes fd. */
int optfile_read_fd(int fd, const char *path, const char *what, char *buf, size_t cap, size_t *len, char *err,
                    size_t errlen);

#endif
