/* metrics_http: /metrics over libmicrohttpd in the process's event loop (metrics_http.h says how and why). */
#include "launcher/metrics/metrics_http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h> /* types and constants only: the functions come from dlopen */

/* The library's functions this file calls, resolved once per process. */
struct mhd_api {
    void *lib;
    struct MHD_Daemon *(*start)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                MHD_AccessHandlerCallback dh, void *dh_cls, ...);
    void (*stop)(struct MHD_Daemon *d);
    enum MHD_Result (*run)(struct MHD_Daemon *d);
    enum MHD_Result (*get_timeout)(struct MHD_Daemon *d, MHD_UNSIGNED_LONG_LONG *timeout);
    const union MHD_DaemonInfo *(*get_info)(struct MHD_Daemon *d, enum MHD_DaemonInfoType type, ...);
    struct MHD_Response *(*from_buffer)(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode);
    enum MHD_Result (*add_header)(struct MHD_Response *r, const char *header, const char *content);
    enum MHD_Result (*queue)(struct MHD_Connection *c, unsigned int status, struct MHD_Response *r);
    void (*destroy_response)(struct MHD_Response *r);
};

struct metrics_http {
    loop_t *loop;
    struct MHD_Daemon *d;
    int epfd;
    int timer;
    int port;
    metrics_http_body_fn body;
    void *arg;
    unsigned long long scrapes;
};

static struct mhd_api s_api;

static int s_load(char *err, size_t errlen)
{
    if (s_api.lib)
        return 0;
    void *lib = dlopen(METRICS_HTTP_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(err, errlen, "cannot load %s (%s): install libmicrohttpd12 (Debian, Ubuntu) or your distribution's "
                 "libmicrohttpd, or leave --metrics-port out", METRICS_HTTP_LIB, why ? why : "not found");
        return -1;
    }
    struct mhd_api a = { .lib = lib };
    *(void **)&a.start = dlsym(lib, "MHD_start_daemon");
    *(void **)&a.stop = dlsym(lib, "MHD_stop_daemon");
    *(void **)&a.run = dlsym(lib, "MHD_run");
    *(void **)&a.get_timeout = dlsym(lib, "MHD_get_timeout");
    *(void **)&a.get_info = dlsym(lib, "MHD_get_daemon_info");
    *(void **)&a.from_buffer = dlsym(lib, "MHD_create_response_from_buffer");
    *(void **)&a.add_header = dlsym(lib, "MHD_add_response_header");
    *(void **)&a.queue = dlsym(lib, "MHD_queue_response");
    *(void **)&a.destroy_response = dlsym(lib, "MHD_destroy_response");
    if (!a.start || !a.stop || !a.run || !a.get_timeout || !a.get_info || !a.from_buffer || !a.add_header ||
        !a.queue || !a.destroy_response) {
        snprintf(err, errlen, "%s lacks the functions plaunch calls (a libmicrohttpd older than 0.9.71?)",
                 METRICS_HTTP_LIB);
        dlclose(lib);
        return -1;
    }
    s_api = a;
    return 0;
}

static enum MHD_Result s_answer(struct MHD_Connection *c, unsigned int status, const char *text, char *owned,
                                size_t len)
{
    struct MHD_Response *r = owned ? s_api.from_buffer(len, owned, MHD_RESPMEM_MUST_FREE)
                                   : s_api.from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(owned);
        return MHD_NO;
    }
    s_api.add_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, owned ? "text/plain; version=0.0.4; charset=utf-8"
                                                            : "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        s_api.add_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = s_api.queue(c, status, r);
    s_api.destroy_response(r);
    return rc;
}

/* Every request is answered as soon as its headers are in: GET and HEAD have no body, and one with a body is
 * refused before it is read. */
static enum MHD_Result s_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    metrics_http_t *h = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return s_answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics is served here\n", NULL, 0);
    if (strcmp(url, "/metrics") != 0)
        return s_answer(c, MHD_HTTP_NOT_FOUND, "plaunch serves /metrics only\n", NULL, 0);
    size_t len = 0;
    char *text = h->body(h->arg, &len);
    if (!text)
        return s_answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL, 0);
    h->scrapes++;
    return s_answer(c, MHD_HTTP_OK, NULL, text, len);
}

