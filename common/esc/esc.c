/* esc: one escaper for terminals and one for HTML, for every untrusted byte plaunch shows. */
#include "common/esc/esc.h"

#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (1-4; at most avail bytes), or 0; C1 controls (U+0080-U+009F) count
 * as invalid: some terminals read U+009B as CSI. */
static size_t s_utf8(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n == 0 || n > avail)
        return 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c == 0xc2 || c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* How many bytes at s (avail of them) pass as they are: 0 means s[0] is escaped. */
static size_t s_plain(const unsigned char *s, size_t avail, int flags)
{
    if (s[0] >= 0x80)
        return s_utf8(s, avail);
    if (s[0] == 0x7f || (s[0] < 0x20 && !((flags & ESC_LINES) && (s[0] == '\n' || s[0] == '\t'))))
        return 0;
    return 1;
}

static size_t s_bounded(const char *s, size_t len)
{
    const char *z = memchr(s, '\0', len);
    return z ? (size_t)(z - s) : len;
}

size_t esc_term(char *buf, size_t cap, const char *s, size_t len, int flags)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0, n = s ? s_bounded(s, len) : 0;
    for (size_t i = 0; i < n;) {
        size_t k = s_plain(p + i, n - i, flags);
        if (k == 0) {
            if (at + 4 >= cap)
                break;
            buf[at++] = '\\';
            buf[at++] = 'x';
            buf[at++] = hex[p[i] >> 4];
            buf[at++] = hex[p[i] & 15];
            i++;
            continue;
        }
        if (at + k >= cap)
            break;
        memcpy(buf + at, p + i, k);
        at += k;
        i += k;
    }
    buf[at] = '\0';
    return at;
}

char *esc_term_dup(const char *s, int flags)
{
    if (!s)
        return NULL;
    size_t len = strlen(s), cap = 4 * len + 1;
    char *out = malloc(cap);
    if (out)
        esc_term(out, cap, s, len, flags);
    return out;
}

void esc_html(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = s_plain(p + i, n - i, ESC_LINES);
        if (k == 0) {
            fprintf(out, "\\x%02x", p[i++]);
            continue;
        }
        switch (p[i]) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fwrite(p + i, 1, k, out);
        }
        i += k;
    }
}
