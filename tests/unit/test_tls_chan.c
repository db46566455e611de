/* test_tls_chan: TLS 1.3 channels pumped in memory: both auth modes, every refusal with its reason, message bounds. */
#include "tests/unit/tls_fixture.h"
#include "common/tls/tls_priv.h" /* white-box checks of the negotiated session */

#include <openssl/err.h>
#include <openssl/ssl.h>

static void test_ca_handshake_and_messages(void **state)
{
    struct pki *p = *state;
    tls_ctx_t *sctx = tf_ca(1, p->ca1, "coord"), *cctx = tf_ca(0, p->ca1, "node1");
    tls_chan_t *cli, *srv;
    char *m;
    void *raw;
    size_t len;
    tf_connect(cctx, sctx, &cli, &srv);
    assert_true(tls_chan_is_established(srv));
    assert_true(tls_chan_is_established(cli));
    assert_string_equal(tls_chan_peer_name(srv), "node1");
    assert_string_equal(tls_chan_peer_name(cli), "coord");
    assert_int_equal(SSL_version(srv->ssl), TLS1_3_VERSION);
    assert_int_equal(SSL_CTX_get_min_proto_version(cctx->ssl_ctx), TLS1_3_VERSION);

    /* The coordinator speaks first; then both ways, several messages per pump, an empty one too. */
    assert_int_equal(tls_chan_send(srv, "welcome", 7), 0);
    tf_pump(cli, srv);
    assert_string_equal(m = tf_recv(cli), "welcome");
    free(m);
    assert_int_equal(tls_chan_recv(cli, &raw, &len), 0);
    assert_int_equal(tls_chan_send(cli, "join", 4), 0);
    assert_int_equal(tls_chan_send(cli, "", 0), 0);
    assert_int_equal(tls_chan_send(cli, "heartbeat", 9), 0);
    tf_pump(cli, srv);
    assert_string_equal(m = tf_recv(srv), "join");
    free(m);
    assert_string_equal(m = tf_recv(srv), "");
    free(m);
    assert_string_equal(m = tf_recv(srv), "heartbeat");
    free(m);
    assert_int_equal(tls_chan_recv(srv, &raw, &len), 0);

    /* close_notify ends the session on the other side too. */
    assert_int_equal(tls_chan_close(cli), 0);
    tf_pump(cli, srv);
    assert_int_equal(tls_chan_state(srv), TLS_CHAN_CLOSED);
    assert_int_equal(tls_chan_send(cli, "x", 1), -1);
    assert_non_null(strstr(tls_chan_error(cli), "closed"));
    tf_cleanup(&cli, &srv, &cctx, &sctx);
}

static void test_big_message_is_split_into_bounded_frames(void **state)
{
    struct pki *p = *state;
    tls_ctx_t *sctx = tf_ca(1, p->ca1, "coord"), *cctx = tf_ca(0, p->ca1, "node1");
    tls_chan_t *cli, *srv;
    size_t big = TLS_CHAN_MSG_MAX, len = 0, frames = 0, n;
    unsigned char *data = malloc(big), frame[TLS_CHAN_FRAME_MAX * 2];
    void *got = NULL;
    for (size_t i = 0; i < big; i++)
        data[i] = (unsigned char)(i * 7 + i / 251);
    tf_connect(cctx, sctx, &cli, &srv);
    assert_int_equal(tls_chan_send(srv, data, big), 0);
    while ((n = tls_chan_pull(srv, frame, sizeof frame)) > 0) {
        size_t at = 0;
        assert_true(n <= TLS_CHAN_FRAME_MAX);
        /* Whole records only: each frame is a run of complete TLS records. */
        while (at + 5 <= n)
            at += 5 + ((size_t)frame[at + 3] << 8 | frame[at + 4]);
        assert_int_equal(at, n);
        assert_false(tls_chan_is_client_hello(frame, n));
        assert_int_equal(tls_chan_feed(cli, frame, n), 0);
        frames++;
    }
    assert_true(frames >= big / TLS_CHAN_FRAME_MAX);
    assert_int_equal(tls_chan_recv(cli, &got, &len), 1);
    assert_int_equal(len, big);
    assert_memory_equal(got, data, big);
    free(got);
    free(data);
    tf_cleanup(&cli, &srv, &cctx, &sctx);
}

