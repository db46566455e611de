/* cmd_certs: the `plaunch certs` subcommand: create a private job CA and issue node certificates. */
#include "common/tls/certs.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IPS 16

#include "launcher/cli/cmd_certs.h"

static const char s_usage[] =
    "Usage: plaunch certs init DIR [--days N] [--force]\n"
    "       plaunch certs issue DIR NAME... [--ip ADDR]... [--days N] [--force]\n"
    "\n"
    "Mutual TLS for the control plane of a multi-node job.\n"
    "  init   creates DIR (mode 0700) with a new job CA: ca.key (0600, keep it off the worker nodes) and ca.crt.\n"
    "         Valid 3650 days unless --days; an existing CA is kept unless --force.\n"
    "  issue  for each NAME, writes NAME.key (0600) and NAME.crt signed by DIR's CA, for TLS client and server\n"
    "         use, naming DNS:NAME (and IP:NAME when NAME is an address). Valid 365 days unless --days.\n"
    "\n"
    "Options:\n"
    "  --ip ADDR   also name this IPv4/IPv6 address (repeatable; with a single NAME only)\n"
    "  --days N    validity in days, 1 to 36500\n"
    "  --force     replace existing files (replacing the CA invalidates every certificate it issued)\n"
    "\n"
    "Then give each node ca.crt, NAME.crt and NAME.key (or copy them as node.crt and node.key) in a directory of\n"
    "its own, mode 0700.\n";

struct certs_args {
    const char *sub;
    const char *pos[64];
    size_t npos;
    const char *ips[MAX_IPS];
    size_t nips;
    int days;
    int force;
};

static int s_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int s_usage_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_error("certs: %s", msg);
    fprintf(stderr, "Try 'plaunch certs --help'.\n");
    return 2;
}

static int s_parse_days(const char *text, int *days)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 1 || v > CERTS_DAYS_MAX)
        return s_usage_error("--days '%s': expected a whole number of days from 1 to 36500", text);
    *days = (int)v;
    return 0;
}

static int s_add_ip(struct certs_args *a, const char *ip)
{
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip, buf) != 1 && inet_pton(AF_INET6, ip, buf) != 1)
        return s_usage_error("--ip '%s': not an IPv4 or IPv6 address", ip);
    if (a->nips == MAX_IPS)
        return s_usage_error("--ip '%s': too many addresses (at most 16)", ip);
    a->ips[a->nips++] = ip;
    return 0;
}

/* Options may stand anywhere after the subcommand; "--" ends them. Returns 0, 1 for --help, or 2. */
static int s_parse(int argc, char **argv, struct certs_args *a)
{
    int opts_done = 0;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        int rc = 0;
        if (opts_done || arg[0] != '-' || arg[1] == '\0') {
            if (a->npos == sizeof a->pos / sizeof a->pos[0])
                return s_usage_error("too many names (at most 63 per call), at '%s'", arg);
            a->pos[a->npos++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            opts_done = 1;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            return 1;
        } else if (strcmp(arg, "--force") == 0) {
            a->force = 1;
        } else if (strncmp(arg, "--ip", 4) == 0 || strncmp(arg, "--days", 6) == 0) {
            size_t klen = arg[2] == 'i' ? 4 : 6;
            if (arg[klen] == '=')
                val = arg + klen + 1;
            else if (arg[klen] != '\0')
                return s_usage_error("unknown option '%s'", arg);
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return s_usage_error("option '%s' needs a value", arg);
            rc = klen == 4 ? s_add_ip(a, val) : s_parse_days(val, &a->days);
        } else {
            return s_usage_error("unknown option '%s'", arg);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int s_check(const struct certs_args *a)
{
    char err[512];
    int init = strcmp(a->sub, "init") == 0;
    if (a->npos == 0)
        return s_usage_error("%s: missing the certificate directory DIR", a->sub);
    if (init && a->npos > 1)
        return s_usage_error("init: unexpected argument '%s' (init takes only DIR)", a->pos[1]);
    if (init && a->nips)
        return s_usage_error("init: --ip '%s' applies to node certificates (plaunch certs issue)", a->ips[0]);
    if (!init && a->npos < 2)
        return s_usage_error("issue: missing NAME after '%s'", a->pos[0]);
    if (!init && a->nips && a->npos > 2)
        return s_usage_error("issue: --ip '%s' needs a single NAME (issue one certificate per address)", a->ips[0]);
    for (size_t i = 1; !init && i < a->npos; i++)
        if (certs_check_name(a->pos[i], err, sizeof err) < 0)
            return s_usage_error("%s", err);
    return 0;
}

int cmd_certs(int argc, char **argv)
{
    struct certs_args a = { 0 };
    certs_opts_t opts = CERTS_OPTS_ZERO;
    char err[1024];
    int rc;
    if (argc < 2)
        return s_usage_error("%s", "missing subcommand: init or issue");
    a.sub = argv[1];
    if (strcmp(a.sub, "-h") == 0 || strcmp(a.sub, "--help") == 0 || strcmp(a.sub, "help") == 0) {
        fputs(s_usage, stdout);
        return 0;
    }
    if (strcmp(a.sub, "init") != 0 && strcmp(a.sub, "issue") != 0)
        return s_usage_error("unknown subcommand '%s': expected init or issue", a.sub);
    if ((rc = s_parse(argc, argv, &a)) == 1) {
        fputs(s_usage, stdout);
        return 0;
    }
    if (rc || (rc = s_check(&a)))
        return rc;
    opts.days = a.days;
    opts.force = a.force;
    opts.ips = a.ips;
    opts.nips = a.nips;
    if (strcmp(a.sub, "init") == 0) {
        if (certs_init_ca(a.pos[0], &opts, err, sizeof err) < 0) {
            log_error("certs init: %s", err);
            return 1;
        }
        printf("created job CA %s/ca.crt with key %s/ca.key (valid %d days)\n", a.pos[0], a.pos[0],
               a.days ? a.days : CERTS_CA_DAYS);
        return 0;
    }
    for (size_t i = 1; i < a.npos; i++) {
        if (certs_issue(a.pos[0], a.pos[i], &opts, err, sizeof err) < 0) {
            log_error("certs issue: %s", err);
            return 1;
        }
        printf("issued %s/%s.crt with key %s/%s.key (valid %d days)\n", a.pos[0], a.pos[i], a.pos[0], a.pos[i],
               a.days ? a.days : CERTS_NODE_DAYS);
    }
    return 0;
}
