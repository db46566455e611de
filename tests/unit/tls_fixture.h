/* tls_fixture: a throw-away PKI (two job CAs, good, foreign and expired node certificates) and in-memory pumping
 * of frames between two tls_chan, for the TLS unit tests. */
#ifndef PLAUNCH_TLS_FIXTURE_H
#define PLAUNCH_TLS_FIXTURE_H

#include "common/tls/certs.h"
#include "tests/unit/test_util.h"
#include "common/tls/tls_chan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

struct pki {
    char *tmp;
    char ca1[300];   /* job CA: ca.crt, coord (also IP 127.0.0.1), node1, old (expired) */
    char ca2[300];   /* another CA: its own ca.crt and rogue */
    char rogue[300]; /* trusts CA 1, but holds rogue's certificate from CA 2 */
};

static char tf_err[1024];
static const unsigned char tf_token[32] = "0123456789abcdef0123456789abcde";
static const unsigned char tf_other_token[32] = "0123456789abcdef0123456789abcdX";

static inline void tf_issue(const char *dir, const char *name, const certs_opts_t *opts)
{
    if (certs_issue(dir, name, opts, tf_err, sizeof tf_err) < 0)
        fail_msg("certs_issue %s: %s", name, tf_err);
}

/* Copies from_dir/from_name to to_dir/to_name with mode. */
static inline void tf_copy(const char *from_dir, const char *from_name, const char *to_dir, const char *to_name,
                           mode_t mode)
{
    char from[600], to[600];
    snprintf(from, sizeof from, "%s/%s", from_dir, from_name);
    snprintf(to, sizeof to, "%s/%s", to_dir, to_name);
    tu_copy(from, to, mode);
}

static inline int tf_pki_setup(void **state)
{
    static struct pki p;
    const char *loopback[] = { "127.0.0.1" };
    certs_opts_t coord = CERTS_OPTS_ZERO, expired = CERTS_OPTS_ZERO;
    p.tmp = tu_mkdtemp("tls");
    snprintf(p.ca1, sizeof p.ca1, "%s/ca1", p.tmp);
    snprintf(p.ca2, sizeof p.ca2, "%s/ca2", p.tmp);
    snprintf(p.rogue, sizeof p.rogue, "%s/rogue", p.tmp);
    if (certs_init_ca(p.ca1, NULL, tf_err, sizeof tf_err) < 0 || certs_init_ca(p.ca2, NULL, tf_err, sizeof tf_err))
        fail_msg("certs_init_ca: %s", tf_err);
    coord.ips = loopback;
    coord.nips = 1;
    expired.not_before = time(NULL) - 30 * 86400;
    expired.not_after = time(NULL) - 86400;
    tf_issue(p.ca1, "coord", &coord);
    tf_issue(p.ca1, "node1", NULL);
    tf_issue(p.ca1, "old", &expired);
    tf_issue(p.ca2, "rogue", NULL);
    mkdir(p.rogue, 0700);
    tf_copy(p.ca1, "ca.crt", p.rogue, "ca.crt", 0644);
    tf_copy(p.ca2, "rogue.crt", p.rogue, "rogue.crt", 0644);
    tf_copy(p.ca2, "rogue.key", p.rogue, "rogue.key", 0600);
    *state = &p;
    return 0;
}

static inline int tf_pki_teardown(void **state)
{
    struct pki *p = *state;
    tu_rmtree(p->tmp);
    return 0;
}

static inline tls_ctx_t *tf_ca(int is_server, const char *dir, const char *name)
{
    tls_ctx_t *ctx = tls_ctx_new_ca(is_server, dir, name, tf_err, sizeof tf_err);
    if (!ctx)
        fail_msg("tls_ctx_new_ca %s %s: %s", dir, name, tf_err);
    return ctx;
}

static inline tls_ctx_t *tf_psk(int is_server, const unsigned char *key)
{
    tls_ctx_t *ctx = tls_ctx_new_psk(is_server, key, 32, tf_err, sizeof tf_err);
    if (!ctx)
        fail_msg("tls_ctx_new_psk: %s", tf_err);
    return ctx;
}

/* Moves frames both ways until neither side has anything to send; every frame is checked against the bound. */
static inline void tf_pump(tls_chan_t *a, tls_chan_t *b)
{
    static unsigned char frame[TLS_CHAN_FRAME_MAX + 1];
    int moved;
    do {
        size_t n;
        moved = 0;
        while ((n = tls_chan_pull(a, frame, sizeof frame)) > 0) {
            assert_true(n <= TLS_CHAN_FRAME_MAX);
            tls_chan_feed(b, frame, n);
            moved = 1;
        }
        while ((n = tls_chan_pull(b, frame, sizeof frame)) > 0) {
            assert_true(n <= TLS_CHAN_FRAME_MAX);
            tls_chan_feed(a, frame, n);
            moved = 1;
        }
    } while (moved);
}

/* Client and server channels, handshake pumped to its end (whatever the end is). */
static inline void tf_connect(tls_ctx_t *cctx, tls_ctx_t *sctx, tls_chan_t **cli, tls_chan_t **srv)
{
    *cli = tls_chan_new(cctx);
    *srv = tls_chan_new(sctx);
    assert_non_null(*cli);
    assert_non_null(*srv);
    assert_int_equal(tls_chan_connect(*cli), 0);
    assert_true(tls_chan_pending(*cli) > 0); /* the ClientHello */
    tf_pump(*cli, *srv);
}

/* Destroys both channels and both contexts. */
static inline void tf_cleanup(tls_chan_t **cli, tls_chan_t **srv, tls_ctx_t **cctx, tls_ctx_t **sctx)
{
    tls_chan_destroy(cli);
    tls_chan_destroy(srv);
    tls_ctx_destroy(cctx);
    tls_ctx_destroy(sctx);
}

/* The next message as a string, which must be there. Caller frees. */
static inline char *tf_recv(tls_chan_t *ch)
{
    void *msg = NULL;
    size_t len = 0;
    assert_int_equal(tls_chan_recv(ch, &msg, &len), 1);
    assert_int_equal(strlen(msg), len);
    return msg;
}

static inline void tf_expect_error(tls_chan_t *ch, const char *needle)
{
    if (tls_chan_state(ch) != TLS_CHAN_FAILED || !strstr(tls_chan_error(ch), needle))
        fail_msg("expected a failed channel with \"%s\"; state %d, error \"%s\"", needle, tls_chan_state(ch),
                 tls_chan_error(ch));
}

#endif
