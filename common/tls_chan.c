/* tls_chan: one TLS 1.3 session over message frames: memory BIOs in and out, length-prefixed messages inside. */
#include "tls_priv.h"

#include "certs.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#define READ_CHUNK 16384 /* one TLS record of plaintext */
#define HDR 4            /* big-endian message length */

struct tls_chan {
    tls_ctx_t *ctx;
    SSL *ssl;
    BIO *rbio, *wbio;             /* owned by ssl */
    enum tls_chan_state state;
    size_t max_msg;
    unsigned long long fed;       /* ciphertext bytes received: the first two are checked by hand */
    int record_ok;                /* a TLS record from the peer was accepted */
    unsigned char *in;            /* plaintext not yet taken: [in_off, in_len) */
    size_t in_off, in_len, in_cap;
    size_t scan;                  /* headers before this offset were checked against max_msg */
    int verify_err;               /* first certificate problem the handshake saw, with the certificate's names */
    char verify_subject[128], verify_issuer[128], verify_time[40];
    int psk_offered, psk_matched;
    char expect[256];
    char peer[256];
    char err[1280];
};

/* ---- errors -------------------------------------------------------------------------------------------------- */

static int s_fail(tls_chan_t *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int s_fail(tls_chan_t *ch, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ch->err, sizeof ch->err, fmt, ap);
    va_end(ap);
    ch->state = TLS_CHAN_FAILED;
    ERR_clear_error();
    return -1;
}

/* Peer-controlled text goes into logs: keep it printable. */
static void s_printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
}

static void s_cert_name(X509 *cert, char *buf, size_t len)
{
    GENERAL_NAMES *sans;
    snprintf(buf, len, "(unnamed)");
    if (!cert)
        return;
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, (int)len) > 0) {
        s_printable(buf);
        return;
    }
    sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
        if (g->type == GEN_DNS) {
            snprintf(buf, len, "%.*s", ASN1_STRING_length(g->d.dNSName),
                     (const char *)ASN1_STRING_get0_data(g->d.dNSName));
            s_printable(buf);
            break;
        }
    }
    GENERAL_NAMES_free(sans);
    ERR_clear_error();
}

static void s_issuer_name(X509 *cert, char *buf, size_t len)
{
    snprintf(buf, len, "(unnamed)");
    if (cert && X509_NAME_get_text_by_NID(X509_get_issuer_name(cert), NID_commonName, buf, (int)len) > 0)
        s_printable(buf);
}

static void s_time(const ASN1_TIME *t, char *buf, size_t len)
{
    struct tm tm;
    if (t && ASN1_TIME_to_tm(t, &tm))
        strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
    else
        snprintf(buf, len, "(unknown time)");
}

int tls_chan_on_verify(int ok, X509_STORE_CTX *store)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
    tls_chan_t *ch = ssl ? SSL_get_app_data(ssl) : NULL;
    X509 *cert = X509_STORE_CTX_get_current_cert(store);
    int e = X509_STORE_CTX_get_error(store);
    if (ok || !ch || ch->verify_err)
        return ok;
    /* Messages name the peer's own certificate, and the issuer where the chain broke off. */
    ch->verify_err = e;
    s_cert_name(X509_STORE_CTX_get0_cert(store), ch->verify_subject, sizeof ch->verify_subject);
    s_issuer_name(cert, ch->verify_issuer, sizeof ch->verify_issuer);
    s_time(e == X509_V_ERR_CERT_NOT_YET_VALID ? X509_get0_notBefore(cert) : X509_get0_notAfter(cert),
           ch->verify_time, sizeof ch->verify_time);
    return ok;
}

void tls_chan_on_psk_identity(SSL *ssl, int matched)
{
    tls_chan_t *ch = SSL_get_app_data(ssl);
    ch->psk_offered = 1;
    ch->psk_matched |= matched;
}