/* An agent that restarts its handshake sends a ClientHello; the coordinator recognises it among the frames. */
static void test_client_hello_is_recognised(void **state)
{
    tls_ctx_t *sctx = tf_psk(1, tf_token), *cctx = tf_psk(0, tf_token);
    tls_chan_t *cli = tls_chan_new(cctx), *srv = tls_chan_new(sctx);
    unsigned char frame[TLS_CHAN_FRAME_MAX];
    size_t n;
    assert_int_equal(tls_chan_connect(cli), 0);
    n = tls_chan_pull(cli, frame, sizeof frame);
    assert_true(tls_chan_is_client_hello(frame, n));
    assert_int_equal(tls_chan_feed(srv, frame, n), 0);
    n = tls_chan_pull(srv, frame, sizeof frame); /* ServerHello and the encrypted rest */
    assert_false(tls_chan_is_client_hello(frame, n));
    assert_int_equal(tls_chan_feed(cli, frame, n), 0);
    tf_pump(cli, srv);
    assert_int_equal(tls_chan_send(cli, "join", 4), 0);
    n = tls_chan_pull(cli, frame, sizeof frame);
    assert_false(tls_chan_is_client_hello(frame, n));
    assert_false(tls_chan_is_client_hello("\x16\x03\x01", 3));
    tf_cleanup(&cli, &srv, &cctx, &sctx);
    (void)state;
}

static void test_psk_handshake_and_messages(void **state)
{
    tls_ctx_t *sctx = tf_psk(1, tf_token), *cctx = tf_psk(0, tf_token);
    tls_chan_t *cli, *srv;
    char *m;
    tf_connect(cctx, sctx, &cli, &srv);
    assert_true(tls_chan_is_established(srv));
    /* TLS 1.3, the external PSK, and still an (EC)DHE key exchange (psk_dhe_ke): forward secrecy. */
    assert_int_equal(SSL_version(cli->ssl), TLS1_3_VERSION);
    assert_true(SSL_session_reused(srv->ssl));
    assert_true(SSL_get_negotiated_group(cli->ssl) > 0);
    assert_false(SSL_CTX_get_options(sctx->ssl_ctx) & SSL_OP_ALLOW_NO_DHE_KEX);
    assert_null(SSL_get_current_compression(srv->ssl));
    assert_string_equal(tls_chan_peer_name(srv), TLS_PEER_PSK);
    assert_string_equal(tls_chan_peer_name(cli), TLS_PEER_PSK);
    assert_int_equal(tls_chan_send(srv, "welcome", 7), 0);
    tf_pump(cli, srv);
    assert_string_equal(m = tf_recv(cli), "welcome");
    free(m);
    assert_int_equal(tls_chan_send(cli, "join", 4), 0);
    tf_pump(cli, srv);
    assert_string_equal(m = tf_recv(srv), "join");
    free(m);
    tf_cleanup(&cli, &srv, &cctx, &sctx);
    (void)state;
}

/* A client with no certificate at all can only be built with plain OpenSSL: tls_ctx_new_ca always has one. */
static void test_client_without_certificate(void **state)
{
    struct pki *p = *state;
    char ca[400], buf[TLS_CHAN_FRAME_MAX];
    tls_ctx_t *sctx = tf_ca(1, p->ca1, "coord");
    tls_chan_t *srv = tls_chan_new(sctx);
    SSL_CTX *c = SSL_CTX_new(TLS_client_method());
    SSL *ssl;
    BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());
    int n;
    snprintf(ca, sizeof ca, "%s/ca.crt", p->ca1);
    assert_true(SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION));
    assert_true(SSL_CTX_load_verify_locations(c, ca, NULL));
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
    ssl = SSL_new(c);
    BIO_set_mem_eof_return(rbio, -1);
    BIO_set_mem_eof_return(wbio, -1);
    SSL_set_bio(ssl, rbio, wbio);
    SSL_set_connect_state(ssl);
    for (int round = 0; round < 4; round++) {
        SSL_do_handshake(ssl);
        while ((n = BIO_read(wbio, buf, sizeof buf)) > 0)
            tls_chan_feed(srv, buf, (size_t)n);
        size_t m;
        while ((m = tls_chan_pull(srv, buf, sizeof buf)) > 0)
            BIO_write(rbio, buf, (int)m);
    }
    tf_expect_error(srv, "peer sent no certificate");
    /* The client hears why: the certificate_required alert. */
    ERR_clear_error();
    assert_true(SSL_read(ssl, buf, sizeof buf) <= 0);
    assert_int_equal(ERR_GET_REASON(ERR_peek_error()), SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED);
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(c);
    tls_chan_destroy(&srv);
    tls_ctx_destroy(&sctx);
}

