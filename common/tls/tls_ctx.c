/* tls_ctx: TLS 1.3 credentials for the control plane: mutual TLS with the job CA, or an external PSK token. */
#include "common/tls/tls_priv.h"

#include "common/tls/certs.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>

/* TLS_AES_128_GCM_SHA256: the cipher the PSK session is bound to (TLS 1.3 ties a PSK to one hash). */
static const unsigned char s_psk_cipher_id[2] = { 0x13, 0x01 };

static tls_ctx_t *s_ctx_new(int is_server, int is_psk, char *err, size_t errlen)
{
    char reason[256];
    tls_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ctx->is_server = is_server;
    ctx->is_psk = is_psk;
    atomic_init(&ctx->refs, 1);
    ctx->ssl_ctx = SSL_CTX_new(is_server ? TLS_server_method() : TLS_client_method());
    if (!ctx->ssl_ctx || !SSL_CTX_set_min_proto_version(ctx->ssl_ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_max_proto_version(ctx->ssl_ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_num_tickets(ctx->ssl_ctx, 0)) {
        snprintf(err, errlen, "cannot set up TLS: %s", certs_ssl_reason(reason, sizeof reason));
        tls_ctx_destroy(&ctx);
        return NULL;
    }
    /* Sessions are never resumed (a reconnect is a full handshake), and no TLS 1.2 feature is wanted. */
    SSL_CTX_set_options(ctx->ssl_ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
    /* The middlebox disguise only adds records here: no middlebox looks inside ZeroMQ frames. */
    SSL_CTX_clear_options(ctx->ssl_ctx, SSL_OP_ENABLE_MIDDLEBOX_COMPAT);
    SSL_CTX_set_session_cache_mode(ctx->ssl_ctx, SSL_SESS_CACHE_OFF);
    /* Send only our own certificate: every peer already holds the job CA, and must use its own copy. */
    SSL_CTX_set_mode(ctx->ssl_ctx, SSL_MODE_NO_AUTO_CHAIN);
    /* Record buffers (~34 KiB a session) only while a record is in flight: a coordinator holds many sessions that
     * say little, some of them handshakes a stranger started and left (docs/security.md). */
    SSL_CTX_set_mode(ctx->ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_app_data(ctx->ssl_ctx, ctx);
    return ctx;
}

void tls_ctx_hold(tls_ctx_t *ctx)
{
    atomic_fetch_add(&ctx->refs, 1);
}

void tls_ctx_destroy(tls_ctx_t **p)
{
    tls_ctx_t *ctx = p ? *p : NULL;
    if (!ctx)
        return;
    *p = NULL;
    if (atomic_fetch_sub(&ctx->refs, 1) > 1)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    OPENSSL_cleanse(ctx->psk, sizeof ctx->psk);
    free(ctx);
}

int tls_ctx_is_server(const tls_ctx_t *ctx)
{
    return ctx->is_server;
}

/* DIR/<name>.crt + .key when that certificate exists, else DIR/node.crt + node.key. */
static int s_pick_pair(const char *dir, const char *name, char *crt, char *key, size_t len, char *err,
                       size_t errlen)
{
    char tried[4096 + 8] = "";
    if (name) {
        if (certs_check_name(name, err, errlen) < 0)
            return -1;
        if (snprintf(crt, len, "%s/%s.crt", dir, name) >= (int)len)
            goto too_long;
        if (access(crt, F_OK) == 0 || errno != ENOENT) {
            snprintf(key, len, "%s/%s.key", dir, name);
            return 0;
        }
        snprintf(tried, sizeof tried, "%s and ", crt);
    }
    if (snprintf(crt, len, "%s/node.crt", dir) >= (int)len)
        goto too_long;
    snprintf(key, len, "%s/node.key", dir);
    if (access(crt, F_OK) == 0 || errno != ENOENT)
        return 0;
    snprintf(err, errlen, "no certificate for node '%s' in %s: tried %s%s; issue one with: plaunch certs issue %s %s",
             name ? name : "node", dir, tried, crt, dir, name ? name : "node");
    return -1;
too_long:
    snprintf(err, errlen, "certificate directory path too long: %s", dir);
    return -1;
}

/* Loads our certificate and key; warns (does not refuse) when our own certificate is out of date, since the peer
 * will then refuse it with a precise message anyway. */
static int s_load_identity(SSL_CTX *sctx, const char *crt, const char *keypath, char *err, size_t errlen)
{
    char reason[256];
    EVP_PKEY *key = NULL;
    X509 *cert = certs_load_cert(crt, err, errlen);
    int rc = -1;
    if (!cert || !(key = certs_load_key(keypath, err, errlen)))
        goto done;
    if (!SSL_CTX_use_certificate(sctx, cert) || !SSL_CTX_use_PrivateKey(sctx, key)) {
        snprintf(err, errlen, "cannot use certificate %s with key %s: %s", crt, keypath,
                 certs_ssl_reason(reason, sizeof reason));
        goto done;
    }
    if (!SSL_CTX_check_private_key(sctx)) {
        ERR_clear_error();
        snprintf(err, errlen, "key %s does not belong to certificate %s; reissue both with plaunch certs issue --force",
                 keypath, crt);
        goto done;
    }
    if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0)
        log_warn("TLS certificate %s has expired; peers will refuse it (reissue with plaunch certs issue --force)",
                 crt);
    else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0)
        log_warn("TLS certificate %s is not valid yet; check this node's clock", crt);
    rc = 0;
done:
    X509_free(cert);
    EVP_PKEY_free(key);
    return rc;
}

tls_ctx_t *tls_ctx_new_ca(int is_server, const char *tls_dir, const char *node_name, char *err, size_t errlen)
{
    char ca[4096], crt[4096], key[4096], reason[256];
    tls_ctx_t *ctx = NULL;
    if (snprintf(ca, sizeof ca, "%s/ca.crt", tls_dir) >= (int)sizeof ca) {
        snprintf(err, errlen, "certificate directory path too long: %s", tls_dir);
        return NULL;
    }
    if (access(ca, R_OK) < 0) {
        snprintf(err, errlen, "cannot read the job CA certificate %s: %s (create a CA with: plaunch certs init %s)",
                 ca, strerror(errno), tls_dir);
        return NULL;
    }
    if (s_pick_pair(tls_dir, node_name, crt, key, sizeof crt, err, errlen) < 0)
        return NULL;
    if (!(ctx = s_ctx_new(is_server, 0, err, errlen)))
        return NULL;
    /* Only the job CA is trusted: no system trust store is loaded. Read by certs_load_cert rather than by OpenSSL,
     * which would block on a FIFO named ca.crt and read a device forever. */
    X509 *cacert = certs_load_cert(ca, err, errlen);
    if (!cacert)
        goto error;
    if (!X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx->ssl_ctx), cacert)) {
        snprintf(err, errlen, "cannot load the job CA certificate %s: %s", ca, certs_ssl_reason(reason, sizeof reason));
        X509_free(cacert);
        goto error;
    }
    X509_free(cacert);
    if (s_load_identity(ctx->ssl_ctx, crt, key, err, errlen) < 0)
        goto error;
    SSL_CTX_set_verify(ctx->ssl_ctx, SSL_VERIFY_PEER | (is_server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                       tls_diag_on_verify);
    SSL_CTX_set_verify_depth(ctx->ssl_ctx, 1);
    return ctx;
error:
    tls_ctx_destroy(&ctx);
    return NULL;
}

/* A fresh external-PSK session for this handshake: our derived key, bound to TLS 1.3 and the PSK cipher. */
static SSL_SESSION *s_psk_session(SSL *ssl)
{
    tls_ctx_t *ctx = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, s_psk_cipher_id);
    SSL_SESSION *sess = cipher ? SSL_SESSION_new() : NULL;
    if (sess && SSL_SESSION_set1_master_key(sess, ctx->psk, sizeof ctx->psk) &&
        SSL_SESSION_set_cipher(sess, cipher) && SSL_SESSION_set_protocol_version(sess, TLS1_3_VERSION))
        return sess;
    SSL_SESSION_free(sess);
    return NULL;
}

