/* pl_client: a control-plane client for black-box tests that the real agent cannot play: it joins a coordinator
 * with chosen credentials (token, job CA, or no certificate at all), protocol version and job id, and says how it
 * was refused; it also writes an already expired node certificate. Built on libplaunch_common (tls_chan, wire). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/tls/certs.h"
#include "common/tls/tls_chan.h"
#include "common/wire/wire.h"

/* Exit statuses: a refusal is what the tests expect of this client. */
enum { PC_REFUSED = 0, PC_ACCEPTED = 1, PC_USAGE = 2, PC_SILENT = 3 };

static const char s_usage[] =
    "Usage: pl_client --endpoint tcp://HOST:PORT (--token HEX | --tls-dir DIR [--name NAME] | --no-cert)\n"
    "                 [--proto-version N] [--job-id ID] [--timeout SECONDS]\n"
    "       pl_client --write-expired-cert DIR NAME\n"
    "Joins the coordinator and prints 'refused: ...' (exit 0), 'accepted: ...' (exit 1) or 'silent: ...' (exit 3).\n"
    "--no-cert: a TLS 1.3 client that presents no certificate. --job-id: default the one HELLO names.\n"
    "--write-expired-cert: DIR/NAME.crt + .key signed by DIR's CA, valid from 2 days ago to 1 day ago.\n";

struct pc_opts {
    const char *endpoint, *token, *tls_dir, *name, *job_id, *expired_dir;
    int no_cert;
    unsigned proto;
    double timeout;
};

struct pc {
    void *zctx, *sock;
    tls_ctx_t *tls;
    tls_chan_t *ch;            /* token and CA modes */
    SSL_CTX *raw_ctx;          /* --no-cert: plain OpenSSL, since a tls_chan always presents a certificate */
    SSL *raw;
    BIO *rbio, *wbio;          /* owned by raw */
    const struct pc_opts *o;
    int joined;
    unsigned char frame[TLS_CHAN_FRAME_MAX];
};

static int s_write_expired(const char *dir, const char *name)
{
    char err[512];
    certs_opts_t opts = CERTS_OPTS_ZERO;
    opts.not_before = time(NULL) - 2 * 86400;
    opts.not_after = time(NULL) - 86400;
    opts.force = 1;
    if (certs_issue(dir, name, &opts, err, sizeof err) < 0) {
        fprintf(stderr, "pl_client: %s\n", err);
        return PC_USAGE;
    }
    printf("wrote expired %s/%s.crt\n", dir, name);
    return 0;
}

static int s_raw_new(struct pc *c)
{
    c->raw_ctx = SSL_CTX_new(TLS_client_method());
    if (!c->raw_ctx || !SSL_CTX_set_min_proto_version(c->raw_ctx, TLS1_3_VERSION) ||
        !(c->raw = SSL_new(c->raw_ctx)) || !(c->rbio = BIO_new(BIO_s_mem())) || !(c->wbio = BIO_new(BIO_s_mem())))
        return -1;
    SSL_CTX_set_verify(c->raw_ctx, SSL_VERIFY_NONE, NULL); /* the server's refusal is under test, not its name */
    SSL_set_bio(c->raw, c->rbio, c->wbio);
    SSL_set_connect_state(c->raw);
    SSL_do_handshake(c->raw);
    return 0;
}

static int s_setup(struct pc *c, char *err, size_t errlen)
{
    const struct pc_opts *o = c->o;
    int zero = 0;
    if (o->token) {
        unsigned char key[TLS_TOKEN_MAX_BYTES];
        size_t keylen;
        if (tls_token_parse_hex(o->token, key, sizeof key, &keylen, err, errlen) < 0 ||
            !(c->tls = tls_ctx_new_psk(0, key, keylen, err, errlen)))
            return -1;
    } else if (o->tls_dir && !(c->tls = tls_ctx_new_ca(0, o->tls_dir, o->name, err, errlen))) {
        return -1;
    }
    if (c->tls && (!(c->ch = tls_chan_new(c->tls)) || tls_chan_connect(c->ch) < 0)) {
        snprintf(err, errlen, "TLS: %s", c->ch ? tls_chan_error(c->ch) : "out of memory");
        return -1;
    }
    if (o->no_cert && s_raw_new(c) < 0) {
        snprintf(err, errlen, "OpenSSL client setup failed");
        return -1;
    }
    if (!(c->zctx = zmq_ctx_new()) || !(c->sock = zmq_socket(c->zctx, ZMQ_DEALER)) ||
        zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof zero) < 0 || zmq_connect(c->sock, o->endpoint) < 0) {
        snprintf(err, errlen, "cannot connect to %s: %s", o->endpoint, zmq_strerror(errno));
        return -1;
    }
    return 0;
}