/* Runs a handshake expected to fail; checks the reason each side gives. */
static void s_refused(tls_ctx_t *cctx, tls_ctx_t *sctx, const char *srv_says, const char *cli_says)
{
    tls_chan_t *cli, *srv;
    tf_connect(cctx, sctx, &cli, &srv);
    if (srv_says)
        tf_expect_error(srv, srv_says);
    if (cli_says)
        tf_expect_error(cli, cli_says);
    /* A failed channel stays failed and says so. */
    assert_int_equal(tls_chan_feed(srv, "\x17\x03\x03", 3), -1);
    assert_int_equal(tls_chan_send(cli, "x", 1), -1);
    tf_cleanup(&cli, &srv, &cctx, &sctx);
}

static void test_client_cert_from_another_ca(void **state)
{
    struct pki *p = *state;
    /* Client trusts the job CA, but its own certificate comes from another CA. */
    s_refused(tf_ca(0, p->rogue, "rogue"), tf_ca(1, p->ca1, "coord"), "peer certificate 'rogue' is not signed by the job CA",
              "peer rejected our certificate: not signed by its job CA");
    /* Client trusts only the other CA: it refuses the coordinator, which hears about it. */
    s_refused(tf_ca(0, p->ca2, "rogue"), tf_ca(1, p->ca1, "coord"), "peer rejected our certificate",
              "peer certificate 'coord' is not signed by the job CA");
}

static void test_expired_certificates(void **state)
{
    struct pki *p = *state;
    tls_ctx_t *old_cli, *old_srv;
    tu_capture_begin(); /* loading an expired certificate of our own logs a warning */
    old_cli = tf_ca(0, p->ca1, "old");
    old_srv = tf_ca(1, p->ca1, "old");
    assert_non_null(strstr(tu_capture_end(), "has expired"));
    s_refused(old_cli, tf_ca(1, p->ca1, "coord"), "peer certificate 'old' expired on",
              "peer rejected our certificate: certificate expired");
    s_refused(tf_ca(0, p->ca1, "node1"), old_srv, "peer rejected our certificate", "peer certificate 'old' expired on");
}

static void test_expected_server_name(void **state)
{
    struct pki *p = *state;
    tls_ctx_t *sctx = tf_ca(1, p->ca1, "coord"), *cctx = tf_ca(0, p->ca1, "node1");
    tls_chan_t *cli = tls_chan_new(cctx), *srv = tls_chan_new(sctx);
    assert_int_equal(tls_chan_expect_peer(cli, "127.0.0.1"), 0);
    assert_int_equal(tls_chan_connect(cli), 0);
    tf_pump(cli, srv);
    assert_true(tls_chan_is_established(cli));
    tls_chan_destroy(&cli);
    tls_chan_destroy(&srv);

    cli = tls_chan_new(cctx);
    srv = tls_chan_new(sctx);
    assert_int_equal(tls_chan_expect_peer(cli, "node7.example"), 0);
    assert_int_equal(tls_chan_connect(cli), 0);
    tf_pump(cli, srv);
    tf_expect_error(cli, "peer certificate 'coord' does not name 'node7.example'");
    tf_cleanup(&cli, &srv, &cctx, &sctx);
}

static void test_wrong_token(void **state)
{
    s_refused(tf_psk(0, tf_other_token), tf_psk(1, tf_token), "bad PSK / token mismatch",
              "bad PSK / token mismatch");
    (void)state;
}

