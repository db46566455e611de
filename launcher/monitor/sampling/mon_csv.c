/* mon_csv: monitor.NODE.csv rows: one table of columns (name, type, field, range) serves the header, the writer and
 * the reader, so they cannot disagree. Numbers are written in the C locale (plaunch never calls setlocale). */
#include "launcher/monitor/sampling/mon_csv.h"

#include "common/esc/esc.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum s_type { S_I64, S_INT, S_DBL, S_STR, S_NODE };

struct s_col {
    const char *name;
    enum s_type type;
    size_t off, size;          /* the field in struct mon_sample (S_NODE: the node argument) */
    int required;              /* an empty field is an error (else: unknown) */
    double lo, hi;             /* the range of a number */
};

#define S_OF(f) offsetof(struct mon_sample, f), sizeof(((struct mon_sample *)0)->f)
#define S_BIG 1e12

static const struct s_col s_cols[] = {
    { "v1_time_unix_ms", S_I64, S_OF(t_ms), 1, 0, 9.0e15 },
    { "node", S_NODE, 0, MON_NODE_MAX, 1, 0, 0 },
    { "rank", S_INT, S_OF(rank), 1, 0, INT_MAX },
    { "local_rank", S_INT, S_OF(local_rank), 1, 0, INT_MAX },
    { "generation", S_INT, S_OF(generation), 1, 0, INT_MAX },
    { "gpu", S_STR, S_OF(gpu), 0, 0, 0 },
    { "pci", S_STR, S_OF(pci), 0, 0, 0 },
    { "gpu_util_pct", S_DBL, S_OF(gpu_util), 0, 0, 100 },
    { "gpu_idle_frac", S_DBL, S_OF(gpu_idle_frac), 0, 0, 1 },
    { "gpu_idle_ms", S_DBL, S_OF(gpu_idle_ms), 0, 0, S_BIG },
    { "gpu_mem_proc_mib", S_DBL, S_OF(gpu_mem_proc_mib), 0, 0, S_BIG },
    { "gpu_mem_used_mib", S_DBL, S_OF(gpu_mem_used_mib), 0, 0, S_BIG },
    { "gpu_mem_total_mib", S_DBL, S_OF(gpu_mem_total_mib), 0, 0, S_BIG },
    { "sm_clock_mhz", S_DBL, S_OF(sm_clock_mhz), 0, 0, 1e6 },
    { "sm_clock_max_mhz", S_DBL, S_OF(sm_clock_max_mhz), 0, 0, 1e6 },
    { "power_w", S_DBL, S_OF(power_w), 0, 0, 1e6 },
    { "power_limit_w", S_DBL, S_OF(power_limit_w), 0, 0, 1e6 },
    { "temp_c", S_DBL, S_OF(temp_c), 0, -273, 1000 },
    { "throttle", S_I64, S_OF(throttle), 0, 0, 9.0e18 },
    { "ecc_corrected", S_I64, S_OF(ecc_corrected), 0, 0, 9.0e18 },
    { "ecc_uncorrected", S_I64, S_OF(ecc_uncorrected), 0, 0, 9.0e18 },
    { "pcie_tx_mibs", S_DBL, S_OF(pcie_tx_mibs), 0, 0, S_BIG },
    { "pcie_rx_mibs", S_DBL, S_OF(pcie_rx_mibs), 0, 0, S_BIG },
    { "xid", S_INT, S_OF(xid), 0, 0, INT_MAX },
    { "rss_mib", S_DBL, S_OF(rss_mib), 0, 0, S_BIG },
    { "cpu_pct", S_DBL, S_OF(cpu_pct), 0, 0, 1e8 },
    { "threads", S_INT, S_OF(threads), 0, 0, INT_MAX },
    { "procs", S_INT, S_OF(procs), 0, 0, INT_MAX },
    { "host_avail_frac", S_DBL, S_OF(host_avail_frac), 0, 0, 1 },
};

#define S_NCOLS ((int)(sizeof s_cols / sizeof s_cols[0]))

const char *mon_csv_header(void)
{
    /* built once from the table; the agent and plaunch report are single-threaded where they write or read it */
    static char header[MON_CSV_LINE_MAX];
    if (header[0] == '\0') {
        size_t len = 0;
        for (int i = 0; i < S_NCOLS; i++)
            len += (size_t)snprintf(header + len, sizeof header - len, "%s%s", s_cols[i].name,
                                    i + 1 < S_NCOLS ? "," : "\n");
    }
    return header;
}

/* A string may go into a field: no separator, quote or control character (they cannot occur in node names, GPU
 * entries or PCI ids; refusing them is simpler and safer than quoting). */
