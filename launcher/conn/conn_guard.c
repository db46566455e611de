/* conn_guard: the coordinator's table of accepted connections, with caps and deadlines for those that have not
 * authenticated, and a safe way to close one that libzmq owns. */
#include "launcher/conn/conn_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "launcher/conn/conn_addrs.h"

#define CG_EVICT_ON_EMFILE 16 /* connections closed at once when accept(2) runs out of descriptors */
#define CG_STALL_SCAN 256     /* over the total cap, the oldest this many are looked at for a stalled one */

/* One end of a TCP connection, as getpeername/getsockname give it: what proves a descriptor is still ours. */
struct cg_end {
    sa_family_t family;
    uint16_t port;
    unsigned char ip[16];
};

struct conn {
    enum conn_state state;
    int tag;
    int prev, next;           /* in the unauthenticated list (NEW, PENDING) or the refused list; -1 ends */
    int pprev, pnext;         /* PENDING: in the list of handshakes under way */
    uint64_t serial;          /* which connection this is (conn_guard_serial) */
    uint64_t since_ns;        /* connect (unauthenticated) or refusal (refused): what its deadline counts from */
    uint64_t last_ns;         /* the last sign of life: connect or a frame */
    struct cg_end remote, local;
    char addr[INET6_ADDRSTRLEN];
};

struct cg_list {
    int head, tail, n;
};


struct conn_guard {
    loop_t *loop;
    struct conn_limits lim;
    conn_end_fn on_end;
    void *arg;
    struct conn *c;           /* indexed by descriptor */
    int cap;
    struct cg_list unauth, refused, pend;
    int pending;              /* CONN_PENDING entries (the pend list) */
    conn_addrs_t *addrs;      /* unauthenticated connections by remote address */
    uint64_t serial;
    int timer;
    uint64_t timer_at;
};

static void s_arm(conn_guard_t *g);

void conn_guard_limits(struct conn_limits *lim, int expected)
{
    struct rlimit rl;
    long fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 1024;
    int n = fds / 4 > CONN_MAX_UNAUTH ? CONN_MAX_UNAUTH : fds / 4 < 16 ? 16 : (int)(fds / 4), total = n;
    /* The nodes of a big job connect together: every one of them is unauthenticated until its turn comes. */
    if (expected > n / 2) {
        long want = (long)expected + n, room = fds - 512;
        total = (int)(want < room ? want : room);
        total = total < n ? n : total;
    }
    *lim = (struct conn_limits){ .max_unauth = total, .max_per_addr = n / 2,
                                 .max_pending = n / 4 < 4 ? 4 : n / 4, .auth_ms = CONN_AUTH_MS,
                                 .stall_ms = CONN_STALL_MS, .linger_ms = CONN_LINGER_MS };
}

conn_guard_t *conn_guard_new(loop_t *loop, const struct conn_limits *lim, conn_end_fn on_end, void *arg)
{
    conn_guard_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->loop = loop;
    g->lim = *lim;
    g->on_end = on_end;
    g->arg = arg;
    g->unauth = g->refused = g->pend = (struct cg_list){ -1, -1, 0 };
    if (!(g->addrs = conn_addrs_new())) {
        free(g);
        return NULL;
    }
    return g;
}

void conn_guard_destroy(conn_guard_t **pg)
{
    if (!pg || !*pg)
        return;
    conn_guard_t *g = *pg;
    if (g->timer > 0)
        loop_timer_cancel(g->loop, g->timer);
    conn_addrs_destroy(&g->addrs);
    free(g->c);
    free(g);
    *pg = NULL;
}

static struct conn *s_get(const conn_guard_t *g, int fd)
{
    return fd >= 0 && fd < g->cap ? &g->c[fd] : NULL;
}

/* The entry of fd, growing the table (geometrically: descriptors are small and dense). */
static struct conn *s_slot(conn_guard_t *g, int fd)
{
    if (fd < 0)
        return NULL;
    if (fd >= g->cap) {
        int cap = g->cap ? g->cap : 64;
        while (cap <= fd)
            cap *= 2;
        struct conn *c = realloc(g->c, (size_t)cap * sizeof *c);
        if (!c)
            return NULL;
        memset(c + g->cap, 0, (size_t)(cap - g->cap) * sizeof *c);
        g->c = c;
        g->cap = cap;
    }
    return &g->c[fd];
}

/* ---- lists ----------------------------------------------------------------------------------------------- */

/* The links of fd for list l: the pend list has its own, the others share prev/next. */
static int *s_prev(conn_guard_t *g, const struct cg_list *l, int fd)
{
    return l == &g->pend ? &g->c[fd].pprev : &g->c[fd].prev;
}

static int *s_next(conn_guard_t *g, const struct cg_list *l, int fd)
{
    return l == &g->pend ? &g->c[fd].pnext : &g->c[fd].next;
}

