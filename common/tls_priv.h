/* tls_priv: what tls_ctx.c and tls_chan.c share behind tls_chan.h; no other module includes it. */
#ifndef PLAUNCH_TLS_PRIV_H
#define PLAUNCH_TLS_PRIV_H

#include "tls_chan.h"

#include <openssl/ssl.h>

#define TLS_PSK_IDENTITY "plaunch-token-v1"
#define TLS_PSK_LABEL "plaunch psk v1"   /* domain separation when the token is hashed into the PSK */
#define TLS_PSK_LEN 32                   /* SHA-256, matching the PSK cipher suites' hash */

struct tls_ctx {
    SSL_CTX *ssl_ctx;
    int is_server;
    int is_psk;
    int refs;                            /* the owner's reference plus one per channel */
    unsigned char psk[TLS_PSK_LEN];
};

/* A channel keeps its context alive; tls_ctx_destroy drops one reference. */
void tls_ctx_hold(tls_ctx_t *ctx);

/* OpenSSL callbacks installed by tls_ctx.c; they record what the handshake saw so tls_chan can name the reason. */
int tls_chan_on_verify(int ok, X509_STORE_CTX *store);
void tls_chan_on_psk_identity(SSL *ssl, int matched);

#endif
