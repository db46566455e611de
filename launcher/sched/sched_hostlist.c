/* sched_hostlist: Slurm's compressed host lists expanded in scontrol's order, in bounded time and no allocation. */
#include "launcher/sched/sched_hostlist.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Counts are capped at S_CAP: no int can tell larger ones apart, and the cap keeps sums and products from
 * overflowing. Indexes below S_CAP decompose the same with capped counts as with true ones. */
#define S_CAP ((uint64_t)INT_MAX + 1)
/* Characters of the expression, or of a bad part of it, quoted in a message. */
#define S_QUOTE_MAX 40
/* printf arguments for "%.*s%s": a part of length n, shortened with "..." past S_QUOTE_MAX. */
#define S_PART(p, n) (int)((n) > S_QUOTE_MAX ? S_QUOTE_MAX : (n)), (p), ((n) > S_QUOTE_MAX ? "..." : "")

struct s_ctx {
    const char *expr;
    char *err;
    size_t errlen;
};

struct s_range {
    uint64_t lo, hi;
    int width;  /* digits of lo as written: every number of the range is zero-padded to it */
};

struct s_group {
    const char *open, *close;  /* its '[' and ']' */
    uint64_t count;            /* hosts it gives, capped at S_CAP */
    const char *at, *next;     /* walk: the range being walked, and the ',' or ']' after it */
    struct s_range r;
    uint64_t v;                /* walk: the current number */
};

struct s_item {
    const char *text;  /* up to the ',' or NUL that ends it */
    int ngroups;
    struct s_group g[SCHED_HOSTLIST_GROUPS_MAX];
    uint64_t count;    /* capped at S_CAP */
};

/* Writes "'EXPR': " and the message into err, control characters shown as '?'; returns -1. */
static int s_fail(const struct s_ctx *c, const char *fmt, ...)
{
    if (c->err == NULL || c->errlen == 0)
        return -1;
    size_t len = strnlen(c->expr, S_QUOTE_MAX + 1);
    int n = snprintf(c->err, c->errlen, "'%.*s%s': ", S_PART(c->expr, len));
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    for (char *q = c->err; *q != '\0'; q++)
        if ((unsigned char)*q < ' ' || *q == 0x7f)
            *q = '?';
    return -1;
}

/* 1-based position of p in the expression, for messages. */
static long s_pos(const struct s_ctx *c, const char *p)
{
    return (long)(p - c->expr) + 1;
}

static int s_is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int s_count_digits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static uint64_t s_add_cap(uint64_t a, uint64_t b)
{
    return a + b >= S_CAP ? S_CAP : a + b;
}

static uint64_t s_mul_cap(uint64_t a, uint64_t b)
{
    return (a != 0 && b > (S_CAP - 1) / a) ? S_CAP : a * b;
}

static uint64_t s_range_count(const struct s_range *r)
{
    return r->hi - r->lo >= S_CAP - 1 ? S_CAP : r->hi - r->lo + 1;
}

/* Reads the run of digits at *p (one at least) into v and moves *p past it; 0, or -1 with a message. */
static int s_read_number(const struct s_ctx *c, const char **p, uint64_t *v)
{
    const char *s = *p, *e = s;
    while (s_is_digit(*e))
        e++;
    size_t n = (size_t)(e - s);
    if (n > SCHED_HOSTLIST_NAME_MAX)
        return s_fail(c, "number %.*s%s has %zu digits (at most %d)", S_PART(s, n), n, SCHED_HOSTLIST_NAME_MAX);
    uint64_t x = 0;
    for (const char *q = s; q < e; q++) {
        unsigned d = (unsigned)(*q - '0');
        if (x > (UINT64_MAX - d) / 10)
            return s_fail(c, "number %.*s%s is too large (at most %" PRIu64 ")", S_PART(s, n), UINT64_MAX);
        x = x * 10 + d;
    }
    *v = x;
    *p = e;
    return 0;
}

/* Parses the range "N" or "N-M" at s, which must end at a ',' or at close. Returns what follows it (that ',' or
 * close), or NULL with a message naming the range. */
static const char *s_parse_range(const struct s_ctx *c, const char *s, const char *close, struct s_range *r)
{
    const char *e = s;
    while (e < close && *e != ',')
        e++;
    size_t n = (size_t)(e - s);
    if (n == 0) {
        s_fail(c, "empty range at character %ld (in '[...]' every part between commas is N or N-M)", s_pos(c, s));
        return NULL;
    }
    const char *p = s;
    int bad = 0;
    if (s_is_digit(*p)) {
        if (s_read_number(c, &p, &r->lo) < 0)
            return NULL;
        r->width = (int)(p - s);
        r->hi = r->lo;
        if (*p == '-') {
            p++;
            if (!s_is_digit(*p))
                bad = 1;
            else if (s_read_number(c, &p, &r->hi) < 0)
                return NULL;
        }
    }
    if (bad || p != e) {
        s_fail(c, "range '%.*s%s' at character %ld is not N or N-M (decimal digits only)", S_PART(s, n),
               s_pos(c, s));
        return NULL;
    }
    if (r->hi < r->lo) {
        s_fail(c, "range %.*s%s goes down", S_PART(s, n));
        return NULL;
    }
    return e;
}