static void s_link(conn_guard_t *g, struct cg_list *l, int fd)
{
    *s_prev(g, l, fd) = l->tail;
    *s_next(g, l, fd) = -1;
    if (l->tail >= 0)
        *s_next(g, l, l->tail) = fd;
    else
        l->head = fd;
    l->tail = fd;
    l->n++;
}

static void s_unlink(conn_guard_t *g, struct cg_list *l, int fd)
{
    int prev = *s_prev(g, l, fd), next = *s_next(g, l, fd);
    if (prev >= 0)
        *s_next(g, l, prev) = next;
    else
        l->head = next;
    if (next >= 0)
        *s_prev(g, l, next) = prev;
    else
        l->tail = prev;
    *s_prev(g, l, fd) = *s_next(g, l, fd) = -1;
    l->n--;
}

/* Takes fd out of whatever list and count its state puts it in. */
static void s_detach(conn_guard_t *g, int fd)
{
    struct conn *c = &g->c[fd];
    if (c->state == CONN_NEW || c->state == CONN_PENDING) {
        s_unlink(g, &g->unauth, fd);
        conn_addrs_remove(g->addrs, fd);
    } else if (c->state == CONN_REFUSED) {
        s_unlink(g, &g->refused, fd);
    }
    if (c->state == CONN_PENDING) {
        s_unlink(g, &g->pend, fd);
        g->pending--;
    }
}

/* ---- identity -------------------------------------------------------------------------------------------- */

static int s_end_of(int fd, int remote, struct cg_end *e)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if ((remote ? getpeername(fd, (struct sockaddr *)&ss, &sl) : getsockname(fd, (struct sockaddr *)&ss, &sl)) < 0)
        return -1;
    memset(e, 0, sizeof *e);
    e->family = ss.ss_family;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&ss;
        e->port = ntohs(s->sin_port);
        memcpy(e->ip, &s->sin_addr, 4);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&ss;
        e->port = ntohs(s->sin6_port);
        memcpy(e->ip, &s->sin6_addr, 16);
    } else {
        return -1; /* not a TCP/IP socket: never one of ours */
    }
    return 0;
}

static int s_same_end(const struct cg_end *a, const struct cg_end *b)
{
    return a->family == b->family && a->port == b->port && memcmp(a->ip, b->ip, sizeof a->ip) == 0;
}

/* 1 when fd still is the connection recorded in c: the same two ends (a TCP 4-tuple is unique while it lives). */
static int s_proven(int fd, const struct conn *c)
{
    struct cg_end r, l;
    return s_end_of(fd, 1, &r) == 0 && s_end_of(fd, 0, &l) == 0 && s_same_end(&r, &c->remote) &&
           s_same_end(&l, &c->local);
}

/* ---- ending connections ------------------------------------------------------------------------------------ */

/* Ends fd's record: shuts the connection down when we close it (why != CONN_GONE) and it is proven ours, then
 * tells the owner. The entry stays CLOSING until libzmq reports the close (or FREE when libzmq already did). */
static void s_end(conn_guard_t *g, int fd, enum conn_why why)
{
    struct conn *c = &g->c[fd];
    enum conn_state was = c->state;
    int tag = c->tag;
    char addr[sizeof c->addr];
    if (was == CONN_FREE || was == CONN_CLOSING)
        return;
    s_detach(g, fd);
    memcpy(addr, c->addr, sizeof addr);
    c->tag = -1;
    if (why == CONN_GONE) {
        c->state = CONN_FREE;
    } else {
        c->state = CONN_CLOSING;
        /* libzmq sees end of stream and closes the descriptor itself; a descriptor that is no longer this
         * connection (closed and reused before the monitor said so) is left alone. */
        if (s_proven(fd, c))
            shutdown(fd, SHUT_RDWR);
    }
    s_arm(g);
    if (g->on_end)
        g->on_end(g->arg, fd, tag, was, why, addr);
}

static int s_on_timer(loop_t *loop, int id, void *arg)
{
    conn_guard_t *g = arg;
    if (id != g->timer)
        return 0;
    g->timer = 0;
    g->timer_at = 0;
    uint64_t now = loop_now_ns();
    while (g->unauth.head >= 0 && g->c[g->unauth.head].since_ns + (uint64_t)g->lim.auth_ms * 1000000 <= now)
        s_end(g, g->unauth.head, CONN_DEADLINE);
    while (g->refused.head >= 0 && g->c[g->refused.head].since_ns + (uint64_t)g->lim.linger_ms * 1000000 <= now)
        s_end(g, g->refused.head, CONN_REFUSAL);
    s_arm(g);
    return 0;
}

