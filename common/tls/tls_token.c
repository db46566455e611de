/* tls_token: the shared secret of PSK mode: parsed from hex, read from an owner-only file, or freshly made. */
#include "common/tls/tls_chan.h"

#include "common/optfile.h"
#include "common/secfile.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

static int s_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int tls_token_parse_hex(const char *text, unsigned char *key, size_t cap, size_t *keylen, char *err, size_t errlen)
{
    const char *ws = " \t\r\n";
    size_t start = strspn(text, ws), n = strlen(text + start);
    while (n > 0 && strchr(ws, text[start + n - 1]))
        n--;
    text += start;
    if (n % 2 || n / 2 < TLS_TOKEN_MIN_BYTES || n / 2 > TLS_TOKEN_MAX_BYTES || n / 2 > cap) {
        /* The token itself is a secret: say what is wrong with it, never echo it. */
        snprintf(err, errlen, "token must be an even number of hex digits, %d to %d of them (got %zu characters)",
                 2 * TLS_TOKEN_MIN_BYTES, 2 * TLS_TOKEN_MAX_BYTES, n);
        return -1;
    }
    for (size_t i = 0; i < n / 2; i++) {
        int hi = s_hexval(text[2 * i]), lo = s_hexval(text[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            OPENSSL_cleanse(key, i);
            snprintf(err, errlen, "token has a character that is not a hex digit at position %zu",
                     2 * i + (hi < 0 ? 1 : 2));
            return -1;
        }
        key[i] = (unsigned char)(hi << 4 | lo);
    }
    *keylen = n / 2;
    return 0;
}

int tls_token_read_file(const char *path, unsigned char *key, size_t cap, size_t *keylen, char *err, size_t errlen)
{
    char buf[OPTFILE_MAX_TOKEN + 1], why[256];
    size_t len = 0;
    int rc;
    if (secfile_read(path, "token file", buf, sizeof buf, &len, err, errlen) < 0)
        return -1;
    rc = tls_token_parse_hex(buf, key, cap, keylen, why, sizeof why);
    if (rc < 0)
        snprintf(err, errlen, "token file %s: %s", path, why);
    OPENSSL_cleanse(buf, sizeof buf);
    return rc;
}

int tls_token_generate(char hex[TLS_TOKEN_HEX_LEN + 1], char *err, size_t errlen)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[TLS_TOKEN_BYTES];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        snprintf(err, errlen, "cannot generate a token: the OpenSSL random generator failed");
        return -1;
    }
    for (size_t i = 0; i < sizeof raw; i++) {
        hex[2 * i] = digits[raw[i] >> 4];
        hex[2 * i + 1] = digits[raw[i] & 15];
    }
    hex[TLS_TOKEN_HEX_LEN] = '\0';
    OPENSSL_cleanse(raw, sizeof raw);
    return 0;
}