/* Our verdict on the peer's certificate, from what tls_chan_on_verify recorded. */
static void s_describe_verify(tls_chan_t *ch, char *buf, size_t len)
{
    const char *who = ch->verify_subject;
    int e = ch->verify_err ? ch->verify_err : (int)SSL_get_verify_result(ch->ssl);
    if (ch->ctx->is_psk) {
        snprintf(buf, len, "the server presented a certificate instead of using the token: is the coordinator in "
                           "certificate mode (a certificate directory) rather than token mode?");
        return;
    }
    switch (e) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
        snprintf(buf, len, "peer certificate '%s' expired on %s; reissue it with plaunch certs issue --force", who,
                 ch->verify_time);
        break;
    case X509_V_ERR_CERT_NOT_YET_VALID:
        snprintf(buf, len, "peer certificate '%s' is not valid before %s; check both nodes' clocks", who,
                 ch->verify_time);
        break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        snprintf(buf, len, "peer certificate '%s' is not signed by the job CA (its issuer is '%s'); issue every "
                           "node's certificate from the same plaunch certs directory", who, ch->verify_issuer);
        break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        snprintf(buf, len, "peer certificate '%s' does not name '%s'; reissue the coordinator's certificate with "
                           "that name (plaunch certs issue DIR NAME --ip ADDR)", who, ch->expect);
        break;
    case X509_V_ERR_INVALID_PURPOSE:
        snprintf(buf, len, "peer certificate '%s' is not for TLS client/server use (extended key usage)", who);
        break;
    default:
        snprintf(buf, len, "peer certificate '%s' refused: %s", who, X509_verify_cert_error_string(e));
    }
}

/* What an alert from the peer means for us. */
static void s_describe_alert(tls_chan_t *ch, int alert, char *buf, size_t len)
{
    switch (alert) {
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_BAD_CERTIFICATE:
        snprintf(buf, len, "peer rejected our certificate: not signed by its job CA (alert %s)%s",
                 SSL_alert_desc_string_long(alert), ch->ctx->is_server ? "; or the peer is in token mode" : "");
        break;
    case SSL_AD_CERTIFICATE_EXPIRED:
        snprintf(buf, len, "peer rejected our certificate: certificate expired; reissue it with plaunch certs "
                           "issue --force");
        break;
    case SSL_AD_CERTIFICATE_REQUIRED:
        snprintf(buf, len, "peer requires a certificate and we sent none");
        break;
    case SSL_AD_DECRYPT_ERROR:
    case SSL_AD_ILLEGAL_PARAMETER:
        /* OpenSSL answers a PSK binder that does not verify with one of these, depending on its version. */
        if (ch->ctx->is_psk && ch->state == TLS_CHAN_HANDSHAKE) {
            snprintf(buf, len, "bad PSK / token mismatch: the peer rejected our token (alert %s); use the token "
                               "the coordinator printed", SSL_alert_desc_string_long(alert));
            break;
        }
        /* fall through */
    case SSL_AD_HANDSHAKE_FAILURE:
        snprintf(buf, len, "peer refused the handshake (alert handshake failure): is it in %s mode?",
                 ch->ctx->is_psk ? "certificate" : "token");
        break;
    default:
        snprintf(buf, len, "peer sent TLS alert '%s'", SSL_alert_desc_string_long(alert));
    }
}

/* Names the reason of a failed handshake or record from OpenSSL's error queue and our own records of it. */
static int s_fail_ssl(tls_chan_t *ch, const char *what)
{
    char why[1024];
    unsigned long code = ERR_peek_error();
    int reason = ERR_GET_REASON(code);
    if (ch->ctx->is_psk && ch->ctx->is_server && !ch->psk_matched && ch->state == TLS_CHAN_HANDSHAKE)
        snprintf(why, sizeof why, ch->psk_offered
                     ? "peer offered a pre-shared key that is not plaunch's token"
                     : "peer offered no token: is it in certificate mode (a certificate directory) instead?");
    else if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED)
        s_describe_verify(ch, why, sizeof why);
    else if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
        snprintf(why, sizeof why, "peer sent no certificate; give that node its certificate and key "
                                  "(plaunch certs issue DIR NAME)");
    else if (reason == SSL_R_BINDER_DOES_NOT_VERIFY)
        snprintf(why, sizeof why, "bad PSK / token mismatch: the peer's token differs from ours");
    else if (reason > SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256)
        s_describe_alert(ch, reason - SSL_AD_REASON_OFFSET, why, sizeof why);
    else if (reason == SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC)
        snprintf(why, sizeof why, "a record failed authentication (frame lost, reordered or tampered with)");
    else if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
             reason == SSL_R_HTTP_REQUEST || reason == SSL_R_LENGTH_TOO_SHORT ||
             reason == SSL_R_ENCRYPTED_LENGTH_TOO_LONG || reason == SSL_R_UNEXPECTED_RECORD)
        snprintf(why, sizeof why, ch->record_ok ? "malformed TLS record (frame lost or corrupted?)"
                                                : "not a TLS record (plaintext client?)");
    else if (reason == SSL_R_UNSUPPORTED_PROTOCOL)
        snprintf(why, sizeof why, "peer does not speak TLS 1.3");
    else if (code)
        snprintf(why, sizeof why, "%s", ERR_reason_error_string(code) ? ERR_reason_error_string(code)
                                                                         : "unknown OpenSSL error");
    else
        snprintf(why, sizeof why, "unknown error (errno %s)", strerror(errno));
    return s_fail(ch, "TLS %s failed: %s", what, why);
}

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
            return s_fail(ch, "TLS handshake failed: it completed without the shared token");
        snprintf(ch->peer, sizeof ch->peer, "%s", TLS_PEER_PSK);
    } else {
        cert = SSL_get0_peer_certificate(ch->ssl);
        if (!cert || SSL_get_verify_result(ch->ssl) != X509_V_OK)
            return s_fail(ch, "TLS handshake failed: the peer's certificate was not verified");
        s_cert_name(cert, ch->peer, sizeof ch->peer);
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
    return s_fail_ssl(ch, "handshake");
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
            return s_fail(ch, "peer sent a message of %zu bytes, more than the limit of %zu bytes", len,
                          ch->max_msg);
        if (ch->in_len - ch->scan - HDR < len)
            break;
        ch->scan += HDR + len;
    }
    return 0;
}

