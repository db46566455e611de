/* metrics_text: the Prometheus text format written into a bounded buffer (metrics_text.h says what). */
#include "launcher/metrics/metrics_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mtext_init(struct mtext *t, const char *const *base, int nbase)
{
    memset(t, 0, sizeof *t);
    t->nbase = nbase > 2 ? 4 : nbase * 2;
    for (int i = 0; i < t->nbase; i++)
        t->base[i] = base[i];
}

static int s_room(struct mtext *t, size_t more)
{
    if (t->truncated)
        return -1;
    if (t->len + more + 1 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + more + 1)
        cap *= 2;
    if (cap > MTEXT_MAX)
        cap = MTEXT_MAX;
    char *b = cap >= t->len + more + 1 ? realloc(t->buf, cap) : NULL;
    if (!b) {
        t->truncated = 1;
        return -1;
    }
    t->buf = b, t->cap = cap;
    return 0;
}

static void s_put(struct mtext *t, const char *s, size_t n)
{
    if (s_room(t, n) < 0)
        return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void s_puts(struct mtext *t, const char *s)
{
    s_put(t, s, strlen(s));
}

/* Escapes \ and line feed, and " too in label values. */
static void s_escaped(struct mtext *t, const char *v, int quote)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\\')
            s_put(t, "\\\\", 2);
        else if (*p == '\n')
            s_put(t, "\\n", 2);
        else if (*p == '"' && quote)
            s_put(t, "\\\"", 2);
        else
            s_put(t, p, 1);
    }
}

void mtext_escape_label(struct mtext *t, const char *v)
{
    s_escaped(t, v, 1);
}

/* A line that did not fit whole is taken back: the exposition never ends in half a line. */
static void s_line_end(struct mtext *t, size_t start)
{
    if (t->truncated && t->buf) {
        t->len = start < t->len ? start : t->len;
        t->buf[t->len] = '\0';
    }
}

void mtext_family(struct mtext *t, const char *name, const char *type, const char *help)
{
    size_t start = t->len;
    s_puts(t, "# HELP ");
    s_puts(t, name);
    s_put(t, " ", 1);
    s_escaped(t, help, 0);
    s_puts(t, "\n# TYPE ");
    s_puts(t, name);
    s_put(t, " ", 1);
    s_puts(t, type);
    s_put(t, "\n", 1);
    s_line_end(t, start);
}

static void s_label(struct mtext *t, int first, const char *name, const char *value)
{
    if (!first)
        s_put(t, ",", 1);
    s_puts(t, name);
    s_put(t, "=\"", 2);
    mtext_escape_label(t, value ? value : "");
    s_put(t, "\"", 1);
}

void mtext_sample(struct mtext *t, const char *name, const char *const *kv, int nkv, double value)
{
    char num[40];
    int first = 1;
    size_t start = t->len;
    s_puts(t, name);
    if (t->nbase + 2 * nkv > 0)
        s_put(t, "{", 1);
    for (int i = 0; i + 1 < t->nbase; i += 2, first = 0)
        s_label(t, first, t->base[i], t->base[i + 1]);
    for (int i = 0; i < nkv && i < MTEXT_LABELS_MAX; i++, first = 0)
        s_label(t, first, kv[2 * i], kv[2 * i + 1]);
    if (t->nbase + 2 * nkv > 0)
        s_put(t, "}", 1);
    if (isnan(value))
        snprintf(num, sizeof num, " NaN\n");
    else if (isinf(value))
        snprintf(num, sizeof num, " %s\n", value > 0 ? "+Inf" : "-Inf");
    else if (value == (double)(long long)value && fabs(value) < 1e15)
        snprintf(num, sizeof num, " %lld\n", (long long)value);
    else
        snprintf(num, sizeof num, " %.9g\n", value);
    s_puts(t, num);
    s_line_end(t, start);
}

const char *mtext_str(const struct mtext *t)
{
    return t->buf ? t->buf : "";
}

void mtext_free(struct mtext *t)
{
    free(t->buf);
    t->buf = NULL;
    t->len = t->cap = 0;
}
