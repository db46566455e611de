/* pl_hostile: an unauthenticated peer of a coordinator, many times over, for tests and benchmarks: TCP connections
 * that say nothing, ZeroMQ peers that finish the ZMTP handshake and then idle, TLS handshakes started and never
 * finished, and a flood of frames that are not TLS. It speaks ZMTP 3.0 itself (raw sockets) so that tens of
 * thousands of connections cost it a descriptor each and nothing more. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

static const char s_usage[] =
    "Usage: pl_hostile --endpoint tcp://IPV4:PORT [--bind ADDR]... [--raw N] [--idle N] [--stall N]\n"
    "                  [--full-hello] [--flood N] [--hold SECONDS]\n"
    "  --raw N     N TCP connections that send nothing at all\n"
    "  --idle N    N connections that finish the ZeroMQ handshake (ZMTP 3.0, NULL) and then send nothing\n"
    "  --stall N   N connections that start a TLS handshake and never finish it: a ClientHello cut short, or\n"
    "              with --full-hello a whole TLS 1.3 ClientHello (the server answers and waits for us)\n"
    "  --flood N   N frames that are not TLS on one connection, as fast as it takes them (reopened if closed)\n"
    "  --hold S    keep the connections S seconds, counting those the coordinator closes (default 0)\n"
    "  --bind A    source address; repeat to rotate over several\n"
    "Prints one line per phase: 'opened: ...', 'flood: ...', 'held: ...'. Exit 0, 2 on bad usage.\n";

#define PH_MAX_BIND 256

struct ph {
    struct sockaddr_in dst;
    struct sockaddr_in src[PH_MAX_BIND];
    int nsrc, next_src;
    int ep;                        /* epoll of every held connection */
    int open, closed, failed;
    unsigned char hello[2048];     /* the ClientHello frame a stalled connection sends (ZMTP framed) */
    size_t hello_len;
};

/* ZMTP 3.0 greeting (NULL mechanism, client) and READY announcing a DEALER: what libzmq needs to take us. */
static const unsigned char s_greeting[64] = { 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0, 'N', 'U', 'L', 'L' };
static const unsigned char s_ready[] = { 0x04, 28, 5, 'R', 'E', 'A', 'D', 'Y', 11, 'S', 'o', 'c', 'k', 'e', 't', '-',
                                         'T', 'y', 'p', 'e', 0, 0, 0, 6, 'D', 'E', 'A', 'L', 'E', 'R' };

static double s_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Reads (out 0) or writes (out 1) exactly len bytes; -1 on end of stream, an error or a timeout. */
static int s_all(int fd, void *buf, size_t len, int out)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int s_read_all(int fd, void *buf, size_t len)
{
    return s_all(fd, buf, len, 0);
}

static int s_write_all(int fd, const void *buf, size_t len)
{
    return s_all(fd, (void *)buf, len, 1);
}

/* The ZMTP handshake as a libzmq DEALER does it: our greeting and READY, then the server's, before any message
 * (a message sent before the server's READY is taken for a bad handshake command). */
static int s_zmtp(int fd)
{
    unsigned char out[sizeof s_greeting + sizeof s_ready], in[64 + 9 + 255];
    memcpy(out, s_greeting, sizeof s_greeting);
    memcpy(out + sizeof s_greeting, s_ready, sizeof s_ready);
    if (s_write_all(fd, out, sizeof out) < 0 || s_read_all(fd, in, 64 + 2) < 0)
        return -1;
    if (in[64] & 0x02) /* long command: 8-byte size, of which a READY needs only the last */
        return s_read_all(fd, in + 66, 7) < 0 || s_read_all(fd, in, in[72]) < 0 ? -1 : 0;
    return s_read_all(fd, in, in[65]);
}