/* Checks the group g->open..g->close and sets its count; *widest: the longest number it prints. 0 or -1. */
static int s_scan_group(const struct s_ctx *c, struct s_group *g, int *widest)
{
    uint64_t count = 0;
    int w = 0;
    for (const char *p = g->open + 1;;) {
        struct s_range r;
        const char *next = s_parse_range(c, p, g->close, &r);
        if (next == NULL)
            return -1;
        count = s_add_cap(count, s_range_count(&r));
        int digits = s_count_digits(r.hi);
        w = r.width > w ? r.width : w;
        w = digits > w ? digits : w;
        if (next == g->close)
            break;
        p = next + 1;
    }
    g->count = count;
    *widest = w;
    return 0;
}

static const char *s_describe_char(unsigned char ch, char *buf, size_t cap)
{
    if (ch == ' ')
        return "a space";
    if (ch == '\t')
        return "a tab";
    if (ch == '\n')
        return "a newline";
    snprintf(buf, cap, "control character 0x%02x", ch);
    return buf;
}

/* Parses the item at p, up to the next ',' or the end, into it. Returns the ',' or NUL that ends it, or NULL
 * with a message. */
static const char *s_parse_item(const struct s_ctx *c, const char *p, struct s_item *it)
{
    size_t name = 0;  /* longest name it gives */
    const char *q = p;
    it->text = p;
    it->ngroups = 0;
    it->count = 1;
    for (; *q != '\0' && *q != ','; q++) {
        unsigned char ch = (unsigned char)*q;
        if (ch == '[') {
            if (it->ngroups == SCHED_HOSTLIST_GROUPS_MAX) {
                s_fail(c, "more than %d bracket groups in one item (the one at character %ld)",
                       SCHED_HOSTLIST_GROUPS_MAX, s_pos(c, p));
                return NULL;
            }
            const char *close = q + 1;
            while (*close != '\0' && *close != ']' && *close != '[')
                close++;
            if (*close == '[') {
                s_fail(c, "'[' inside '[' at character %ld", s_pos(c, close));
                return NULL;
            }
            if (*close == '\0') {
                s_fail(c, "'[' at character %ld is never closed", s_pos(c, q));
                return NULL;
            }
            struct s_group *g = &it->g[it->ngroups++];
            int widest;
            g->open = q;
            g->close = close;
            if (s_scan_group(c, g, &widest) < 0)
                return NULL;
            name += (size_t)widest;
            it->count = s_mul_cap(it->count, g->count);
            q = close;
        } else if (ch == ']') {
            s_fail(c, "']' at character %ld without '['", s_pos(c, q));
            return NULL;
        } else if (ch <= ' ' || ch == 0x7f) {
            char buf[32];
            s_fail(c, "%s at character %ld (not allowed in a host list)", s_describe_char(ch, buf, sizeof buf),
                   s_pos(c, q));
            return NULL;
        } else {
            name++;
        }
    }
    if (q == p) {
        s_fail(c, "empty item at character %ld (two commas in a row, or one at an end)", s_pos(c, p));
        return NULL;
    }
    if (it->ngroups > 0 && q[-1] != ']') {
        const char *tail = it->g[it->ngroups - 1].close + 1;
        size_t n = (size_t)(q - tail);
        s_fail(c, "'%.*s%s' at character %ld follows the last ']' of an item (nothing may)", S_PART(tail, n),
               s_pos(c, tail));
        return NULL;
    }
    if (name > SCHED_HOSTLIST_NAME_MAX) {
        size_t n = (size_t)(q - p);
        s_fail(c, "item '%.*s%s' gives names of %zu characters (at most %d)", S_PART(p, n), name,
               SCHED_HOSTLIST_NAME_MAX);
        return NULL;
    }
    return q;
}

/* Checks the whole expression; the number of hosts (at most max), or -1 with a message. */
static int s_scan(const struct s_ctx *c, int max)
{
    if (*c->expr == '\0')
        return s_fail(c, "the host list is empty");
    uint64_t total = 0;
    for (const char *p = c->expr;;) {
        struct s_item it;
        const char *end = s_parse_item(c, p, &it);
        if (end == NULL)
            return -1;
        total = s_add_cap(total, it.count);
        if (total > (uint64_t)max)
            return s_fail(c, "more than %d hosts (counted up to the item at character %ld)", max, s_pos(c, p));
        if (*end == '\0')
            return (int)total;
        p = end + 1;
    }
}

