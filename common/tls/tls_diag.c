/* tls_diag: why a TLS channel failed, in words: OpenSSL's error queue, alerts and certificate checks mapped to
 * messages that name the reason and what to do about it. */
#include "common/tls/tls_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

int tls_diag_fail(tls_chan_t *ch, const char *fmt, ...)
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

void tls_diag_cert_name(X509 *cert, char *buf, size_t len)
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

int tls_diag_on_verify(int ok, X509_STORE_CTX *store)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
    tls_chan_t *ch = ssl ? SSL_get_app_data(ssl) : NULL;
    X509 *cert = X509_STORE_CTX_get_current_cert(store);
    int e = X509_STORE_CTX_get_error(store);
    if (ok || !ch || ch->verify_err)
        return ok;
    /* Messages name the peer's own certificate, and the issuer where the chain broke off. */
    ch->verify_err = e;
    tls_diag_cert_name(X509_STORE_CTX_get0_cert(store), ch->verify_subject, sizeof ch->verify_subject);
    s_issuer_name(cert, ch->verify_issuer, sizeof ch->verify_issuer);
    s_time(e == X509_V_ERR_CERT_NOT_YET_VALID ? X509_get0_notBefore(cert) : X509_get0_notAfter(cert),
           ch->verify_time, sizeof ch->verify_time);
    return ok;
}

void tls_diag_on_psk_identity(SSL *ssl, int matched)
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
int tls_diag_fail_ssl(tls_chan_t *ch, const char *what)
{
    char why[1024];
    unsigned long code = ERR_peek_error();
    int reason = ERR_GET_REASON(code);
    /* A PSK server has no certificate: a ClientHello without our PSK ends in "no signature algorithm" or alike. */
    if (ch->ctx->is_psk && ch->ctx->is_server && !ch->psk_matched &&
        (reason == SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM || reason == SSL_R_NO_SHARED_CIPHER ||
         reason == SSL_R_UNSUPPORTED_PROTOCOL))
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
    return tls_diag_fail(ch, "TLS %s failed: %s", what, why);
}
