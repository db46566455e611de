/* Unit tests for conn_guard on real TCP connections over loopback: caps per address, in total and on handshakes
 * (a stalled connection makes room, a young one does not), the authentication deadline, refusals, routing ids that
 * change under a descriptor, and never shutting down a descriptor that is no longer the recorded connection. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launcher/conn/conn_guard.h"

#define MAXC 32

struct fixture {
    loop_t *loop;
    conn_guard_t *g;
    int lfd;
    struct sockaddr_in at;
    int client[MAXC], server[MAXC], n;
    /* what the callback saw */
    int ends, last_fd, last_tag;
    enum conn_why last_why;
    enum conn_state last_was;
    char last_addr[64];
};

static void s_on_end(void *arg, int fd, int tag, enum conn_state was, enum conn_why why, const char *addr)
{
    struct fixture *f = arg;
    f->ends++;
    f->last_fd = fd;
    f->last_tag = tag;
    f->last_why = why;
    f->last_was = was;
    snprintf(f->last_addr, sizeof f->last_addr, "%s", addr);
}

static const struct conn_limits s_lim = { .max_unauth = 6, .max_per_addr = 2, .max_pending = 2, .auth_ms = 300,
                                          .stall_ms = 60, .linger_ms = 60 };

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    socklen_t sl = sizeof f.at;
    f.at.sin_family = AF_INET;
    f.at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f.lfd < 0 || bind(f.lfd, (struct sockaddr *)&f.at, sizeof f.at) < 0 || listen(f.lfd, 64) < 0 ||
        getsockname(f.lfd, (struct sockaddr *)&f.at, &sl) < 0)
        return -1;
    f.loop = loop_new();
    f.g = conn_guard_new(f.loop, &s_lim, s_on_end, &f);
    *state = &f;
    return f.loop && f.g ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    conn_guard_destroy(&f->g);
    loop_destroy(&f->loop);
    for (int i = 0; i < f->n; i++) {
        close(f->client[i]);
        close(f->server[i]);
    }
    close(f->lfd);
    return 0;
}

/* A connection from src (a 127.x address); returns its index. The server side's descriptor is what libzmq would
 * own; the test tells the guard about it as the monitor would. */
static int s_connect(struct fixture *f, const char *src)
{
    struct sockaddr_in from = { .sin_family = AF_INET };
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c >= 0);
    assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
    assert_int_equal(bind(c, (struct sockaddr *)&from, sizeof from), 0);
    assert_int_equal(connect(c, (struct sockaddr *)&f->at, sizeof f->at), 0);
    int s = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(s >= 0);
    assert_true(f->n < MAXC);
    f->client[f->n] = c;
    f->server[f->n] = s;
    return f->n++;
}

/* 1 when the client of connection i sees its connection shut down (end of stream) within 1 s. */
static int s_closed(struct fixture *f, int i)
{
    struct pollfd p = { f->client[i], POLLIN, 0 };
    char b;
    return poll(&p, 1, 1000) == 1 && recv(f->client[i], &b, 1, MSG_DONTWAIT) <= 0;
}

/* 1 when the client of connection i is still connected (nothing arrives within 50 ms). */
static int s_open(struct fixture *f, int i)
{
    struct pollfd p = { f->client[i], POLLIN, 0 };
    return poll(&p, 1, 50) == 0;
}

static int s_stop(loop_t *l, int id, void *arg)
{
    loop_stop(l);
    return 0;
}

/* Lets ms of time pass inside the loop (the guard's deadlines are timers of it). */
static void s_run_for(struct fixture *f, int ms)
{
    loop_timer_after_ms(f->loop, ms, s_stop, NULL);
    assert_int_equal(loop_run(f->loop), 0);
}

static void test_per_address_cap_closes_the_young_newcomer(void **state)
{
    struct fixture *f = *state;
    int a = s_connect(f, "127.0.0.2"), b = s_connect(f, "127.0.0.2");
    conn_guard_accepted(f->g, f->server[a]);
    conn_guard_accepted(f->g, f->server[b]);
    assert_string_equal(conn_guard_addr(f->g, f->server[a]), "127.0.0.2");
    int c = s_connect(f, "127.0.0.2");
    conn_guard_accepted(f->g, f->server[c]);
    assert_int_equal(f->ends, 1);
    assert_int_equal(f->last_fd, f->server[c]); /* both older ones are busy (young): the newcomer goes */
    assert_int_equal(f->last_why, CONN_PER_ADDR);
    assert_int_equal(f->last_was, CONN_NEW);
    assert_true(s_closed(f, c));
    assert_true(s_open(f, a) && s_open(f, b));
    int d = s_connect(f, "127.0.0.3"); /* another address has its own allowance */
    conn_guard_accepted(f->g, f->server[d]);
    assert_int_equal(f->ends, 1);
    assert_int_equal(conn_guard_count(f->g, CONN_NEW), 3);
    assert_int_equal(conn_guard_count(f->g, CONN_CLOSING), 1);
    conn_guard_gone(f->g, f->server[c]); /* libzmq's DISCONNECTED for what we closed: nothing more to tell */
    assert_int_equal(f->ends, 1);
    assert_int_equal(conn_guard_count(f->g, CONN_CLOSING), 0);
}