/* Room for one more record of plaintext; the backlog a peer can make us hold is bounded. */
static int s_reserve(tls_chan_t *ch)
{
    size_t limit = 2 * (ch->max_msg + HDR) + 2 * TLS_CHAN_FRAME_MAX, cap;
    unsigned char *p;
    if (ch->in_off > 0 && ch->in_off >= ch->in_len - ch->in_off) {
        memmove(ch->in, ch->in + ch->in_off, ch->in_len - ch->in_off);
        ch->in_len -= ch->in_off;
        ch->scan -= ch->in_off;
        ch->in_off = 0;
    }
    if (ch->in_cap - ch->in_len >= READ_CHUNK)
        return 0;
    if (ch->in_len - ch->in_off > limit)
        return s_fail(ch, "more than %zu bytes of received messages are waiting; the caller must take them with "
                          "tls_chan_recv", limit);
    cap = ch->in_cap ? ch->in_cap * 2 : 4 * READ_CHUNK;
    while (cap - ch->in_len < READ_CHUNK)
        cap *= 2;
    if (!(p = realloc(ch->in, cap)))
        return s_fail(ch, "out of memory for received messages (%zu bytes)", cap);
    ch->in = p;
    ch->in_cap = cap;
    return 0;
}

static int s_read_app(tls_chan_t *ch)
{
    for (;;) {
        int n, e;
        if (s_reserve(ch) < 0)
            return -1;
        ERR_clear_error();
        n = SSL_read(ch->ssl, ch->in + ch->in_len, READ_CHUNK);
        if (n > 0) {
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
        return s_fail_ssl(ch, "receive");
    }
    return s_scan(ch);
}

/* The first bytes must open a TLS record (handshake, or an alert to a client); anything else is not TLS, which
 * OpenSSL would report less plainly. */
static int s_check_start(tls_chan_t *ch, const unsigned char *p, size_t len)
{
    for (size_t i = 0; ch->fed + i < 2 && i < len; i++) {
        int ok = ch->fed + i == 0 ? p[i] == 0x16 || (!ch->ctx->is_server && p[i] == 0x15) : p[i] == 0x03;
        if (!ok)
            return s_fail(ch, "TLS handshake failed: not a TLS record (plaintext client?): byte %llu is 0x%02x",
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
        return s_fail(ch, "received a frame of %zu bytes, more than the limit of %d (not a plaunch TLS peer?)", len,
                      TLS_CHAN_FRAME_MAX);
    if (s_check_start(ch, frame, len) < 0)
        return -1;
    if (BIO_write(ch->rbio, frame, (int)len) != (int)len)
        return s_fail(ch, "out of memory buffering a frame of %zu bytes", len);
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
    size_t n = BIO_ctrl_pending(ch->wbio);
    int got;
    if (n > cap)
        n = cap;
    if (n > TLS_CHAN_FRAME_MAX)
        n = TLS_CHAN_FRAME_MAX;
    if (n == 0)
        return 0;
    got = BIO_read(ch->wbio, frame, (int)n);
    return got > 0 ? (size_t)got : 0;
}

static int s_write(tls_chan_t *ch, const void *data, size_t len)
{
    ERR_clear_error();
    if (SSL_write(ch->ssl, data, (int)len) == (int)len)
        return 0;
    return s_fail_ssl(ch, "send");
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
        return s_fail(ch, "out of memory for a received message of %zu bytes", n);
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
            return s_fail_ssl(ch, "close");
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
