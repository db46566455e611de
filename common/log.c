/* log: the launcher's own event log (plaunch.log) and its messages to the terminal. */
#include "common/log.h"

#include "common/console.h"
#include "common/ownfile.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int s_fd = -1;
static enum log_level s_stderr_level = LOG_WARN;
static char s_origin[64] = "";
static char s_path[4200];
static uint64_t s_lost;    /* bytes of plaunch.log that could not be written */
static uint64_t s_gap;     /* of which since the last successful write */
static int s_lost_errno;

static const char *const s_names[] = { "debug", "info", "warn", "error" };

int log_open(const char *dir, const char *name, int overwrite, char *err, size_t errlen)
{
    int dfd = ownfile_open_dir(dir, "log directory", "choose another --log-dir", err, errlen);
    if (dfd < 0)
        return -1;
    /* Earlier runs' lines are kept (emptied only when asked, and only once the file is proved ours). O_APPEND:
     * nodes of a job that share a machine and a --log-dir write this file side by side. */
    int fd = ownfile_open(dfd, dir, name, (overwrite ? OWNFILE_TRUNC : 0) | OWNFILE_APPEND, "choose another --log-dir",
                          err, errlen);
    close(dfd);
    if (fd < 0)
        return -1;
    if (s_fd >= 0)
        close(s_fd);
    s_fd = fd;
    snprintf(s_path, sizeof s_path, "%s/%s", dir, name);
    char hint[4300];
    snprintf(hint, sizeof hint, "every message is in %s", s_path);
    console_set_hint(2, hint);
    return 0;
}

uint64_t log_lost_bytes(void)
{
    return s_lost;
}

/* A write to plaunch.log: a failure is said at once on the console (once per run of failures) and counted; the
 * first write that works again first marks the gap in the file. */
static void s_file_write(const char *data, size_t len)
{
    if (s_gap > 0) {
        char mark[200];
        int n = snprintf(mark, sizeof mark, "==== plaunch: %llu bytes of this log were lost here (%s) ====\n",
                         (unsigned long long)s_gap, strerror(s_lost_errno));
        if (util_write_all(s_fd, mark, (size_t)n) == 0)
            s_gap = 0;
    }
    if (s_gap == 0 && util_write_all(s_fd, data, len) == 0)
        return;
    if (s_gap == 0) {
        char msg[4400];
        s_lost_errno = errno;
        int n = snprintf(msg, sizeof msg, "plaunch: error: cannot write %s: %s: the launcher's own log is losing "
                         "events (warnings and errors still show here); free space there or choose another "
                         "--log-dir\n", s_path, strerror(errno));
        console_put(STDERR_FILENO, msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
    }
    s_gap += len;
    s_lost += len;
}

/* One timestamped line into plaunch.log. */
static void s_file_line(enum log_level level, const char *msg)
{
    char line[2304];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s%s%-5s %s\n", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, s_origin,
                     s_origin[0] ? " " : "", s_names[level], msg);
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    s_file_write(line, (size_t)n);
}

void log_close(void)
{
    char summary[512];
    /* A reader of stdout or stderr that stalls gets a little time, never the power to keep plaunch from ending. */
    if (console_finish(1000, summary, sizeof summary) > 0 && s_fd >= 0)
        s_file_line(LOG_INFO, summary); /* the file only: the console is finished */
    if (s_fd >= 0)
        close(s_fd);
    s_fd = -1;
    s_gap = 0;
}

void log_set_stderr_level(enum log_level level)
{
    s_stderr_level = level;
}

void log_set_origin(const char *origin)
{
    snprintf(s_origin, sizeof s_origin, "%s", origin ? origin : "");
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
    int saved = errno;
    char msg[2048];
    va_list ap2;
    va_copy(ap2, ap);
    vsnprintf(msg, sizeof msg, fmt, ap2);
    va_end(ap2);

    if (s_fd >= 0)
        s_file_line(level, msg);
    if (level >= s_stderr_level) {
        char line[2100];
        int n = snprintf(line, sizeof line, "plaunch: %s%s\n",
                         level == LOG_WARN ? "warning: " : level == LOG_ERROR ? "error: " : "", msg);
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        console_put(STDERR_FILENO, line, (size_t)n);
    }
    errno = saved;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}

void log_block(const char *text, int to_stderr)
{
    int saved = errno;
    size_t len = strlen(text);
    if (s_fd >= 0)
        s_file_write(text, len);
    if (to_stderr)
        console_put(STDERR_FILENO, text, len);
    errno = saved;
}