static void test_auth_mode_mismatch(void **state)
{
    struct pki *p = *state;
    s_refused(tf_psk(0, tf_token), tf_ca(1, p->ca1, "coord"), "or the peer is in token mode",
              "instead of using the token");
    s_refused(tf_ca(0, p->ca1, "node1"), tf_psk(1, tf_token), "peer offered no token", "is it in token mode?");
}

static void test_plaintext_and_random_bytes(void **state)
{
    static const char http[] = "GET / HTTP/1.1\r\nHost: coord\r\n\r\n";
    static const char join[] = "\x16"; /* right first byte, wrong second: still not TLS */
    unsigned char noise[512];
    tls_ctx_t *sctx = tf_psk(1, tf_token);
    tls_chan_t *srv = tls_chan_new(sctx);
    uint32_t x = 2463534242u;
    assert_int_equal(tls_chan_feed(srv, http, sizeof http - 1), -1);
    tf_expect_error(srv, "not a TLS record (plaintext client?)");
    assert_int_equal(tls_chan_pending(srv), 0);
    tls_chan_destroy(&srv);

    for (size_t i = 0; i < sizeof noise; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        noise[i] = (unsigned char)x;
    }
    noise[0] = 0x9c; /* fixed, so the test does not depend on the stream's first byte */
    srv = tls_chan_new(sctx);
    assert_int_equal(tls_chan_feed(srv, noise, sizeof noise), -1);
    tf_expect_error(srv, "not a TLS record");
    tls_chan_destroy(&srv);

    /* A record header with a junk body: OpenSSL's own reason, and no talk of tokens. */
    srv = tls_chan_new(sctx);
    assert_int_equal(tls_chan_feed(srv, "\x16\x03\x01\x00\x05hello", 10), -1);
    tf_expect_error(srv, "TLS handshake failed: ");
    assert_null(strstr(tls_chan_error(srv), "token"));
    tls_chan_destroy(&srv);

    /* Split across frames, byte by byte. */
    srv = tls_chan_new(sctx);
    assert_int_equal(tls_chan_feed(srv, join, 1), 0);
    assert_int_equal(tls_chan_feed(srv, "J", 1), -1);
    tf_expect_error(srv, "byte 1 is 0x4a");
    tls_chan_destroy(&srv);
    tls_ctx_destroy(&sctx);
    (void)state;
}

static void test_tampered_record_after_handshake(void **state)
{
    tls_ctx_t *sctx = tf_psk(1, tf_token), *cctx = tf_psk(0, tf_token);
    tls_chan_t *cli, *srv;
    unsigned char frame[TLS_CHAN_FRAME_MAX];
    size_t n;
    tf_connect(cctx, sctx, &cli, &srv);
    assert_int_equal(tls_chan_send(cli, "join", 4), 0);
    n = tls_chan_pull(cli, frame, sizeof frame);
    assert_true(n > 10);
    frame[n - 3] ^= 0x40;
    assert_int_equal(tls_chan_feed(srv, frame, n), -1);
    tf_expect_error(srv, "failed authentication");
    tf_cleanup(&cli, &srv, &cctx, &sctx);
    (void)state;
}

static void test_oversize_message(void **state)
{
    tls_ctx_t *sctx = tf_psk(1, tf_token), *cctx = tf_psk(0, tf_token);
    tls_chan_t *cli, *srv;
    unsigned char *big = calloc(1, TLS_CHAN_MSG_MAX + 1), frame[TLS_CHAN_FRAME_MAX + 1] = { 0x17, 0x03, 0x03 };
    void *msg = NULL;
    size_t len;
    tf_connect(cctx, sctx, &cli, &srv);
    /* The sender refuses what its bound does not allow, and stays usable. */
    assert_int_equal(tls_chan_send(cli, big, TLS_CHAN_MSG_MAX + 1), -1);
    assert_non_null(strstr(tls_chan_error(cli), "limit is 1048576 bytes"));
    assert_true(tls_chan_is_established(cli));
    /* The receiver refuses a header announcing more than its bound, before the body arrives. */
    tls_chan_set_max_msg(srv, 1024);
    assert_int_equal(tls_chan_send(cli, big, 100000), 0);
    assert_int_equal(tls_chan_feed(srv, frame, tls_chan_pull(cli, frame, 20000)), -1);
    tf_expect_error(srv, "message of 100000 bytes, more than the limit of 1024 bytes");
    assert_int_equal(tls_chan_recv(srv, &msg, &len), -1);
    tls_chan_destroy(&srv);
    /* A frame larger than any plaunch peer sends. */
    srv = tls_chan_new(sctx);
    assert_int_equal(tls_chan_feed(srv, frame, sizeof frame), -1);
    tf_expect_error(srv, "frame of 65537 bytes");
    free(big);
    tf_cleanup(&cli, &srv, &cctx, &sctx);
    (void)state;
}