static void test_a_stalled_connection_makes_room(void **state)
{
    struct fixture *f = *state;
    int a = s_connect(f, "127.0.0.2"), b = s_connect(f, "127.0.0.2");
    conn_guard_accepted(f->g, f->server[a]);
    conn_guard_accepted(f->g, f->server[b]);
    s_run_for(f, 80); /* both silent for longer than stall_ms */
    conn_guard_active(f->g, f->server[b]); /* b shows life */
    int c = s_connect(f, "127.0.0.2");
    conn_guard_accepted(f->g, f->server[c]);
    assert_int_equal(f->ends, 1);
    assert_int_equal(f->last_fd, f->server[a]); /* the oldest silent one */
    assert_int_equal(f->last_why, CONN_PER_ADDR);
    assert_true(s_closed(f, a));
    assert_true(s_open(f, b) && s_open(f, c));
}

static void test_total_cap(void **state)
{
    struct fixture *f = *state;
    char src[32];
    for (int i = 0; i < 6; i++) {
        snprintf(src, sizeof src, "127.0.1.%d", i + 1);
        conn_guard_accepted(f->g, f->server[s_connect(f, src)]);
    }
    assert_int_equal(f->ends, 0);
    int x = s_connect(f, "127.0.1.100");
    conn_guard_accepted(f->g, f->server[x]);
    assert_int_equal(f->ends, 1);
    assert_int_equal(f->last_why, CONN_TOTAL);
    assert_int_equal(f->last_fd, f->server[x]);
    conn_guard_trust(f->g, f->server[0]); /* authenticated connections do not count */
    int y = s_connect(f, "127.0.1.101");
    conn_guard_accepted(f->g, f->server[y]);
    assert_int_equal(f->ends, 1);
    assert_int_equal(conn_guard_count(f->g, CONN_TRUSTED), 1);
}

static void test_deadline_spares_the_authenticated(void **state)
{
    struct fixture *f = *state;
    int a = s_connect(f, "127.0.0.2"), b = s_connect(f, "127.0.0.3");
    conn_guard_accepted(f->g, f->server[a]);
    conn_guard_accepted(f->g, f->server[b]);
    conn_guard_set_tag(f->g, f->server[a], 7);
    conn_guard_trust(f->g, f->server[b]);
    s_run_for(f, 400);
    assert_int_equal(f->ends, 1);
    assert_int_equal(f->last_why, CONN_DEADLINE);
    assert_int_equal(f->last_tag, 7); /* the owner learns which session to free */
    assert_true(s_closed(f, a));
    assert_true(s_open(f, b));
    assert_int_equal(conn_guard_tag(f->g, f->server[a]), -1);
}

static void test_pending_cap(void **state)
{
    struct fixture *f = *state;
    int a = s_connect(f, "127.0.0.2"), b = s_connect(f, "127.0.0.3"), c = s_connect(f, "127.0.0.4");
    for (int i = 0; i < 3; i++)
        conn_guard_accepted(f->g, f->server[i]);
    assert_int_equal(conn_guard_pending(f->g, f->server[a]), 1);
    assert_int_equal(conn_guard_pending(f->g, f->server[a]), 0); /* under way already */
    assert_int_equal(conn_guard_pending(f->g, f->server[b]), 1);
    assert_int_equal(conn_guard_pending(f->g, f->server[c]), 2); /* both handshakes are young: c waits */
    assert_int_equal(conn_guard_pending_room(f->g), 0);
    assert_true(s_open(f, c));
    assert_int_equal(f->ends, 0);
    uint64_t serial = conn_guard_serial(f->g, f->server[c]);
    assert_true(serial > 0 && serial != conn_guard_serial(f->g, f->server[a]));
    s_run_for(f, 80);
    int d = s_connect(f, "127.0.0.5");
    conn_guard_accepted(f->g, f->server[d]);
    assert_int_equal(conn_guard_pending(f->g, f->server[d]), 1); /* a stalled handshake made room */
    assert_int_equal(f->last_fd, f->server[a]);
    assert_int_equal(f->last_why, CONN_HANDSHAKES);
    assert_int_equal(conn_guard_count(f->g, CONN_PENDING), 2);
    conn_guard_unpend(f->g, f->server[d]); /* that handshake was not d's */
    assert_int_equal(conn_guard_count(f->g, CONN_PENDING), 1);
    assert_int_equal(conn_guard_count(f->g, CONN_NEW), 2);
    assert_int_equal(conn_guard_pending_room(f->g), 1);
    assert_int_equal(conn_guard_pending(f->g, f->server[c]), 1); /* c's turn */
}