static int s_on_timer(loop_t *loop, int id, void *arg);

/* MHD_run, twice: at the connection limit MHD takes its listening socket out of its epoll set, and puts it back
 * at the start of the run after one that closed a connection; without the second run, nothing would ever wake
 * the loop for it again (no event, no timeout once the last connection is gone). */
static void s_run(metrics_http_t *h)
{
    s_api.run(h->d);
    s_api.run(h->d);
}

/* After every MHD_run: the loop wakes us again at MHD's next deadline (0 when connections have work left). */
static void s_rearm(metrics_http_t *h)
{
    MHD_UNSIGNED_LONG_LONG ms = 0;
    if (h->timer > 0)
        loop_timer_cancel(h->loop, h->timer);
    h->timer = 0;
    if (s_api.get_timeout(h->d, &ms) == MHD_YES)
        h->timer = loop_timer_after_ms(h->loop, ms > 60000 ? 60000 : (int64_t)ms, s_on_timer, h);
}

static int s_on_timer(loop_t *loop, int id, void *arg)
{
    metrics_http_t *h = arg;
    if (id != h->timer)
        return 0;
    h->timer = 0;
    s_run(h);
    s_rearm(h);
    return 0;
}

static int s_on_ready(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    metrics_http_t *h = arg;
    s_run(h);
    s_rearm(h);
    return 0;
}

metrics_http_t *metrics_http_new(loop_t *loop, const char *addr, int port, metrics_http_body_fn body, void *arg,
                                 char *err, size_t errlen)
{
    struct sockaddr_in sa4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
    struct sockaddr *sa = (struct sockaddr *)&sa4;
    unsigned int flags = MHD_USE_EPOLL;
    if (inet_pton(AF_INET, addr, &sa4.sin_addr) != 1) {
        if (inet_pton(AF_INET6, addr, &sa6.sin6_addr) != 1) {
            snprintf(err, errlen, "metrics address '%s' is not an IPv4 or IPv6 address", addr);
            return NULL;
        }
        sa = (struct sockaddr *)&sa6;
        flags |= MHD_USE_IPv6;
    }
    if (s_load(err, errlen) < 0)
        return NULL;
    metrics_http_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->loop = loop, h->body = body, h->arg = arg, h->epfd = -1;
    errno = 0;
    h->d = s_api.start(flags, (uint16_t)port, NULL, NULL, s_request, h,
                       MHD_OPTION_SOCK_ADDR, sa,
                       MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_HTTP_CONNS,
                       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_HTTP_TIMEOUT_S,
                       MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_HTTP_MEM,
                       MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)METRICS_HTTP_BACKLOG,
                       MHD_OPTION_END);
    if (!h->d) {
        int e = errno;
        snprintf(err, errlen, "cannot listen on %s port %d (%s): pick a free port with --metrics-port", addr,
                 port, e ? strerror(e) : "libmicrohttpd refused");
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *ep = s_api.get_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
    const union MHD_DaemonInfo *pi = s_api.get_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->epfd = ep ? ep->epoll_fd : -1;
    h->port = pi ? pi->port : port;
    if (h->epfd < 0 || loop_add_fd(loop, h->epfd, ZMQ_POLLIN, s_on_ready, h) < 0) {
        snprintf(err, errlen, "metrics: cannot watch libmicrohttpd's descriptor in the event loop");
        s_api.stop(h->d);
        free(h);
        return NULL;
    }
    s_rearm(h);
    return h;
}

int metrics_http_port(const metrics_http_t *h)
{
    return h ? h->port : 0;
}

unsigned long long metrics_http_scrapes(const metrics_http_t *h)
{
    return h ? h->scrapes : 0;
}

void metrics_http_destroy(metrics_http_t **hp)
{
    metrics_http_t *h = hp ? *hp : NULL;
    if (!h)
        return;
    if (h->timer > 0)
        loop_timer_cancel(h->loop, h->timer);
    if (h->epfd >= 0)
        loop_remove_fd(h->loop, h->epfd);
    s_api.stop(h->d);
    free(h);
    *hp = NULL;
}