static void test_misuse_and_lifetimes(void **state)
{
    tls_ctx_t *sctx = tf_psk(1, tf_token), *cctx = tf_psk(0, tf_token);
    tls_chan_t *cli = tls_chan_new(cctx), *srv = tls_chan_new(sctx);
    char *m;
    assert_string_equal(tls_chan_error(cli), "");
    assert_null(tls_chan_peer_name(cli));
    assert_int_equal(tls_chan_send(cli, "early", 5), -1);
    assert_non_null(strstr(tls_chan_error(cli), "still in its handshake"));
    assert_int_equal(tls_chan_state(cli), TLS_CHAN_HANDSHAKE);
    /* Channels keep their context alive. */
    tls_ctx_destroy(&sctx);
    tls_ctx_destroy(&cctx);
    tls_ctx_destroy(&cctx);
    assert_null(cctx);
    assert_int_equal(tls_chan_connect(cli), 0);
    tf_pump(cli, srv);
    assert_int_equal(tls_chan_send(srv, "still here", 10), 0);
    tf_pump(cli, srv);
    assert_string_equal(m = tf_recv(cli), "still here");
    free(m);
    tls_chan_destroy(&cli);
    tls_chan_destroy(&cli);
    assert_null(cli);
    tls_chan_destroy(&srv);
    tls_chan_destroy(NULL);
    (void)state;
}

static void test_credentials_errors(void **state)
{
    struct pki *p = *state;
    char dir[400], key[500];
    tls_ctx_t *ctx;
    unsigned char short_key[8] = { 0 };

    assert_null(tls_ctx_new_ca(0, "/nonexistent/tls", "node1", tf_err, sizeof tf_err));
    assert_non_null(strstr(tf_err, "/nonexistent/tls/ca.crt"));
    assert_non_null(strstr(tf_err, "plaunch certs init"));

    assert_null(tls_ctx_new_ca(0, p->ca1, "nobody", tf_err, sizeof tf_err));
    assert_non_null(strstr(tf_err, "nobody.crt"));
    assert_non_null(strstr(tf_err, "node.crt"));
    assert_non_null(strstr(tf_err, "plaunch certs issue"));

    /* A node directory holding node.crt/node.key serves any node name. */
    snprintf(dir, sizeof dir, "%s/nodedir", p->tmp);
    mkdir(dir, 0700);
    tf_copy(p->ca1, "ca.crt", dir, "ca.crt", 0644);
    tf_copy(p->ca1, "node1.crt", dir, "node.crt", 0644);
    tf_copy(p->ca1, "node1.key", dir, "node.key", 0644);
    /* ... but not while its key is readable by others. */
    assert_null(tls_ctx_new_ca(0, dir, "gpu-host-3", tf_err, sizeof tf_err));
    assert_non_null(strstr(tf_err, "node.key is accessible by group or others (mode 0644)"));
    assert_non_null(strstr(tf_err, "chmod 600"));
    snprintf(key, sizeof key, "%s/node.key", dir);
    assert_int_equal(chmod(key, 0600), 0);
    ctx = tls_ctx_new_ca(0, dir, "gpu-host-3", tf_err, sizeof tf_err);
    assert_non_null(ctx);
    assert_false(tls_ctx_is_server(ctx));
    tls_ctx_destroy(&ctx);
    assert_null(ctx);

    assert_null(tls_ctx_new_psk(1, short_key, sizeof short_key, tf_err, sizeof tf_err));
    assert_non_null(strstr(tf_err, "token of 8 bytes refused"));
}

