/* tls_chan: one TLS 1.3 session over message frames: memory BIOs in and out, length-prefixed messages inside. */
#include "common/tls/tls_priv.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#define READ_CHUNK 16384 /* one TLS record of plaintext */
#define HDR 4            /* big-endian message length */
#define TLS_RECORD_HDR 5 /* type, version, length */

/* ---- life cycle ---------------------------------------------------------------------------------------------- */

tls_chan_t *tls_chan_new(tls_ctx_t *ctx)
{
    tls_chan_t *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    ch->ssl = SSL_new(ctx->ssl_ctx);
    ch->rbio = BIO_new(BIO_s_mem());
    ch->wbio = BIO_new(BIO_s_mem());
    if (!ch->ssl || !ch->rbio || !ch->wbio) {
        SSL_free(ch->ssl);
        BIO_free(ch->rbio);
        BIO_free(ch->wbio);
        free(ch);
        ERR_clear_error();
        errno = ENOMEM;
        return NULL;
    }
    /* An empty memory BIO means "wait for the next frame", not end of stream. */
    BIO_set_mem_eof_return(ch->rbio, -1);
    BIO_set_mem_eof_return(ch->wbio, -1);
    SSL_set_bio(ch->ssl, ch->rbio, ch->wbio);
    SSL_set_app_data(ch->ssl, ch);
    if (ctx->is_server)
        SSL_set_accept_state(ch->ssl);
    else
        SSL_set_connect_state(ch->ssl);
    tls_ctx_hold(ctx);
    ch->ctx = ctx;
    ch->state = TLS_CHAN_HANDSHAKE;
    ch->max_msg = TLS_CHAN_MSG_MAX;
    return ch;
}

void tls_chan_destroy(tls_chan_t **p)
{
    tls_chan_t *ch = p ? *p : NULL;
    if (!ch)
        return;
    *p = NULL;
    SSL_free(ch->ssl);
    tls_ctx_destroy(&ch->ctx);
    if (ch->in)
        OPENSSL_cleanse(ch->in, ch->in_cap);
    free(ch->in);
    free(ch);
}

int tls_chan_expect_peer(tls_chan_t *ch, const char *host)
{
    unsigned char ip[16];
    int ok;
    if (ch->ctx->is_psk)
        return 0;
    snprintf(ch->expect, sizeof ch->expect, "%s", host);
    if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1)
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ch->ssl), host);
    else
        ok = SSL_set1_host(ch->ssl, host);
    ERR_clear_error();
    if (!ok) {
        snprintf(ch->err, sizeof ch->err, "cannot expect peer name '%s'", host);
        return -1;
    }
    return 0;
}

/* ---- the handshake and incoming data --------------------------------------------------------------------------- */

static int s_on_established(tls_chan_t *ch)
{
    X509 *cert;
    if (ch->ctx->is_psk) {
        /* The PSK was the only credential: a handshake that did not use it authenticated nobody. */
        if (!SSL_session_reused(ch->ssl))
            return tls_diag_fail(ch, "TLS handshake failed: it completed without the shared token");
        snprintf(ch->peer, sizeof ch->peer, "%s", TLS_PEER_PSK);
    } else {
        cert = SSL_get0_peer_certificate(ch->ssl);
        if (!cert || SSL_get_verify_result(ch->ssl) != X509_V_OK)
            return tls_diag_fail(ch, "TLS handshake failed: the peer's certificate was not verified");
        tls_diag_cert_name(cert, ch->peer, sizeof ch->peer);
    }
    ch->state = TLS_CHAN_OPEN;
    return 0;
}

