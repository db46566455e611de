/* metrics_http: the HTTP side of /metrics: libmicrohttpd, loaded at run time (dlopen: the static plaunch binary
 * cannot link it without GnuTLS and p11-kit), driven by the process's event loop: no thread of its own; its one
 * epoll descriptor is registered with the loop, MHD_run is called on its readiness and at MHD's next timeout.
 * Bounded: METRICS_HTTP_CONNS connections, METRICS_HTTP_TIMEOUT_S idle seconds each, METRICS_HTTP_MEM bytes of
 * request per connection (a longer request line is answered 414 and closed), GET and HEAD of /metrics only. */
#ifndef PLAUNCH_METRICS_HTTP_H
#define PLAUNCH_METRICS_HTTP_H

#include <stddef.h>

#include "common/loop.h"

#define METRICS_HTTP_CONNS 32
#define METRICS_HTTP_TIMEOUT_S 10
#define METRICS_HTTP_MEM 16384
#define METRICS_HTTP_BACKLOG 64
/* The library's file name, as Debian's libmicrohttpd12 installs it. */
#define METRICS_HTTP_LIB "libmicrohttpd.so.12"

typedef struct metrics_http metrics_http_t;
/* The body of GET /metrics: a malloc'ed NUL-terminated text (the server frees it), or NULL (answered 500). */
typedef char *(*metrics_http_body_fn)(void *arg, size_t *len);

/* Listens on addr (an IPv4 or IPv6 literal) and port (0: a free one, metrics_http_port says which) in loop.
 * NULL + message in err: the library absent (and how to install it), the address taken, ... */
metrics_http_t *metrics_http_new(loop_t *loop, const char *addr, int port, metrics_http_body_fn body, void *arg,
                                 char *err, size_t errlen);
int metrics_http_port(const metrics_http_t *h);
/* Scrapes answered since the start. */
unsigned long long metrics_http_scrapes(const metrics_http_t *h);
/* Closes every connection and the listening socket, takes the handlers out of the loop; *h NULL, safe twice. */
void metrics_http_destroy(metrics_http_t **h);

#endif
