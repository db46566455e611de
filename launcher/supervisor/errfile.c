/* errfile: TORCHELASTIC_ERROR_FILE, one per rank in the log directory: its name, its removal before each
 * generation, and the lines the root-cause block quotes from it (torch's @record writes it on an exception). */
#include "launcher/supervisor/errfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

#define ERRFILE_MAX_BYTES (1 << 20) /* torch's file is a few KiB even for deep tracebacks */
#define ERRFILE_MSG_LINES 3

void errfile_path(const char *log_dir, int rank, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/error.%d.json", log_dir, rank);
}

void errfile_clear(const struct job *job)
{
    char path[PATH_MAX + 32];
    for (int i = 0; i < job->node.nworkers; i++) {
        errfile_path(job->node.log_dir, job->workers[i].rank, path, sizeof path);
        if (unlink(path) < 0 && errno != ENOENT)
            log_warn("cannot remove the old error file %s: %s; rank %d's failures will not quote it until it is "
                     "removed", path, strerror(errno), job->workers[i].rank);
    }
}

/* Copies len bytes of text as one printable line: control characters become '?' (the terminal is not the
 * worker's to drive), multi-byte UTF-8 is kept, long lines are cut with "...". */
static void s_line(char *out, const char *text, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < ERRFILE_LINE; i++) {
        unsigned char c = (unsigned char)text[i];
        out[n++] = c == '\t' ? ' ' : c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (len > ERRFILE_LINE - 1)
        memcpy(out + ERRFILE_LINE - 4, "...", 3);
    out[n] = '\0';
}

/* Finds the non-empty lines of text[0..size), keeping the first max (last = 0) or the last max (last = 1) in
 * order: their starts and lengths. Returns how many were kept. */
static int s_lines(const char *text, size_t size, int last, const char **start, size_t *len, int max)
{
    int seen = 0;
    for (const char *p = text, *stop = text + size; p < stop && (last || seen < max);) {
        const char *end = memchr(p, '\n', (size_t)(stop - p));
        size_t l = end ? (size_t)(end - p) : (size_t)(stop - p);
        while (l > 0 && (p[l - 1] == '\r' || p[l - 1] == ' '))
            l--;
        if (l > 0) { /* a ring of max entries when keeping the last ones */
            start[seen % max] = p;
            len[seen % max] = l;
            seen++;
        }
        if (!end)
            break;
        p = end + 1;
    }
    int n = seen < max ? seen : max, first = seen - n;
    const char *s2[ERRFILE_MAX_LINES + 1];
    size_t l2[ERRFILE_MAX_LINES + 1];
    for (int i = 0; i < n; i++) {
        s2[i] = start[(first + i) % max];
        l2[i] = len[(first + i) % max];
    }
    memcpy(start, s2, (size_t)n * sizeof *start);
    memcpy(len, l2, (size_t)n * sizeof *len);
    return n;
}

/* torch's layout: {"message": {"message": "Type: text", "extraInfo": {"py_callstack": "...", ...}}}, or a plain
 * string as "message" (its newer form). */
static int s_quote_json(json_t *root, char lines[][ERRFILE_LINE], int max)
{
    static const char none[] = "(JSON without torch's \"message\" field: not quoted)";
    json_t *msg = json_object_get(root, "message");
    const char *text = json_string_value(msg), *stack = NULL;
    if (json_is_object(msg)) {
        text = json_string_value(json_object_get(msg, "message"));
        stack = json_string_value(json_object_get(json_object_get(msg, "extraInfo"), "py_callstack"));
    }
    if (!text && !stack) {
        s_line(lines[0], none, sizeof none - 1);
        return 1;
    }
    const char *start[ERRFILE_MAX_LINES + 1];
    size_t len[ERRFILE_MAX_LINES + 1];
    int n = 0, k = text ? s_lines(text, strlen(text), 0, start, len, max < ERRFILE_MSG_LINES ? max : ERRFILE_MSG_LINES)
                        : 0;
    for (int i = 0; i < k; i++)
        s_line(lines[n++], start[i], len[i]);
    if (!stack || n == max)
        return n;
    /* The traceback ends with the message again: quote the frames above its last "Type: text" line. */
    size_t size = strlen(stack);
    for (const char *p = stack; k > 0 && (p = strstr(p, text)) != NULL; p++)
        if (p == stack || p[-1] == '\n')
            size = (size_t)(p - stack);
    k = s_lines(stack, size, 1, start, len, max - n);
    for (int i = 0; i < k; i++)
        s_line(lines[n++], start[i], len[i]);
    return n;
}

int errfile_quote(const char *path, uint64_t since_unix_ms, char lines[][ERRFILE_LINE], int max)
{
    char why[ERRFILE_LINE + 64];
    int n = 0;
    if (max < 1)
        return 0;
    if (max > ERRFILE_MAX_LINES)
        max = ERRFILE_MAX_LINES;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    struct stat st;
    if (fd < 0) {
        snprintf(why, sizeof why, "(error file not read: %s)", errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    } else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        snprintf(why, sizeof why, "(error file not read: not a regular file of this user)");
    } else if ((uint64_t)st.st_mtim.tv_sec * 1000 + (uint64_t)st.st_mtim.tv_nsec / 1000000 + 1000 < since_unix_ms) {
        close(fd);
        return 0; /* older than the worker: one that could not be removed, not this failure's */
    } else if (st.st_size > ERRFILE_MAX_BYTES) {
        snprintf(why, sizeof why, "(error file not read: %lld bytes, more than torch writes)", (long long)st.st_size);
    } else {
        char *buf = malloc((size_t)st.st_size + 1);
        ssize_t got = 0, r = 1;
        while (buf && r > 0 && got < st.st_size)
            if ((r = read(fd, buf + got, (size_t)(st.st_size - got))) > 0)
                got += r;
        json_error_t jerr;
        json_t *root = got > 0 ? json_loadb(buf, (size_t)got, 0, &jerr) : NULL;
        if (root) {
            if ((n = s_quote_json(root, lines, max)) == 0)
                snprintf(why, sizeof why, "(error file with an empty message)");
        } else if (got > 0) {
            char head[ERRFILE_LINE];
            s_line(head, buf, (size_t)got < 48 ? (size_t)got : 48);
            snprintf(why, sizeof why, "(not torch's JSON error file; it begins: %s)", head);
        } else {
            snprintf(why, sizeof why, "(error file is empty)");
        }
        json_decref(root);
        free(buf);
        if (n > 0) {
            close(fd);
            return n;
        }
    }
    if (fd >= 0)
        close(fd);
    s_line(lines[0], why, strlen(why));
    return 1;
}