/* One timer, at the earliest deadline: both lists are in deadline order, so only their heads matter. */
static void s_arm(conn_guard_t *g)
{
    uint64_t at = 0;
    if (g->unauth.head >= 0)
        at = g->c[g->unauth.head].since_ns + (uint64_t)g->lim.auth_ms * 1000000;
    if (g->refused.head >= 0) {
        uint64_t r = g->c[g->refused.head].since_ns + (uint64_t)g->lim.linger_ms * 1000000;
        at = at && at < r ? at : r;
    }
    if (at == g->timer_at)
        return;
    if (g->timer > 0)
        loop_timer_cancel(g->loop, g->timer);
    g->timer = at ? loop_timer_at(g->loop, at, s_on_timer, g) : 0;
    g->timer_at = g->timer > 0 ? at : 0;
}

/* The oldest unauthenticated connection that has been silent for stall_ms: a handshake under way (pending), one
 * from remote's address (remote), or among the CG_STALL_SCAN oldest (neither); -1 when none is. Every walk is
 * bounded by a cap, so a flood cannot make each new connection cost more. */
static int s_stalled(conn_guard_t *g, int pending, const struct cg_end *remote, uint64_t now)
{
    uint64_t stall = (uint64_t)g->lim.stall_ms * 1000000;
    int fd = pending ? g->pend.head : remote ? conn_addrs_first(g->addrs, remote->family, remote->ip) : g->unauth.head;
    for (int seen = 0; fd >= 0 && seen < CG_STALL_SCAN; seen++) {
        if (g->c[fd].last_ns + stall <= now)
            return fd;
        fd = pending ? g->c[fd].pnext : remote ? conn_addrs_next(g->addrs, fd) : g->c[fd].next;
    }
    return -1;
}

static int s_from_addr(const conn_guard_t *g, const struct cg_end *remote)
{
    return conn_addrs_count(g->addrs, remote->family, remote->ip);
}

/* ---- events ------------------------------------------------------------------------------------------------ */

/* Records fd as a new connection; 0, or -1 when it was closed at once (over a cap). A connection that is over
 * before the monitor's news of it is read (a peer that sends a few bytes and hangs up) has no addresses left: it
 * is recorded without them, so that its end can still be told, and it is never shut down (nothing proves it). */
static int s_record(conn_guard_t *g, int fd, uint64_t now, int ghost)
{
    struct cg_end remote = { 0 }, local = { 0 };
    if (s_end_of(fd, 1, &remote) < 0 || s_end_of(fd, 0, &local) < 0) {
        if (!ghost)
            return -1;
        memset(&remote, 0, sizeof remote), memset(&local, 0, sizeof local);
    }
    struct conn *c = s_slot(g, fd);
    if (!c)
        return -1;
    if (c->state != CONN_FREE) {
        if (remote.family && s_same_end(&c->remote, &remote) && s_same_end(&c->local, &local))
            return 0; /* known already (adopted from its first frame before the monitor reported it) */
        s_end(g, fd, CONN_GONE); /* the monitor never said that the previous connection here closed */
        c = &g->c[fd];
    }
    *c = (struct conn){ .state = CONN_NEW, .tag = -1, .prev = -1, .next = -1, .pprev = -1, .pnext = -1,
                        .since_ns = now, .last_ns = now, .remote = remote, .local = local, .serial = ++g->serial };
    if (!remote.family || !inet_ntop(remote.family, remote.ip, c->addr, sizeof c->addr))
        snprintf(c->addr, sizeof c->addr, "?");
    s_link(g, &g->unauth, fd);
    if (remote.family)
        conn_addrs_add(g->addrs, fd, remote.family, remote.ip); /* out of memory: only the per-address cap is off */
    /* Over a cap, the oldest connection that has been silent for a while makes room; when none has, the newcomer
     * goes (a burst of real agents all make progress; only stalled peers are pushed out). */
    if (remote.family && s_from_addr(g, &remote) > g->lim.max_per_addr) {
        int victim = s_stalled(g, 0, &remote, now);
        s_end(g, victim >= 0 ? victim : fd, CONN_PER_ADDR);
    } else if (g->unauth.n > g->lim.max_unauth) {
        int victim = s_stalled(g, 0, NULL, now);
        s_end(g, victim >= 0 ? victim : fd, CONN_TOTAL);
    }
    s_arm(g);
    return g->c[fd].state == CONN_NEW ? 0 : -1;
}

void conn_guard_accepted(conn_guard_t *g, int fd)
{
    s_record(g, fd, loop_now_ns(), 1);
}

void conn_guard_gone(conn_guard_t *g, int fd)
{
    struct conn *c = s_get(g, fd);
    if (!c)
        return;
    if (c->state == CONN_CLOSING)
        c->state = CONN_FREE; /* closed by us: already told */
    else
        s_end(g, fd, CONN_GONE);
}

