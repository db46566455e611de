/* tls_priv: what tls_ctx.c, tls_chan.c and tls_diag.c share behind tls_chan.h; no other module includes it. */
#ifndef PLAUNCH_TLS_PRIV_H
#define PLAUNCH_TLS_PRIV_H

#include "common/tls/tls_chan.h"

#include <stdatomic.h>
#include <stddef.h>

#include <openssl/ssl.h>

#define TLS_PSK_IDENTITY "plaunch-token-v1"
#define TLS_PSK_LABEL "plaunch psk v1"   /* domain separation when the token is hashed into the PSK */
#define TLS_PSK_LEN 32                   /* SHA-256, matching the PSK cipher suites' hash */

struct tls_ctx {
    SSL_CTX *ssl_ctx;
    int is_server;
    int is_psk;
    atomic_int refs;                     /* the owner's reference plus one per channel: channels of one context
                                            may come and go on several threads (pl_agentsim's) */
    unsigned char psk[TLS_PSK_LEN];
};

/* A channel keeps its context alive; tls_ctx_destroy drops one reference. */
void tls_ctx_hold(tls_ctx_t *ctx);

/* One session; tls_chan.c moves the data, tls_diag.c explains failures. */
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

/* OpenSSL callbacks installed by tls_ctx.c; they record what the handshake saw so a failure can name the reason. */
int tls_diag_on_verify(int ok, X509_STORE_CTX *store);
void tls_diag_on_psk_identity(SSL *ssl, int matched);
/* Fails the channel (state TLS_CHAN_FAILED) with a message; returns -1. */
int tls_diag_fail(tls_chan_t *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fails the channel with the reason OpenSSL's error queue and our records give for a failed `what`; returns -1. */
int tls_diag_fail_ssl(tls_chan_t *ch, const char *what);
/* The certificate's CN, else its first DNS name, made printable. */
void tls_diag_cert_name(X509 *cert, char *buf, size_t len);

#endif
