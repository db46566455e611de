/* tls_chan: TLS 1.3 sessions carried over message frames (memory BIOs), for the agent/coordinator control plane. */
#ifndef PLAUNCH_TLS_CHAN_H
#define PLAUNCH_TLS_CHAN_H

/* Ownership and calling rules: a tls_ctx_t holds the credentials (job CA + node key, or a token) and may serve any
 * number of channels; it is reference counted, so it may be destroyed before its channels. A tls_chan_t is one TLS
 * session with one peer, used from one thread. Nothing here touches a socket: the caller moves frames in with
 * tls_chan_feed and out with tls_chan_pull. Every call that can fail returns -1 (or NULL) and leaves a message. */

#include <stddef.h>

#define TLS_CHAN_FRAME_MAX (64 * 1024)   /* largest frame tls_chan_pull produces and tls_chan_feed accepts */
#define TLS_CHAN_MSG_MAX (1024 * 1024)   /* default bound on one application message, checked before allocation */
#define TLS_TOKEN_BYTES 32               /* a generated token */
#define TLS_TOKEN_HEX_LEN (2 * TLS_TOKEN_BYTES)
#define TLS_TOKEN_MIN_BYTES 16           /* shorter tokens are refused: too easy to guess offline */
#define TLS_TOKEN_MAX_BYTES 64
#define TLS_PEER_PSK "psk"               /* tls_chan_peer_name in token mode */

typedef struct tls_ctx tls_ctx_t;
typedef struct tls_chan tls_chan_t;

enum tls_chan_state {
    TLS_CHAN_HANDSHAKE, /* handshake in progress */
    TLS_CHAN_OPEN,      /* handshake done on our side; messages may flow */
    TLS_CHAN_CLOSED,    /* a close_notify was sent or received */
    TLS_CHAN_FAILED,    /* fatal error; tls_chan_error says why. Pull once more to send the alert, then destroy */
};

/* ---- credentials ------------------------------------------------------------------------------------------- */

/* Mutual TLS with a private job CA: trusts only DIR/ca.crt and presents DIR/<node_name>.crt + .key, falling back to
 * DIR/node.crt + node.key when the named pair does not exist (node_name NULL: node.* only). Both sides require and
 * verify the peer's certificate. A key file readable by group or others is refused. */
tls_ctx_t *tls_ctx_new_ca(int is_server, const char *tls_dir, const char *node_name, char *err, size_t errlen);
/* TLS 1.3 external PSK (psk_dhe_ke: still ECDHE, so forward secret) keyed by a shared token of
 * TLS_TOKEN_MIN_BYTES..TLS_TOKEN_MAX_BYTES bytes. No certificates are involved. */
tls_ctx_t *tls_ctx_new_psk(int is_server, const unsigned char *key, size_t keylen, char *err, size_t errlen);
/* Drops the caller's reference and sets *p to NULL; safe on NULL and twice. */
void tls_ctx_destroy(tls_ctx_t **p);
int tls_ctx_is_server(const tls_ctx_t *ctx);

/* ---- tokens (PSK mode) ------------------------------------------------------------------------------------- */

/* Parses a hex token (surrounding white space ignored) into key[cap]; sets *keylen. 0, or -1 with a message. */
int tls_token_parse_hex(const char *text, unsigned char *key, size_t cap, size_t *keylen, char *err, size_t errlen);
/* Reads a hex token from a file that only its owner may read (mode 0600 or stricter). */
int tls_token_read_file(const char *path, unsigned char *key, size_t cap, size_t *keylen, char *err, size_t errlen);
/* Writes a fresh random token of TLS_TOKEN_BYTES as TLS_TOKEN_HEX_LEN hex digits plus NUL into hex. */
int tls_token_generate(char hex[TLS_TOKEN_HEX_LEN + 1], char *err, size_t errlen);

/* ---- channels ---------------------------------------------------------------------------------------------- */

/* A new session on ctx (client or server as ctx says); NULL with errno on allocation failure. */
tls_chan_t *tls_chan_new(tls_ctx_t *ctx);
/* Frees the session and sets *p to NULL; safe on NULL and twice. Sends nothing: call tls_chan_close first. */
void tls_chan_destroy(tls_chan_t **p);
/* Client, CA mode, before tls_chan_connect: also require the server certificate to name host (DNS name or IP
 * address in its SAN). Without it any certificate of the job CA is accepted. Ignored in PSK mode. */
int tls_chan_expect_peer(tls_chan_t *ch, const char *host);
/* Client: starts the handshake; the ClientHello is then waiting in tls_chan_pull. */
int tls_chan_connect(tls_chan_t *ch);
/* One frame received from the peer (at most TLS_CHAN_FRAME_MAX bytes). Advances the handshake and decrypts what
 * it can; 0 on success (also while more frames are needed), -1 on any fatal error (state TLS_CHAN_FAILED). After
 * every feed, pull: the handshake, alerts and close_notify produce outgoing frames. */
int tls_chan_feed(tls_chan_t *ch, const void *frame, size_t len);
/* Takes pending ciphertext into frame, as many whole TLS records as fit in min(cap, TLS_CHAN_FRAME_MAX); returns
 * the count, 0 when nothing is pending. Send each result as one frame, in order. Give cap >= TLS_CHAN_FRAME_MAX
 * so that every frame starts a record. */
size_t tls_chan_pull(tls_chan_t *ch, void *frame, size_t cap);
/* 1 when frame (as tls_chan_pull made it) opens a new session: the ClientHello. A server that gets one for a peer
 * that already has a session replaces that session (the agent restarted its handshake) instead of feeding it. */
int tls_chan_is_client_hello(const void *frame, size_t len);
/* Bytes of ciphertext waiting for tls_chan_pull. */
size_t tls_chan_pending(const tls_chan_t *ch);
/* Queues one whole message (len <= the message bound) once the channel is open. 0, or -1 with a message. */
int tls_chan_send(tls_chan_t *ch, const void *msg, size_t len);
/* Takes the next whole message: 1 and *msg (caller frees; NUL-terminated for convenience) + *len, 0 when none is
 * complete yet, -1 when the channel failed. */
int tls_chan_recv(tls_chan_t *ch, void **msg, size_t *len);
/* Sends close_notify (pull it afterwards); the channel is then TLS_CHAN_CLOSED. */
int tls_chan_close(tls_chan_t *ch);
/* Bound on one message, both ways (default TLS_CHAN_MSG_MAX); a bigger incoming message fails the channel. */
void tls_chan_set_max_msg(tls_chan_t *ch, size_t max);

enum tls_chan_state tls_chan_state(const tls_chan_t *ch);
/* 1 once the handshake finished on our side. A server has then verified its client; a client is only sure the
 * server accepted it when the first message arrives (TLS 1.3 reports client-certificate rejection late), which
 * is why the coordinator speaks first. */
int tls_chan_is_established(const tls_chan_t *ch);
/* The peer's certificate name (CN, else first SAN) in CA mode, TLS_PEER_PSK in PSK mode; NULL before the
 * handshake finished. Borrowed. */
const char *tls_chan_peer_name(const tls_chan_t *ch);
/* Why the channel failed, or why the last call was refused; "" when nothing went wrong. Borrowed. */
const char *tls_chan_error(const tls_chan_t *ch);

#endif