static void test_refused_connections_linger_then_close(void **state)
{
    struct fixture *f = *state;
    const char *addr;
    int a = s_connect(f, "127.0.0.2"), b = s_connect(f, "127.0.0.3");
    conn_guard_accepted(f->g, f->server[a]);
    conn_guard_accepted(f->g, f->server[b]);
    conn_guard_refuse(f->g, f->server[a]);
    conn_guard_refuse(f->g, f->server[b]);
    assert_true(s_open(f, a)); /* the refusal may still be on its way */
    assert_int_equal(conn_guard_lookup(f->g, f->server[b], 0, &addr), CONN_REFUSED);
    conn_guard_close(f->g, f->server[b], CONN_REFUSAL); /* another frame: closed at once */
    assert_true(s_closed(f, b));
    s_run_for(f, 100);
    assert_true(s_closed(f, a));
    assert_int_equal(f->ends, 2);
    assert_int_equal(f->last_why, CONN_REFUSAL);
}

/* A frame's descriptor before the monitor's news: a live connection is adopted, anything else is over. */
static void test_lookup_adopts_live_connections_only(void **state)
{
    struct fixture *f = *state;
    const char *addr;
    int a = s_connect(f, "127.0.0.2");
    int fd = f->server[a];
    assert_int_equal(conn_guard_lookup(f->g, fd, 0, &addr), CONN_FREE);
    assert_int_equal(conn_guard_lookup(f->g, fd, 1, &addr), CONN_NEW);
    assert_string_equal(addr, "127.0.0.2");
    conn_guard_accepted(f->g, fd); /* the late news changes nothing */
    assert_int_equal(f->ends, 0);
    assert_int_equal(conn_guard_count(f->g, CONN_NEW), 1);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0); /* a descriptor that is no connection */
    assert_int_equal(conn_guard_lookup(f->g, p[0], 1, &addr), CONN_CLOSING);
    assert_string_equal(addr, "?");
    assert_int_equal(conn_guard_count(f->g, CONN_NEW), 1);
    close(p[0]);
    close(p[1]);
}

/* libzmq closed a connection and its descriptor number now belongs to another connection before the monitor's
 * DISCONNECTED was read: closing the old record must leave the new connection alone. */
static void test_never_shuts_a_reused_descriptor(void **state)
{
    struct fixture *f = *state;
    int a = s_connect(f, "127.0.0.2");
    int fd = f->server[a];
    conn_guard_accepted(f->g, fd);
    int b = s_connect(f, "127.0.0.3");
    close(fd); /* libzmq closes a; b gets its number, as accept(2) would (the lowest free one) */
    f->server[a] = -1;
    assert_int_equal(dup2(f->server[b], fd), fd);
    close(f->server[b]);
    f->server[b] = fd;
    conn_guard_close(f->g, fd, CONN_DEADLINE);
    assert_int_equal(f->ends, 1);
    assert_string_equal(f->last_addr, "127.0.0.2");
    assert_true(s_open(f, b));
    char c = 'x';
    assert_int_equal(write(f->client[b], &c, 1), 1);
    assert_int_equal(read(f->server[b], &c, 1), 1); /* still a working connection */
}

static void test_gone_reports_the_tag(void **state)
{
    struct fixture *f = *state;
    int a = s_connect(f, "127.0.0.2");
    conn_guard_accepted(f->g, f->server[a]);
    conn_guard_trust(f->g, f->server[a]);
    conn_guard_set_tag(f->g, f->server[a], 5);
    conn_guard_gone(f->g, f->server[a]);
    assert_int_equal(f->ends, 1);
    assert_int_equal(f->last_why, CONN_GONE);
    assert_int_equal(f->last_was, CONN_TRUSTED);
    assert_int_equal(f->last_tag, 5);
    assert_int_equal(conn_guard_count(f->g, CONN_TRUSTED), 0);
}

static void test_limits_follow_the_descriptor_limit(void **state)
{
    struct conn_limits lim;
    conn_guard_limits(&lim, 2);
    assert_true(lim.max_unauth >= 16 && lim.max_unauth <= CONN_MAX_UNAUTH);
    assert_true(lim.max_per_addr >= 4 && lim.max_per_addr <= lim.max_unauth);
    assert_true(lim.max_pending >= 4 && lim.max_pending <= lim.max_unauth);
    assert_int_equal(lim.auth_ms, CONN_AUTH_MS);
    /* a big job: room for every node at once, within the descriptor limit; the other caps stay */
    struct rlimit rl;
    struct conn_limits big;
    getrlimit(RLIMIT_NOFILE, &rl);
    conn_guard_limits(&big, 16384);
    assert_true(big.max_unauth >= lim.max_unauth);
    assert_true(big.max_unauth <= 16384 + CONN_MAX_UNAUTH);
    assert_true(rl.rlim_cur == RLIM_INFINITY || big.max_unauth <= (long)rl.rlim_cur - 512 ||
                big.max_unauth == lim.max_unauth);
    assert_int_equal(big.max_per_addr, lim.max_per_addr);
    assert_int_equal(big.max_pending, lim.max_pending);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_per_address_cap_closes_the_young_newcomer),
        T(test_a_stalled_connection_makes_room),
        T(test_total_cap),
        T(test_deadline_spares_the_authenticated),
        T(test_pending_cap),
        T(test_refused_connections_linger_then_close),
        T(test_lookup_adopts_live_connections_only),
        T(test_never_shuts_a_reused_descriptor),
        T(test_gone_reports_the_tag),
        cmocka_unit_test(test_limits_follow_the_descriptor_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
