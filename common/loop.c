/* loop: the one event loop of a process: file descriptors and ZeroMQ sockets through zmq_poll, plus
 * one-shot deadlines. Handlers run on the loop's thread; a handler returning -1 stops the loop. */
#include "common/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

struct io_entry {
    loop_io_fn fn;
    void *arg;
    int dead;
};

struct timer_entry {
    int id;
    uint64_t deadline;
    loop_timer_fn fn;
    void *arg;
};

struct loop {
    zmq_pollitem_t *items;
    struct io_entry *entries;
    int nitems, cap;
    int dirty;
    struct timer_entry *timers;
    int ntimers, tcap;
    int next_timer_id;
    int stopped;
};

uint64_t loop_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

loop_t *loop_new(void)
{
    loop_t *l = calloc(1, sizeof *l);
    if (l)
        l->next_timer_id = 1;
    return l;
}

void loop_destroy(loop_t **loop)
{
    if (!loop || !*loop)
        return;
    free((*loop)->items);
    free((*loop)->entries);
    free((*loop)->timers);
    free(*loop);
    *loop = NULL;
}

static int s_add(loop_t *l, int fd, void *sock, short events, loop_io_fn fn, void *arg)
{
    for (int i = 0; i < l->nitems; i++) {
        if (!l->entries[i].dead && ((sock && l->items[i].socket == sock) || (!sock && l->items[i].fd == fd))) {
            errno = EEXIST;
            return -1;
        }
    }
    if (l->nitems == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        zmq_pollitem_t *items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items)
            return -1;
        l->items = items;
        struct io_entry *entries = realloc(l->entries, (size_t)cap * sizeof *entries);
        if (!entries)
            return -1;
        l->entries = entries;
        l->cap = cap;
    }
    l->items[l->nitems] = (zmq_pollitem_t){ .socket = sock, .fd = sock ? -1 : fd, .events = events };
    l->entries[l->nitems] = (struct io_entry){ .fn = fn, .arg = arg };
    l->nitems++;
    return 0;
}

int loop_add_fd(loop_t *loop, int fd, short events, loop_io_fn fn, void *arg)
{
    return s_add(loop, fd, NULL, events, fn, arg);
}

int loop_add_socket(loop_t *loop, void *sock, short events, loop_io_fn fn, void *arg)
{
    return s_add(loop, -1, sock, events, fn, arg);
}

static int s_remove(loop_t *l, int fd, void *sock)
{
    for (int i = 0; i < l->nitems; i++) {
        if (l->entries[i].dead)
            continue;
        if ((sock && l->items[i].socket == sock) || (!sock && !l->items[i].socket && l->items[i].fd == fd)) {
            l->entries[i].dead = 1;
            l->items[i].events = 0;
            l->dirty = 1;
            return 0;
        }
    }
    errno = ENOENT;
    return -1;
}

int loop_remove_fd(loop_t *loop, int fd)
{
    return s_remove(loop, fd, NULL);
}

int loop_remove_socket(loop_t *loop, void *sock)
{
    return s_remove(loop, -1, sock);
}

/* Drops entries removed during dispatch; only called between poll rounds so indexes stay valid. */
static void s_compact(loop_t *l)
{
    int j = 0;
    for (int i = 0; i < l->nitems; i++) {
        if (l->entries[i].dead)
            continue;
        l->items[j] = l->items[i];
        l->entries[j] = l->entries[i];
        j++;
    }
    l->nitems = j;
    l->dirty = 0;
}

int loop_timer_at(loop_t *l, uint64_t deadline_ns, loop_timer_fn fn, void *arg)
{
    if (l->ntimers == l->tcap) {
        int cap = l->tcap ? l->tcap * 2 : 8;
        struct timer_entry *t = realloc(l->timers, (size_t)cap * sizeof *t);
        if (!t)
            return -1;
        l->timers = t;
        l->tcap = cap;
    }
    int id = l->next_timer_id++;
    if (l->next_timer_id <= 0)
        l->next_timer_id = 1;
    l->timers[l->ntimers++] = (struct timer_entry){ .id = id, .deadline = deadline_ns, .fn = fn, .arg = arg };
    return id;
}

int loop_timer_after_ms(loop_t *l, int64_t ms, loop_timer_fn fn, void *arg)
{
    return loop_timer_at(l, loop_now_ns() + (uint64_t)(ms < 0 ? 0 : ms) * 1000000ull, fn, arg);
}

void loop_timer_cancel(loop_t *l, int timer_id)
{
    for (int i = 0; i < l->ntimers; i++) {
        if (l->timers[i].id == timer_id) {
            l->timers[i] = l->timers[--l->ntimers];
            return;
        }
    }
}

/* Fires every due timer, earliest first; returns -1 if a handler asked to stop with an error. */
static int s_fire_timers(loop_t *l)
{
    for (;;) {
        uint64_t now = loop_now_ns();
        int best = -1;
        for (int i = 0; i < l->ntimers; i++)
            if (l->timers[i].deadline <= now && (best < 0 || l->timers[i].deadline < l->timers[best].deadline))
                best = i;
        if (best < 0)
            return 0;
        struct timer_entry t = l->timers[best];
        l->timers[best] = l->timers[--l->ntimers];
        if (t.fn(l, t.id, t.arg) < 0)
            return -1;
        if (l->stopped)
            return 0;
    }
}

static long s_timeout_ms(loop_t *l)
{
    if (l->ntimers == 0)
        return -1;
    uint64_t now = loop_now_ns(), next = UINT64_MAX;
    for (int i = 0; i < l->ntimers; i++)
        if (l->timers[i].deadline < next)
            next = l->timers[i].deadline;
    if (next <= now)
        return 0;
    /* Round up so that a deadline is never polled for early and spun on. */
    return (long)((next - now + 999999) / 1000000);
}

int loop_run(loop_t *l)
{
    l->stopped = 0;
    while (!l->stopped) {
        if (l->dirty)
            s_compact(l);
        int n = zmq_poll(l->items, l->nitems, s_timeout_ms(l));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        int count = l->nitems;
        for (int i = 0; i < count && n > 0 && !l->stopped; i++) {
            short rev = l->items[i].revents;
            if (!rev || l->entries[i].dead)
                continue;
            n--;
            if (l->entries[i].fn(l, l->items[i].fd, l->items[i].socket, rev, l->entries[i].arg) < 0)
                return -1;
        }
        if (!l->stopped && s_fire_timers(l) < 0)
            return -1;
    }
    return 0;
}

void loop_stop(loop_t *loop)
{
    loop->stopped = 1;
}