/* A blocking TCP connection from the next source address; -1 when it cannot be made within 2 s. */
static int s_connect(struct ph *h)
{
    struct timeval tv = { 2, 0 };
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (h->nsrc > 0) {
        struct sockaddr_in *s = &h->src[h->next_src++ % h->nsrc];
        if (bind(fd, (struct sockaddr *)s, sizeof *s) < 0) {
            close(fd);
            return -1;
        }
    }
    if (connect(fd, (struct sockaddr *)&h->dst, sizeof h->dst) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Builds the ZMTP frame holding a ClientHello: a real TLS 1.3 one (full) or its first 64 bytes, whose record
 * header promises more (the server then waits for the rest). */
static int s_make_hello(struct ph *h, int full)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = ctx ? SSL_new(ctx) : NULL;
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    unsigned char rec[1800];
    int n = -1;
    if (ssl && rb && wb && SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION)) {
        SSL_set_bio(ssl, rb, wb);
        rb = wb = NULL;
        SSL_set_connect_state(ssl);
        SSL_do_handshake(ssl);
        n = BIO_read(SSL_get_wbio(ssl), rec, sizeof rec);
    }
    BIO_free(rb);
    BIO_free(wb);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    if (n < 64 || n > 255 * 6)
        return -1;
    size_t len = full ? (size_t)n : 64;
    unsigned char *p = h->hello;
    if (len <= 255) {
        *p++ = 0x00;
        *p++ = (unsigned char)len;
    } else {
        *p++ = 0x02; /* long frame: 8-byte size */
        for (int i = 7; i >= 0; i--)
            *p++ = (unsigned char)((uint64_t)len >> (8 * i));
    }
    memcpy(p, rec, len);
    h->hello_len = (size_t)(p - h->hello) + len;
    return 0;
}

/* Opens n connections of one kind (0 raw, 1 idle, 2 stall) and adds them to the epoll set. */
static void s_open(struct ph *h, int n, int kind)
{
    for (int i = 0; i < n; i++) {
        int fd = s_connect(h);
        if (fd < 0) {
            h->failed++;
            continue;
        }
        int bad = kind >= 1 && s_zmtp(fd) < 0;
        if (!bad && kind == 2)
            bad = s_write_all(fd, h->hello, h->hello_len) < 0;
        struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = fd };
        if (bad || fcntl(fd, F_SETFL, O_NONBLOCK) < 0 || epoll_ctl(h->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            h->failed++;
            continue;
        }
        h->open++;
    }
}

/* Sends n frames that are not TLS ("PLAINTEXT"), reconnecting whenever the coordinator closes the connection. */
static void s_flood(struct ph *h, long n)
{
    static unsigned char batch[1024 * 11];
    long sent = 0;
    int conns = 0, fd = -1;
    double t0 = s_now();
    for (int i = 0; i < 1024; i++) {
        batch[i * 11] = 0x00;
        batch[i * 11 + 1] = 9;
        memcpy(batch + i * 11 + 2, "PLAINTEXT", 9);
    }
    while (sent < n && s_now() - t0 < 120) {
        if (fd < 0) {
            if ((fd = s_connect(h)) < 0 || s_zmtp(fd) < 0) {
                if (fd >= 0)
                    close(fd);
                fd = -1;
                h->failed++;
                continue;
            }
            conns++;
        }
        long k = n - sent < 1024 ? n - sent : 1024;
        if (s_write_all(fd, batch, (size_t)k * 11) < 0) {
            close(fd);
            fd = -1;
            continue;
        }
        sent += k;
    }
    if (fd >= 0)
        close(fd);
    printf("flood: %ld frames sent on %d connection%s in %.2f s\n", sent, conns, conns == 1 ? "" : "s", s_now() - t0);
}