enum conn_state conn_guard_lookup(conn_guard_t *g, int fd, int adopt, const char **addr)
{
    struct conn *c = s_get(g, fd);
    if ((!c || c->state == CONN_FREE) && adopt) {
        s_record(g, fd, loop_now_ns(), 0); /* a live connection the monitor never reported */
        c = s_get(g, fd);
        if (!c || c->state == CONN_FREE) { /* no connection on fd: the frame's is over */
            *addr = "?";
            return CONN_CLOSING;
        }
    }
    *addr = c && c->addr[0] ? c->addr : "?";
    return c ? c->state : CONN_FREE;
}

void conn_guard_active(conn_guard_t *g, int fd)
{
    struct conn *c = s_get(g, fd);
    if (c)
        c->last_ns = loop_now_ns();
}

/* ---- what the owner says ---------------------------------------------------------------------------------- */

const char *conn_guard_addr(const conn_guard_t *g, int fd)
{
    const struct conn *c = s_get(g, fd);
    return c && c->addr[0] ? c->addr : "?";
}

int conn_guard_tag(const conn_guard_t *g, int fd)
{
    const struct conn *c = s_get(g, fd);
    return c && c->state != CONN_FREE && c->state != CONN_CLOSING ? c->tag : -1;
}

void conn_guard_set_tag(conn_guard_t *g, int fd, int tag)
{
    struct conn *c = s_get(g, fd);
    if (c && c->state != CONN_FREE && c->state != CONN_CLOSING)
        c->tag = tag;
}

int conn_guard_pending(conn_guard_t *g, int fd)
{
    struct conn *c = s_get(g, fd);
    if (!c || c->state == CONN_FREE || c->state == CONN_CLOSING || c->state == CONN_REFUSED)
        return -1;
    if (c->state != CONN_NEW)
        return 0; /* under way already, or authenticated before (it holds the job's credentials) */
    if (g->pending >= g->lim.max_pending) {
        int victim = s_stalled(g, 1, NULL, loop_now_ns());
        if (victim < 0)
            return 2; /* every slot is taken by a live handshake: the caller keeps the ClientHello for later */
        s_end(g, victim, CONN_HANDSHAKES);
    }
    c->state = CONN_PENDING;
    c->last_ns = loop_now_ns();
    g->pending++;
    s_link(g, &g->pend, fd);
    return 1;
}

int conn_guard_pending_room(conn_guard_t *g)
{
    if (g->pending < g->lim.max_pending)
        return 1;
    int victim = s_stalled(g, 1, NULL, loop_now_ns());
    if (victim < 0)
        return 0;
    s_end(g, victim, CONN_HANDSHAKES);
    return 1;
}

uint64_t conn_guard_serial(const conn_guard_t *g, int fd)
{
    const struct conn *c = s_get(g, fd);
    return c && c->state != CONN_FREE && c->state != CONN_CLOSING ? c->serial : 0;
}

void conn_guard_unpend(conn_guard_t *g, int fd)
{
    struct conn *c = s_get(g, fd);
    if (c && c->state == CONN_PENDING) {
        s_unlink(g, &g->pend, fd);
        c->state = CONN_NEW;
        g->pending--;
    }
}

void conn_guard_trust(conn_guard_t *g, int fd)
{
    struct conn *c = s_get(g, fd);
    if (!c || c->state == CONN_FREE || c->state == CONN_CLOSING || c->state == CONN_TRUSTED)
        return;
    s_detach(g, fd);
    c->state = CONN_TRUSTED;
    s_arm(g);
}

void conn_guard_refuse(conn_guard_t *g, int fd)
{
    struct conn *c = s_get(g, fd);
    if (!c || c->state == CONN_FREE || c->state == CONN_CLOSING || c->state == CONN_REFUSED)
        return;
    s_detach(g, fd);
    c->state = CONN_REFUSED;
    c->since_ns = loop_now_ns();
    s_link(g, &g->refused, fd);
    s_arm(g);
}

void conn_guard_close(conn_guard_t *g, int fd, enum conn_why why)
{
    if (s_get(g, fd))
        s_end(g, fd, why == CONN_GONE ? CONN_REFUSAL : why);
}

void conn_guard_out_of_fds(conn_guard_t *g)
{
    for (int i = 0; i < CG_EVICT_ON_EMFILE && g->unauth.head >= 0; i++)
        s_end(g, g->unauth.head, CONN_DESCRIPTORS);
}

int conn_guard_count(const conn_guard_t *g, enum conn_state st)
{
    if (st == CONN_NEW || st == CONN_PENDING)
        return st == CONN_PENDING ? g->pending : g->unauth.n - g->pending;
    if (st == CONN_REFUSED)
        return g->refused.n;
    int n = 0;
    for (int fd = 0; fd < g->cap; fd++)
        n += g->c[fd].state == st;
    return n;
}