static void test_tokens(void **state)
{
    struct pki *p = *state;
    char hex[TLS_TOKEN_HEX_LEN + 1], hex2[TLS_TOKEN_HEX_LEN + 1], path[400], text[200];
    unsigned char key[TLS_TOKEN_MAX_BYTES];
    size_t len = 0;
    int fd;

    assert_int_equal(tls_token_generate(hex, tf_err, sizeof tf_err), 0);
    assert_int_equal(tls_token_generate(hex2, tf_err, sizeof tf_err), 0);
    assert_int_equal(strlen(hex), TLS_TOKEN_HEX_LEN);
    assert_int_equal(strspn(hex, "0123456789abcdef"), TLS_TOKEN_HEX_LEN);
    assert_string_not_equal(hex, hex2);

    snprintf(text, sizeof text, "  %s\n", hex);
    assert_int_equal(tls_token_parse_hex(text, key, sizeof key, &len, tf_err, sizeof tf_err), 0);
    assert_int_equal(len, TLS_TOKEN_BYTES);
    assert_int_equal(key[0], (unsigned char)strtoul((char[]){ hex[0], hex[1], 0 }, NULL, 16));
    assert_int_equal(tls_token_parse_hex("00112233445566778899AABBCCDDEEFF", key, sizeof key, &len, tf_err,
                                         sizeof tf_err), 0);
    assert_int_equal(len, 16);
    assert_int_equal(key[15], 0xff);

    assert_int_equal(tls_token_parse_hex("abc", key, sizeof key, &len, tf_err, sizeof tf_err), -1);
    assert_non_null(strstr(tf_err, "got 3 characters"));
    assert_int_equal(tls_token_parse_hex("00112233445566778899aabbccddeefg", key, sizeof key, &len, tf_err,
                                         sizeof tf_err), -1);
    assert_non_null(strstr(tf_err, "not a hex digit at position 32"));
    assert_null(strstr(tf_err, "00112233")); /* a secret is never echoed */
    assert_int_equal(tls_token_parse_hex(hex, key, 16, &len, tf_err, sizeof tf_err), -1);

    snprintf(path, sizeof path, "%s/token", p->tmp);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, hex, strlen(hex)), (ssize_t)strlen(hex));
    assert_int_equal(write(fd, "\n", 1), 1);
    close(fd);
    chmod(path, 0644);
    assert_int_equal(tls_token_read_file(path, key, sizeof key, &len, tf_err, sizeof tf_err), -1);
    assert_non_null(strstr(tf_err, "token file"));
    assert_non_null(strstr(tf_err, "chmod 600"));
    chmod(path, 0600);
    assert_int_equal(tls_token_read_file(path, key, sizeof key, &len, tf_err, sizeof tf_err), 0);
    assert_int_equal(len, TLS_TOKEN_BYTES);
    unlink(path);
    assert_int_equal(tls_token_read_file(path, key, sizeof key, &len, tf_err, sizeof tf_err), -1);
    assert_non_null(strstr(tf_err, "cannot open token file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_handshake_and_messages),
        cmocka_unit_test(test_big_message_is_split_into_bounded_frames),
        cmocka_unit_test(test_psk_handshake_and_messages),
        cmocka_unit_test(test_client_hello_is_recognised),
        cmocka_unit_test(test_client_without_certificate),
        cmocka_unit_test(test_client_cert_from_another_ca),
        cmocka_unit_test(test_expired_certificates),
        cmocka_unit_test(test_expected_server_name),
        cmocka_unit_test(test_wrong_token),
        cmocka_unit_test(test_auth_mode_mismatch),
        cmocka_unit_test(test_plaintext_and_random_bytes),
        cmocka_unit_test(test_tampered_record_after_handshake),
        cmocka_unit_test(test_oversize_message),
        cmocka_unit_test(test_misuse_and_lifetimes),
        cmocka_unit_test(test_credentials_errors),
        cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests(tests, tf_pki_setup, tf_pki_teardown);
}
