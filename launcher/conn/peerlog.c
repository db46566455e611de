/* peerlog: bounded warnings about unauthenticated peers: a few detailed lines, then one summary per kind and
 * address each interval. */
#include "launcher/conn/peerlog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define RL_KINDS 16 /* kinds of "other addresses" totals */

struct rl_entry {
    const struct peerlog_kind *kind; /* NULL: free */
    char addr[64];                   /* "" for the total of other addresses */
    long events, logged;
};

struct peerlog {
    loop_t *loop;
    int interval_ms;
    int timer;
    int lines;                                   /* detailed lines in this interval */
    uint64_t since_ns;                           /* start of this interval */
    struct rl_entry addrs[PEERLOG_ADDRS], others[RL_KINDS];
    long unsorted;                               /* events of a kind beyond RL_KINDS: never expected */
};

peerlog_t *peerlog_new(loop_t *loop, int interval_ms)
{
    peerlog_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->loop = loop;
    r->interval_ms = interval_ms > 0 ? interval_ms : PEERLOG_INTERVAL_MS;
    return r;
}

void peerlog_destroy(peerlog_t **pr)
{
    if (!pr || !*pr)
        return;
    peerlog_flush(*pr);
    free(*pr);
    *pr = NULL;
}

/* "19,873": counts of a flood are easier to read grouped. */
static const char *s_grouped(long n, char *buf, size_t len)
{
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%ld", n < 0 ? 0 : n), o = 0;
    for (int i = 0; i < nd && o + 2 < (int)len; i++) {
        if (i > 0 && (nd - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    return buf;
}

static void s_summary(const struct rl_entry *e, int secs)
{
    char n[40];
    if (e->events <= e->logged)
        return; /* every event already has its line */
    const char *noun = e->events == 1 ? e->kind->one : e->kind->many;
    if (e->addr[0])
        log_warn("%s %s %s from %s in the last %d s: %s%s", e->kind->verb, s_grouped(e->events, n, sizeof n), noun,
                 e->addr, secs, e->kind->why, e->logged ? " (the first ones are logged above)" : "");
    else
        log_warn("%s %s %s from other addresses in the last %d s: %s", e->kind->verb,
                 s_grouped(e->events, n, sizeof n), noun, secs, e->kind->why);
}

void peerlog_flush(peerlog_t *r)
{
    if (!r || !r->since_ns)
        return;
    /* the interval as it was: a whole one from the timer, less when flushed early */
    int secs = (int)((loop_now_ns() - r->since_ns + 999999999) / 1000000000);
    for (int i = 0; i < PEERLOG_ADDRS && r->addrs[i].kind; i++)
        s_summary(&r->addrs[i], secs);
    for (int i = 0; i < RL_KINDS && r->others[i].kind; i++)
        s_summary(&r->others[i], secs);
    if (r->unsorted)
        log_warn("%ld more events from unauthenticated peers in the last %d s", r->unsorted, secs);
    memset(r->addrs, 0, sizeof r->addrs);
    memset(r->others, 0, sizeof r->others);
    r->unsorted = 0;
    r->lines = 0;
    r->since_ns = 0;
    if (r->timer > 0)
        loop_timer_cancel(r->loop, r->timer);
    r->timer = 0;
}

static int s_on_interval(loop_t *loop, int id, void *arg)
{
    peerlog_t *r = arg;
    if (id == r->timer) {
        r->timer = 0;
        peerlog_flush(r);
    }
    return 0;
}

/* The entry counting kind from addr: its own while there is room, else the total of other addresses. */
static struct rl_entry *s_entry(peerlog_t *r, const struct peerlog_kind *kind, const char *addr)
{
    if (!r->since_ns) { /* the first event of an interval */
        r->since_ns = loop_now_ns();
        if (r->loop)
            r->timer = loop_timer_after_ms(r->loop, r->interval_ms, s_on_interval, r);
    }
    for (int i = 0; i < PEERLOG_ADDRS; i++) {
        struct rl_entry *e = &r->addrs[i];
        if (!e->kind) {
            e->kind = kind;
            snprintf(e->addr, sizeof e->addr, "%s", addr && *addr ? addr : "?");
            return e;
        }
        if (e->kind == kind && strcmp(e->addr, addr && *addr ? addr : "?") == 0)
            return e;
    }
    for (int i = 0; i < RL_KINDS; i++) {
        struct rl_entry *e = &r->others[i];
        if (!e->kind)
            e->kind = kind;
        if (e->kind == kind)
            return e;
    }
    return NULL;
}

int peerlog_warn(peerlog_t *r, const struct peerlog_kind *kind, const char *addr, const char *fmt, ...)
{
    struct rl_entry *e = s_entry(r, kind, addr);
    if (!e) {
        r->unsorted++;
        return 0;
    }
    e->events++;
    if (!e->addr[0] || e->logged >= PEERLOG_BURST || r->lines >= PEERLOG_LINES)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(LOG_WARN, fmt, ap);
    va_end(ap);
    e->logged++;
    r->lines++;
    return 1;
}

void peerlog_count(peerlog_t *r, const struct peerlog_kind *kind, const char *addr, long n)
{
    struct rl_entry *e = n > 0 ? s_entry(r, kind, addr) : NULL;
    if (e)
        e->events += n;
    else if (n > 0)
        r->unsorted += n;
}
