/* log: the launcher's own event log (plaunch.log) and its messages to the terminal. */
#include "log.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int s_fd = -1;
static enum log_level s_stderr_level = LOG_WARN;
static char s_origin[64] = "";

static const char *const s_names[] = { "debug", "info", "warn", "error" };

int log_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0644); /* one job per file */
    if (fd < 0)
        return -1;
    if (s_fd >= 0)
        close(s_fd);
    s_fd = fd;
    return 0;
}

void log_close(void)
{
    if (s_fd >= 0)
        close(s_fd);
    s_fd = -1;
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

    if (s_fd >= 0) {
        char line[2304];
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s%s%-5s %s\n",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                         tm.tm_sec, ts.tv_nsec / 1000000, s_origin, s_origin[0] ? " " : "",
                         s_names[level], msg);
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        util_write_all(s_fd, line, (size_t)n);
    }
    if (level >= s_stderr_level) {
        char line[2100];
        int n = snprintf(line, sizeof line, "plaunch: %s%s\n",
                         level == LOG_WARN ? "warning: " : level == LOG_ERROR ? "error: " : "", msg);
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        util_write_all(STDERR_FILENO, line, (size_t)n);
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
        util_write_all(s_fd, text, len);
    if (to_stderr)
        util_write_all(STDERR_FILENO, text, len);
    errno = saved;
}
