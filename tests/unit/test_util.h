/* test_util: helpers shared by the unit tests: scratch directories under /tmp and capture of stderr. */
#ifndef PLAUNCH_TEST_UTIL_H
#define PLAUNCH_TEST_UTIL_H

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

/* A fresh mkdtemp directory; the path is malloc'd. */
static inline char *tu_mkdtemp(const char *tag)
{
    char *path = malloc(256);
    snprintf(path, 256, "/tmp/plaunch-%s-XXXXXX", tag);
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        abort();
    }
    return path;
}

static inline int tu_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -rf path, then frees it. */
static inline void tu_rmtree(char *path)
{
    if (path)
        nftw(path, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
}

static inline mode_t tu_mode(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

/* Reads a whole small file into a static buffer ("" when missing). */
static inline const char *tu_slurp(const char *path)
{
    static char buf[65536];
    size_t n = 0;
    FILE *f = fopen(path, "re");
    if (f) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

static inline void tu_copy(const char *from, const char *to, mode_t mode)
{
    const char *data = tu_slurp(from);
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data) || fchmod(fd, mode) < 0) {
        perror(to);
        abort();
    }
    close(fd);
}

/* Output capture: tu_capture_begin(), run, then tu_capture_end() returns what was written to stdout and stderr
 * (static buffer). stdout is captured too because it carries the TAP stream. */
static int tu_saved_fd[2] = { -1, -1 };
static char tu_capture_path[64];

/* Lines of the file at path that contain text (-1: no such file). */
static inline int tu_count_lines(const char *path, const char *text)
{
    char line[4096];
    int n = 0;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    while (fgets(line, sizeof line, fp))
        n += strstr(line, text) != NULL;
    fclose(fp);
    return n;
}

/* A scratch log directory with this process's plaunch.log in it (its path into path), the terminal quiet below
 * LOG_ERROR + 1: for tests that read what was logged. 0, or -1; tu_log_end closes the log and removes it all. */
static inline int tu_log_begin(const char *tag, char **dir, char *path, size_t cap)
{
    char err[256];
    *dir = tu_mkdtemp(tag);
    snprintf(path, cap, "%s/plaunch.log", *dir);
    log_set_stderr_level(LOG_ERROR + 1);
    return log_open(*dir, "plaunch.log", 1, err, sizeof err);
}

static inline void tu_log_end(char *dir)
{
    log_close();
    tu_rmtree(dir);
}

static inline void tu_capture_begin(void)
{
    int fd;
    snprintf(tu_capture_path, sizeof tu_capture_path, "/tmp/plaunch-output-XXXXXX");
    fd = mkstemp(tu_capture_path);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++) {
        tu_saved_fd[i] = dup(STDOUT_FILENO + i);
        dup2(fd, STDOUT_FILENO + i);
    }
    close(fd);
}

static inline const char *tu_capture_end(void)
{
    const char *text;
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++) {
        dup2(tu_saved_fd[i], STDOUT_FILENO + i);
        close(tu_saved_fd[i]);
    }
    text = tu_slurp(tu_capture_path);
    unlink(tu_capture_path);
    return text;
}

#endif