static int s_psk_use(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess)
{
    /* Called again once the server chose a cipher: offer nothing when its hash differs from the PSK's. */
    if (md && EVP_MD_get_type(md) != NID_sha256) {
        *sess = NULL;
        return 1;
    }
    *sess = s_psk_session(ssl);
    *id = (const unsigned char *)TLS_PSK_IDENTITY;
    *idlen = strlen(TLS_PSK_IDENTITY);
    return *sess != NULL;
}

static int s_psk_find(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
    int match = idlen == strlen(TLS_PSK_IDENTITY) && memcmp(id, TLS_PSK_IDENTITY, idlen) == 0;
    tls_diag_on_psk_identity(ssl, match);
    *sess = match ? s_psk_session(ssl) : NULL;
    return !match || *sess != NULL;
}

tls_ctx_t *tls_ctx_new_psk(int is_server, const unsigned char *key, size_t keylen, char *err, size_t errlen)
{
    char reason[256];
    unsigned char buf[sizeof TLS_PSK_LABEL + TLS_TOKEN_MAX_BYTES];
    unsigned int n = 0;
    tls_ctx_t *ctx;
    if (keylen < TLS_TOKEN_MIN_BYTES || keylen > TLS_TOKEN_MAX_BYTES) {
        snprintf(err, errlen, "token of %zu bytes refused: it must have %d to %d bytes (%d to %d hex digits)",
                 keylen, TLS_TOKEN_MIN_BYTES, TLS_TOKEN_MAX_BYTES, 2 * TLS_TOKEN_MIN_BYTES, 2 * TLS_TOKEN_MAX_BYTES);
        return NULL;
    }
    if (!(ctx = s_ctx_new(is_server, 1, err, errlen)))
        return NULL;
    /* The PSK is SHA-256(label || token): one fixed length for any token length, and never the raw token. */
    memcpy(buf, TLS_PSK_LABEL, sizeof TLS_PSK_LABEL);
    memcpy(buf + sizeof TLS_PSK_LABEL, key, keylen);
    if (!EVP_Digest(buf, sizeof TLS_PSK_LABEL + keylen, ctx->psk, &n, EVP_sha256(), NULL) ||
        !SSL_CTX_set_ciphersuites(ctx->ssl_ctx, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256")) {
        snprintf(err, errlen, "cannot set up the PSK: %s", certs_ssl_reason(reason, sizeof reason));
        goto error;
    }
    if (is_server) {
        SSL_CTX_set_psk_find_session_callback(ctx->ssl_ctx, s_psk_find);
        SSL_CTX_set_verify(ctx->ssl_ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_psk_use_session_callback(ctx->ssl_ctx, s_psk_use);
        /* Nothing is trusted: a server that answers with a certificate instead of the PSK is refused. */
        SSL_CTX_set_verify(ctx->ssl_ctx, SSL_VERIFY_PEER, tls_diag_on_verify);
    }
    OPENSSL_cleanse(buf, sizeof buf);
    return ctx;
error:
    OPENSSL_cleanse(buf, sizeof buf);
    tls_ctx_destroy(&ctx);
    return NULL;
}