static void s_teardown(struct pc *c)
{
    tls_chan_destroy(&c->ch);
    tls_ctx_destroy(&c->tls);
    SSL_free(c->raw);
    SSL_CTX_free(c->raw_ctx);
    if (c->sock)
        zmq_close(c->sock);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
}

/* Sends every pending TLS record, as the agent does: one frame per pull. */
static void s_flush(struct pc *c)
{
    size_t n;
    int r;
    if (c->ch)
        while ((n = tls_chan_pull(c->ch, c->frame, sizeof c->frame)) > 0)
            zmq_send(c->sock, c->frame, n, 0);
    if (c->raw)
        while ((r = BIO_read(c->wbio, c->frame, sizeof c->frame)) > 0)
            zmq_send(c->sock, c->frame, (size_t)r, 0);
}

static void s_send_join(struct pc *c, const char *hello_job)
{
    Plaunch__Join j = PLAUNCH__JOIN__INIT;
    uint32_t ports[1] = { 40001 };
    wire_msg_t m;
    char err[512];
    size_t len;
    j.hostname = (char *)"pl-client";
    j.addr = (char *)"192.0.2.1"; /* TEST-NET-1: never reached, the JOIN is meant to be refused */
    j.pid = (uint32_t)getpid();
    j.nproc = 1;
    j.requested_node_rank = -1;
    j.gpus = (char *)"";
    j.plaunch_version = (char *)PLAUNCH_VERSION;
    j.n_worker_ports = 1;
    j.worker_ports = ports;
    j.master_port = 40000;
    wire_init(&m, c->o->job_id ? c->o->job_id : hello_job, 0, WIRE_JOIN, &j);
    m.protocol_version = c->o->proto;
    void *buf = wire_encode_alloc(&m, &len, err, sizeof err);
    if (!buf || tls_chan_send(c->ch, buf, len) < 0)
        fprintf(stderr, "pl_client: JOIN not sent: %s\n", buf ? tls_chan_error(c->ch) : err);
    else
        printf("sent JOIN: protocol %u, job '%s'\n", m.protocol_version, m.job_id);
    free(buf);
    c->joined = 1;
    s_flush(c);
}

/* One message from the coordinator; returns an exit status once the outcome is known, else -1. */
static int s_on_message(struct pc *c, const void *data, size_t len)
{
    char err[512];
    wire_msg_t *m = wire_decode(data, len, WIRE_TO_AGENT, err, sizeof err);
    int rc = -1;
    if (!m) {
        printf("bad message from the coordinator: %s\n", err);
        return -1;
    }
    switch (m->body_case) {
    case WIRE_HELLO:
        printf("HELLO from %s, job '%s'\n", m->hello->hostname, m->job_id);
        if (!c->joined)
            s_send_join(c, m->job_id);
        break;
    case WIRE_REFUSE: {
        const ProtobufCEnumValue *code =
            protobuf_c_enum_descriptor_get_value(&plaunch__refuse__code__descriptor, m->refuse->code);
        printf("refused: REFUSE %s: %s\n", code ? code->name : "(unknown code)", m->refuse->text);
        rc = PC_REFUSED;
        break;
    }
    case WIRE_ASSIGN:
        printf("accepted: ASSIGN node rank %u\n", m->assign->node_rank);
        rc = PC_ACCEPTED;
        break;
    default:
        break;
    }
    wire_free(&m);
    return rc;
}