static int s_handshake(tls_chan_t *ch)
{
    int r, e;
    ERR_clear_error();
    r = SSL_do_handshake(ch->ssl);
    if (r == 1)
        return s_on_established(ch);
    e = SSL_get_error(ch->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    return tls_diag_fail_ssl(ch, "handshake");
}

int tls_chan_connect(tls_chan_t *ch)
{
    assert(!ch->ctx->is_server);
    if (ch->state != TLS_CHAN_HANDSHAKE)
        return ch->state == TLS_CHAN_FAILED ? -1 : 0;
    return s_handshake(ch);
}

static uint32_t s_get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks each message header as soon as its 4 bytes are in, before anything is allocated for the body. */
static int s_scan(tls_chan_t *ch)
{
    if (ch->scan < ch->in_off)
        ch->scan = ch->in_off;
    while (ch->in_len - ch->scan >= HDR) {
        size_t len = s_get32(ch->in + ch->scan);
        if (len > ch->max_msg)
            return tls_diag_fail(ch, "peer sent a message of %zu bytes, more than the limit of %zu bytes", len,
                          ch->max_msg);
        if (ch->in_len - ch->scan - HDR < len)
            break;
        ch->scan += HDR + len;
    }
    return 0;
}

/* Room for n more bytes of plaintext; the backlog a peer can make us hold is bounded. The buffer grows with what
 * is waiting (a session that carries small messages keeps a few hundred bytes, not a record's 16 KiB). */
static int s_reserve(tls_chan_t *ch, size_t n)
{
    size_t limit = 2 * (ch->max_msg + HDR) + 2 * TLS_CHAN_FRAME_MAX, cap;
    unsigned char *p;
    if (ch->in_off > 0 && ch->in_off >= ch->in_len - ch->in_off) {
        memmove(ch->in, ch->in + ch->in_off, ch->in_len - ch->in_off);
        ch->in_len -= ch->in_off;
        ch->scan -= ch->in_off;
        ch->in_off = 0;
    }
    if (ch->in_cap - ch->in_len >= n)
        return 0;
    if (ch->in_len - ch->in_off > limit)
        return tls_diag_fail(ch, "more than %zu bytes of received messages are waiting; the caller must take them with "
                          "tls_chan_recv", limit);
    cap = ch->in_cap ? ch->in_cap * 2 : 512;
    while (cap - ch->in_len < n)
        cap *= 2;
    if (!(p = malloc(cap)))
        return tls_diag_fail(ch, "out of memory for received messages (%zu bytes)", cap);
    if (ch->in) { /* a copy, so that the old bytes can be wiped: they are plaintext */
        memcpy(p, ch->in, ch->in_len);
        OPENSSL_cleanse(ch->in, ch->in_cap);
        free(ch->in);
    }
    ch->in = p;
    ch->in_cap = cap;
    return 0;
}

static int s_read_app(tls_chan_t *ch)
{
    unsigned char rec[READ_CHUNK];
    size_t dirty = 0; /* bytes of rec that held plaintext */
    int rc = 0;
    for (;;) {
        int n, e;
        ERR_clear_error();
        n = SSL_read(ch->ssl, rec, sizeof rec);
        if (n > 0) {
            dirty = (size_t)n > dirty ? (size_t)n : dirty;
            if ((rc = s_reserve(ch, (size_t)n)) < 0)
                break;
            memcpy(ch->in + ch->in_len, rec, (size_t)n);
            ch->in_len += (size_t)n;
            continue;
        }
        e = SSL_get_error(ch->ssl, n);
        if (e == SSL_ERROR_WANT_READ)
            break;
        if (e == SSL_ERROR_ZERO_RETURN) {
            ch->state = TLS_CHAN_CLOSED;
            break;
        }
        rc = tls_diag_fail_ssl(ch, "receive");
        break;
    }
    OPENSSL_cleanse(rec, dirty);
    return rc < 0 ? -1 : s_scan(ch);
}

/* The first bytes must open a TLS record (handshake, or an alert to a client); anything else is not TLS, which
 * OpenSSL would report less plainly. */
static int s_check_start(tls_chan_t *ch, const unsigned char *p, size_t len)
{
    for (size_t i = 0; ch->fed + i < 2 && i < len; i++) {
        int ok = ch->fed + i == 0 ? p[i] == 0x16 || (!ch->ctx->is_server && p[i] == 0x15) : p[i] == 0x03;
        if (!ok)
            return tls_diag_fail(ch, "TLS handshake failed: not a TLS record (plaintext client?): byte %llu is 0x%02x",
                          ch->fed + i, p[i]);
    }
    ch->fed += len;
    return 0;
}

int tls_chan_feed(tls_chan_t *ch, const void *frame, size_t len)
{
    if (ch->state == TLS_CHAN_FAILED)
        return -1;
    if (ch->state == TLS_CHAN_CLOSED || len == 0)
        return 0;
    if (len > TLS_CHAN_FRAME_MAX)
        return tls_diag_fail(ch, "received a frame of %zu bytes, more than the limit of %d (not a plaunch TLS peer?)", len,
                      TLS_CHAN_FRAME_MAX);
    if (s_check_start(ch, frame, len) < 0)
        return -1;
    if (BIO_write(ch->rbio, frame, (int)len) != (int)len)
        return tls_diag_fail(ch, "out of memory buffering a frame of %zu bytes", len);
    if (ch->state == TLS_CHAN_HANDSHAKE) {
        if (s_handshake(ch) < 0)
            return -1;
        if (ch->state == TLS_CHAN_HANDSHAKE)
            return 0;
    }
    ch->record_ok = 1;
    return s_read_app(ch);
}

/* ---- outgoing data --------------------------------------------------------------------------------------------- */

size_t tls_chan_pending(const tls_chan_t *ch)
{
    return BIO_ctrl_pending(ch->wbio);
}

size_t tls_chan_pull(tls_chan_t *ch, void *frame, size_t cap)
{
    const unsigned char *data;
    long avail = BIO_get_mem_data(ch->wbio, (char **)&data);
    size_t n = 0, pending = avail > 0 ? (size_t)avail : 0;
    int got;
    if (cap > TLS_CHAN_FRAME_MAX)
        cap = TLS_CHAN_FRAME_MAX;
    /* OpenSSL writes whole records; a frame takes as many whole records as fit, so every frame starts a record
     * and a receiver can recognise a new ClientHello (tls_chan_is_client_hello). */
    while (pending - n >= TLS_RECORD_HDR) {
        size_t rec = TLS_RECORD_HDR + ((size_t)data[n + 3] << 8 | data[n + 4]);
        if (n + rec > cap || n + rec > pending)
            break;
        n += rec;
    }
    if (n == 0)
        n = pending < cap ? pending : cap; /* cap below one record: the stream is still right, only unaligned */
    if (n == 0)
        return 0;
    got = BIO_read(ch->wbio, frame, (int)n);
    return got > 0 ? (size_t)got : 0;
}

int tls_chan_is_client_hello(const void *frame, size_t len)
{
    const unsigned char *p = frame;
    /* Record type handshake, version 3.x, first handshake message ClientHello (1). TLS 1.3 encrypts every later
     * handshake message under the application-data record type, so this only matches a session's first frame. */
    return len > TLS_RECORD_HDR && p[0] == 0x16 && p[1] == 0x03 && p[TLS_RECORD_HDR] == 0x01;
}

static int s_write(tls_chan_t *ch, const void *data, size_t len)
{
    ERR_clear_error();
    if (SSL_write(ch->ssl, data, (int)len) == (int)len)
        return 0;
    return tls_diag_fail_ssl(ch, "send");
}

int tls_chan_send(tls_chan_t *ch, const void *msg, size_t len)
{
    unsigned char buf[READ_CHUNK];
    size_t head = len < sizeof buf - HDR ? len : sizeof buf - HDR;
    if (ch->state == TLS_CHAN_FAILED)
        return -1;
    if (ch->state != TLS_CHAN_OPEN) {
        snprintf(ch->err, sizeof ch->err, "cannot send: the TLS channel is %s",
                 ch->state == TLS_CHAN_HANDSHAKE ? "still in its handshake" : "closed");
        return -1;
    }
    if (len > ch->max_msg) {
        snprintf(ch->err, sizeof ch->err, "cannot send a message of %zu bytes: the limit is %zu bytes", len,
                 ch->max_msg);
        return -1;
    }
    /* Header and the start of the body share a record; the rest goes straight from the caller's buffer. */
    buf[0] = (unsigned char)(len >> 24);
    buf[1] = (unsigned char)(len >> 16);
    buf[2] = (unsigned char)(len >> 8);
    buf[3] = (unsigned char)len;
    if (head)
        memcpy(buf + HDR, msg, head);
    if (s_write(ch, buf, HDR + head) < 0)
        return -1;
    if (len > head && s_write(ch, (const unsigned char *)msg + head, len - head) < 0)
        return -1;
    return 0;
}

int tls_chan_recv(tls_chan_t *ch, void **msg, size_t *len)
{
    size_t avail = ch->in_len - ch->in_off, n;
    unsigned char *out;
    if (ch->state == TLS_CHAN_FAILED)
        return -1;
    if (avail < HDR || avail - HDR < (n = s_get32(ch->in + ch->in_off)))
        return 0;
    /* s_scan already refused n > max_msg, so this allocation is bounded. */
    if (!(out = malloc(n + 1)))
        return tls_diag_fail(ch, "out of memory for a received message of %zu bytes", n);
    memcpy(out, ch->in + ch->in_off + HDR, n);
    out[n] = '\0';
    OPENSSL_cleanse(ch->in + ch->in_off, HDR + n);
    ch->in_off += HDR + n;
    if (ch->in_off == ch->in_len)
        ch->in_off = ch->in_len = ch->scan = 0;
    *msg = out;
    *len = n;
    return 1;
}

int tls_chan_close(tls_chan_t *ch)
{
    if (ch->state == TLS_CHAN_FAILED)
        return -1;
    if (ch->state == TLS_CHAN_OPEN) {
        ERR_clear_error();
        if (SSL_shutdown(ch->ssl) < 0)
            return tls_diag_fail_ssl(ch, "close");
    }
    ch->state = TLS_CHAN_CLOSED;
    return 0;
}

/* ---- accessors ----------------------------------------------------------------------------------------------- */

void tls_chan_set_max_msg(tls_chan_t *ch, size_t max)
{
    assert(max > 0 && max <= UINT32_MAX);
    ch->max_msg = max;
}

enum tls_chan_state tls_chan_state(const tls_chan_t *ch)
{
    return ch->state;
}

int tls_chan_is_established(const tls_chan_t *ch)
{
    return ch->state == TLS_CHAN_OPEN;
}

const char *tls_chan_peer_name(const tls_chan_t *ch)
{
    return ch->peer[0] ? ch->peer : NULL;
}

const char *tls_chan_error(const tls_chan_t *ch)
{
    return ch->err;
}