/* Waits hold seconds, reading (and dropping) what the coordinator sends, counting connections it closes. */
static void s_hold(struct ph *h, double hold)
{
    static struct epoll_event evs[256];
    char buf[4096];
    double end = s_now() + hold;
    while (h->open - h->closed > 0) {
        double left = end - s_now();
        if (left <= 0)
            break;
        int n = epoll_wait(h->ep, evs, 256, (int)(left * 1000) + 1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            ssize_t r;
            while ((r = read(fd, buf, sizeof buf)) > 0)
                ;
            if (r == 0 || (r < 0 && errno != EAGAIN) || (evs[i].events & (EPOLLHUP | EPOLLRDHUP))) {
                epoll_ctl(h->ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
                h->closed++;
            }
        }
    }
    printf("held: %d of %d connections closed by the peer within %g s, %d still open\n", h->closed, h->open, hold,
           h->open - h->closed);
}

static int s_parse_endpoint(struct ph *h, const char *ep)
{
    char host[64];
    const char *colon = strrchr(ep, ':');
    if (strncmp(ep, "tcp://", 6) || !colon || colon - ep - 6 >= (long)sizeof host)
        return -1;
    memcpy(host, ep + 6, (size_t)(colon - ep - 6));
    host[colon - ep - 6] = 0;
    h->dst.sin_family = AF_INET;
    h->dst.sin_port = htons((uint16_t)atoi(colon + 1));
    return inet_pton(AF_INET, host, &h->dst.sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "endpoint", required_argument, NULL, 'e' }, { "bind", required_argument, NULL, 'b' },
        { "raw", required_argument, NULL, 'r' },      { "idle", required_argument, NULL, 'i' },
        { "stall", required_argument, NULL, 's' },    { "full-hello", no_argument, NULL, 'f' },
        { "flood", required_argument, NULL, 'F' },    { "hold", required_argument, NULL, 'H' },
        { "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 }
    };
    static struct ph h;
    int opt, nraw = 0, nidle = 0, nstall = 0, full = 0;
    long nflood = 0;
    double hold = 0;
    const char *endpoint = NULL;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'e': endpoint = optarg; break;
        case 'b':
            if (h.nsrc == PH_MAX_BIND || inet_pton(AF_INET, optarg, &h.src[h.nsrc].sin_addr) != 1) {
                fprintf(stderr, "pl_hostile: --bind '%s': an IPv4 address (at most %d)\n", optarg, PH_MAX_BIND);
                return 2;
            }
            h.src[h.nsrc++].sin_family = AF_INET;
            break;
        case 'r': nraw = atoi(optarg); break;
        case 'i': nidle = atoi(optarg); break;
        case 's': nstall = atoi(optarg); break;
        case 'f': full = 1; break;
        case 'F': nflood = atol(optarg); break;
        case 'H': hold = atof(optarg); break;
        case 'h': fputs(s_usage, stdout); return 0;
        default: fputs(s_usage, stderr); return 2;
        }
    }
    if (!endpoint || optind != argc || s_parse_endpoint(&h, endpoint) < 0 || nraw < 0 || nidle < 0 || nstall < 0 ||
        nflood < 0 || hold < 0) {
        fputs(s_usage, stderr);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    /* One descriptor per connection: ask for what we need (root may raise the hard limit too). */
    struct rlimit rl = { (rlim_t)(nraw + nidle + nstall) + 64, (rlim_t)(nraw + nidle + nstall) + 64 };
    struct rlimit cur;
    if (getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_cur < rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        cur.rlim_cur = cur.rlim_max;
        setrlimit(RLIMIT_NOFILE, &cur);
    }
    if ((h.ep = epoll_create1(EPOLL_CLOEXEC)) < 0 || (nstall && s_make_hello(&h, full) < 0)) {
        fprintf(stderr, "pl_hostile: setup failed: %s\n", strerror(errno));
        return 2;
    }
    double t0 = s_now();
    s_open(&h, nraw, 0);
    s_open(&h, nidle, 1);
    s_open(&h, nstall, 2);
    printf("opened: %d raw, %d idle, %d stalled: %d connections in %.2f s, %d failed\n", nraw, nidle, nstall, h.open,
           s_now() - t0, h.failed);
    if (nflood)
        s_flood(&h, nflood);
    s_hold(&h, hold);
    return 0;
}