/* One frame through tls_chan; returns an exit status once the outcome is known, else -1. */
static int s_on_frame_chan(struct pc *c, const void *frame, size_t len)
{
    void *msg;
    size_t mlen;
    int rc = -1;
    if (tls_chan_feed(c->ch, frame, len) < 0) {
        s_flush(c);
        printf("refused: TLS: %s\n", tls_chan_error(c->ch));
        return PC_REFUSED;
    }
    s_flush(c);
    while (rc < 0 && tls_chan_recv(c->ch, &msg, &mlen) == 1) {
        rc = s_on_message(c, msg, mlen);
        free(msg);
    }
    if (rc < 0 && tls_chan_state(c->ch) == TLS_CHAN_CLOSED) {
        printf("silent: the coordinator closed the session without a REFUSE\n");
        rc = PC_SILENT;
    }
    return rc;
}

/* One frame through plain OpenSSL (--no-cert): any application data means the server took us in. */
static int s_on_frame_raw(struct pc *c, const void *frame, size_t len)
{
    char reason[256];
    unsigned char data[512];
    int r = 1;
    BIO_write(c->rbio, frame, (int)len);
    if (!SSL_is_init_finished(c->raw))
        r = SSL_do_handshake(c->raw);
    s_flush(c); /* our (empty) Certificate and Finished go out before we wait for the verdict */
    if (SSL_is_init_finished(c->raw) && (r = SSL_read(c->raw, data, sizeof data)) > 0) {
        printf("accepted: the coordinator sent application data to a client without a certificate\n");
        return PC_ACCEPTED;
    }
    if (r <= 0 && SSL_get_error(c->raw, r) != SSL_ERROR_WANT_READ) {
        printf("refused: TLS: %s\n", certs_ssl_reason(reason, sizeof reason));
        return PC_REFUSED;
    }
    return -1;
}

static int s_run(struct pc *c)
{
    struct timespec t0, now;
    int rc = -1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    s_flush(c);
    while (rc < 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = c->o->timeout - (double)(now.tv_sec - t0.tv_sec) - (now.tv_nsec - t0.tv_nsec) / 1e9;
        if (left <= 0) {
            printf("silent: no outcome from %s within %g s\n", c->o->endpoint, c->o->timeout);
            return PC_SILENT;
        }
        zmq_pollitem_t item = { c->sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&item, 1, (long)(left * 1000) + 1) <= 0)
            continue;
        int n = zmq_recv(c->sock, c->frame, sizeof c->frame, ZMQ_DONTWAIT);
        if (n < 0 || n > (int)sizeof c->frame)
            continue;
        rc = c->ch ? s_on_frame_chan(c, c->frame, (size_t)n) : s_on_frame_raw(c, c->frame, (size_t)n);
    }
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "endpoint", required_argument, NULL, 'e' }, { "token", required_argument, NULL, 't' },
        { "tls-dir", required_argument, NULL, 'd' },  { "name", required_argument, NULL, 'n' },
        { "no-cert", no_argument, NULL, 'N' },         { "proto-version", required_argument, NULL, 'p' },
        { "job-id", required_argument, NULL, 'j' },   { "timeout", required_argument, NULL, 'T' },
        { "write-expired-cert", required_argument, NULL, 'x' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    struct pc_opts o = { .proto = WIRE_PROTOCOL_VERSION, .timeout = 10 };
    struct pc c = { .o = &o };
    char err[1024];
    int opt, rc;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'e': o.endpoint = optarg; break;
        case 't': o.token = optarg; break;
        case 'd': o.tls_dir = optarg; break;
        case 'n': o.name = optarg; break;
        case 'N': o.no_cert = 1; break;
        case 'p': o.proto = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'j': o.job_id = optarg; break;
        case 'T': o.timeout = atof(optarg); break;
        case 'x': o.expired_dir = optarg; break;
        case 'h': fputs(s_usage, stdout); return 0;
        default: fputs(s_usage, stderr); return PC_USAGE;
        }
    }
    if (o.expired_dir && optind + 1 == argc)
        return s_write_expired(o.expired_dir, argv[optind]);
    if (!o.endpoint || optind != argc || (!!o.token + !!o.tls_dir + o.no_cert) != 1 || o.timeout <= 0) {
        fputs(s_usage, stderr);
        return PC_USAGE;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (s_setup(&c, err, sizeof err) < 0) {
        fprintf(stderr, "pl_client: %s\n", err);
        s_teardown(&c);
        return PC_USAGE;
    }
    rc = s_run(&c);
    s_teardown(&c);
    return rc;
}