static int s_clean(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p == ',' || *p == '"' || *p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

int mon_csv_format(const struct mon_sample *s, const char *node, char *buf, size_t cap)
{
    size_t len = 0;
    if (!node || !node[0] || !s_clean(node) || !s_clean(s->gpu) || !s_clean(s->pci))
        return -1;
    for (int i = 0; i < S_NCOLS && len < cap; i++) {
        const struct s_col *c = &s_cols[i];
        const char *field = (const char *)s + c->off;
        const char *sep = i + 1 < S_NCOLS ? "," : "\n";
        int w = 0;
        switch (c->type) {
        case S_I64: {
            int64_t v = *(const int64_t *)field;
            w = v < 0 && !c->required ? snprintf(buf + len, cap - len, "%s", sep)
                                      : snprintf(buf + len, cap - len, "%" PRId64 "%s", v, sep);
            break;
        }
        case S_INT: {
            int v = *(const int *)field;
            w = v < 0 && !c->required ? snprintf(buf + len, cap - len, "%s", sep)
                                      : snprintf(buf + len, cap - len, "%d%s", v, sep);
            break;
        }
        case S_DBL: {
            double v = *(const double *)field;
            w = !isfinite(v) ? snprintf(buf + len, cap - len, "%s", sep)
                             : snprintf(buf + len, cap - len, "%.7g%s", v, sep);
            break;
        }
        case S_STR:
            w = snprintf(buf + len, cap - len, "%.*s%s", (int)c->size - 1, field, sep);
            break;
        case S_NODE:
            if (strlen(node) >= MON_NODE_MAX)
                return -1;
            w = snprintf(buf + len, cap - len, "%s%s", node, sep);
            break;
        }
        if (w < 0)
            return -1;
        len += (size_t)w;
    }
    return len < cap ? (int)len : -1;
}

/* The line without its line end; 0 when that does not fit in buf. */
static size_t s_chomp(const char *line, char *buf, size_t cap)
{
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len >= cap)
        return 0;
    memcpy(buf, line, len);
    buf[len] = '\0';
    return len + 1;
}

int mon_csv_is_header(const char *line)
{
    char a[MON_CSV_LINE_MAX + 2], b[MON_CSV_LINE_MAX + 2];
    return s_chomp(line, a, sizeof a) && s_chomp(mon_csv_header(), b, sizeof b) && strcmp(a, b) == 0;
}

/* A refused field in a message: its first 40 bytes, escaped for the terminal the message reaches (common/esc). */
#define S_SHOWN (4 * 40 + 1)
static const char *s_shown(const char *v, char *buf, size_t cap)
{
    esc_term(buf, cap, v, 40, 0);
    return buf;
}

/* Reads one field into s (or node) after its column's checks; 0, or -1 with a message naming the column. */
static int s_field(const struct s_col *c, int col, const char *v, struct mon_sample *s, char *node, char *err,
                   size_t errlen)
{
    char *field = (char *)s + c->off, *end = NULL, shown[S_SHOWN];
    if (!v[0]) {
        if (c->required) {
            snprintf(err, errlen, "column %d (%s) is empty; it must be given", col + 1, c->name);
            return -1;
        }
        return 0; /* unknown: mon_sample_clear's value stays */
    }
    if (c->type == S_STR || c->type == S_NODE) {
        size_t cap = c->type == S_NODE ? MON_NODE_MAX : c->size;
        if (strlen(v) >= cap || !s_clean(v)) {
            snprintf(err, errlen, "column %d (%s): '%s' is longer than %zu bytes or holds a control character",
                     col + 1, c->name, s_shown(v, shown, sizeof shown), cap - 1);
            return -1;
        }
        memcpy(c->type == S_NODE ? node : field, v, strlen(v) + 1);
        return 0;
    }
    errno = 0;
    if (c->type == S_DBL) {
        double d = strtod(v, &end);
        if (v[0] == ' ' || errno || *end || !isfinite(d) || d < c->lo || d > c->hi)
            goto bad;
        *(double *)field = d;
        return 0;
    }
    long long ll = strtoll(v, &end, 10);
    if (v[0] == ' ' || v[0] == '+' || errno || *end || (double)ll < c->lo || (double)ll > c->hi)
        goto bad;
    if (c->type == S_I64)
        *(int64_t *)field = ll;
    else
        *(int *)field = (int)ll;
    return 0;
bad:
    snprintf(err, errlen, "column %d (%s): '%s' is not %s from %g to %g", col + 1, c->name,
             s_shown(v, shown, sizeof shown),
             c->type == S_DBL ? "a number" : "a whole number", c->lo, c->hi);
    return -1;
}

int mon_csv_parse(const char *line, struct mon_sample *s, char *node, char *err, size_t errlen)
{
    char buf[MON_CSV_LINE_MAX + 1], *fields[S_NCOLS];
    int nf = 0;
    if (!s_chomp(line, buf, sizeof buf)) {
        snprintf(err, errlen, "row longer than %d bytes", MON_CSV_LINE_MAX);
        return -1;
    }
    if (buf[0] == 'v') {
        char shown[S_SHOWN];
        buf[strcspn(buf, ",")] = '\0';
        if (mon_csv_is_header(line))
            snprintf(err, errlen, "header line, not a row");
        else
            snprintf(err, errlen, "a header of another format ('%s...'; this plaunch reads %s)",
                     s_shown(buf, shown, sizeof shown), s_cols[0].name);
        return -1;
    }
    for (char *p = buf;; p++) {
        if (nf == S_NCOLS) {
            nf++;
            break;
        }
        fields[nf++] = p;
        p += strcspn(p, ",");
        if (*p == '\0')
            break;
        *p = '\0';
    }
    if (nf != S_NCOLS) {
        snprintf(err, errlen, "%s%d columns, a row of format %s has %d", nf > S_NCOLS ? "more than " : "",
                 nf > S_NCOLS ? S_NCOLS : nf, s_cols[0].name, S_NCOLS);
        return -1;
    }
    mon_sample_clear(s);
    node[0] = '\0';
    for (int i = 0; i < S_NCOLS; i++)
        if (s_field(&s_cols[i], i, fields[i], s, node, err, errlen) < 0)
            return -1;
    return 0;
}