/* Loads the range of g at g->at (already checked). */
static void s_load_range(const struct s_ctx *c, struct s_group *g)
{
    g->next = s_parse_range(c, g->at, g->close, &g->r);
    g->v = g->r.lo;
}

/* The group walked by step i of the odometer: the last group varies fastest, then the first, second, ... */
static struct s_group *s_odometer_group(struct s_item *it, int i)
{
    return &it->g[i == 0 ? it->ngroups - 1 : i - 1];
}

/* Moves the item's walk to its next host; 0 when it was at its last. */
static int s_advance(const struct s_ctx *c, struct s_item *it)
{
    for (int i = 0; i < it->ngroups; i++) {
        struct s_group *g = s_odometer_group(it, i);
        if (g->v < g->r.hi) {
            g->v++;
            return 1;
        }
        int more = *g->next == ',';
        g->at = more ? g->next + 1 : g->open + 1;
        s_load_range(c, g);
        if (more)
            return 1;
    }
    return 0;
}

/* The current host of the item's walk into name (SCHED_HOSTLIST_NAME_MAX + 1 bytes, enough once checked). */
static void s_format_name(const struct s_item *it, char *name)
{
    size_t pos = 0, cap = SCHED_HOSTLIST_NAME_MAX + 1;
    const char *lit = it->text;
    for (int i = 0; i < it->ngroups; i++) {
        const struct s_group *g = &it->g[i];
        size_t n = (size_t)(g->open - lit);
        memcpy(name + pos, lit, n);
        pos += n;
        int w = snprintf(name + pos, cap - pos, "%0*" PRIu64, g->r.width, g->v);
        pos += (size_t)w;
        lit = g->close + 1;
    }
    if (it->ngroups == 0) {
        size_t n = strcspn(lit, ",");
        memcpy(name + pos, lit, n);
        pos += n;
    }
    name[pos] = '\0';
}

int sched_hostlist_each(const char *expr, int max, sched_hostlist_fn fn, void *arg, char *err, size_t errlen)
{
    struct s_ctx c = { expr ? expr : "", err, errlen };
    if (max < 1)
        return s_fail(&c, "at most %d hosts asked for (at least 1 is needed)", max);
    int total = s_scan(&c, max);
    if (total < 0 || fn == NULL)
        return total;
    int index = 0;
    for (const char *p = c.expr;;) {
        struct s_item it;
        char name[SCHED_HOSTLIST_NAME_MAX + 1];
        const char *end = s_parse_item(&c, p, &it);
        for (int i = 0; i < it.ngroups; i++) {
            it.g[i].at = it.g[i].open + 1;
            s_load_range(&c, &it.g[i]);
        }
        do {
            s_format_name(&it, name);
            if (fn(arg, index, name) != 0) {
                s_fail(&c, "stopped by the caller at host %d '%s'", index, name);
                return SCHED_HOSTLIST_STOPPED;
            }
            index++;
        } while (s_advance(&c, &it));
        if (*end == '\0')
            return total;
        p = end + 1;
    }
}

/* Sets g's walk to its number at offset off (< g->count). */
static void s_seek_group(const struct s_ctx *c, struct s_group *g, uint64_t off)
{
    for (g->at = g->open + 1;; g->at = g->next + 1) {
        s_load_range(c, g);
        uint64_t n = s_range_count(&g->r);
        if (off < n) {
            g->v = g->r.lo + off;
            return;
        }
        off -= n;
    }
}

int sched_hostlist_nth(const char *expr, int index, char *out, size_t cap, char *err, size_t errlen)
{
    struct s_ctx c = { expr ? expr : "", err, errlen };
    if (out != NULL && cap > 0)
        out[0] = '\0';
    int total = s_scan(&c, INT_MAX);
    if (total < 0)
        return -1;
    if (index < 0 || index >= total)
        return s_fail(&c, "no host at index %d (the list has %d: 0..%d)", index, total, total - 1);
    struct s_item it;
    uint64_t left = (uint64_t)index;
    for (const char *p = c.expr;;) {
        const char *end = s_parse_item(&c, p, &it);
        if (left < it.count)
            break;
        left -= it.count;
        p = end + 1;
    }
    for (int i = 0; i < it.ngroups; i++) {
        struct s_group *g = s_odometer_group(&it, i);
        s_seek_group(&c, g, left % g->count);
        left /= g->count;
    }
    char name[SCHED_HOSTLIST_NAME_MAX + 1];
    s_format_name(&it, name);
    size_t len = strlen(name);
    if (out == NULL || len >= cap)
        return s_fail(&c, "host %d '%s' has %zu characters, more than fit in %zu bytes", index, name, len, cap);
    memcpy(out, name, len + 1);
    return 0;
}
