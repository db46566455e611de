/* opts_check: the ranges of the launcher's options, derived from the control plane's bounds (common/wire.h) so
 * that whatever the parser accepts can also be sent: a value the protocol cannot carry is refused up front
 * (exit 2, naming the option, the value and the range) instead of breaking a running job. */
#include "launcher/opts/opts_priv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/optfile.h"
#include "launcher/sched/sched_hostlist.h"
#include "common/tls/tls_chan.h"

/* A JOIN carries --nproc-per-node (opts.h cannot see wire.h); the interval must leave room for a longer timeout. */
_Static_assert(OPTS_MAX_WORKERS == WIRE_MAX_LOCAL, "--nproc-per-node and what a JOIN carries differ");
_Static_assert(OPTS_MAX_HEARTBEAT_S < OPTS_MAX_HEARTBEAT_TIMEOUT_S, "--heartbeat leaves no room for its timeout");

int opts_parse_bool(const char *val, int *out, const char *origin, char *err, size_t errlen)
{
    /* the words Python's strtobool takes (Paddle's flags), in any case */
    static const char *const yes[] = { "1", "true", "yes", "y", "t", "on" }, *const no[] = { "0", "false", "no",
                                                                                           "n", "f", "off" };
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (strcasecmp(val, yes[i]) == 0 || strcasecmp(val, no[i]) == 0) {
            *out = strcasecmp(val, yes[i]) == 0;
            return 0;
        }
    snprintf(err, errlen, "%s '%s': expected true or false", origin, val);
    return -1;
}

int opts_parse_int(const char *val, long lo, long hi, long *out, const char *origin, const char *what, char *err,
                   size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < lo || v > hi) {
        snprintf(err, errlen, "%s '%s': expected %s, a whole number from %ld to %ld", origin, val, what, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int opts_parse_count(int *out, const char *val, long hi, const char *what, const char *origin, char *err, size_t errlen)
{
    long v;
    if (opts_parse_int(val, 0, hi, &v, origin, what, err, errlen) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

int opts_parse_seconds(const char *val, double lo, int lo_inclusive, double hi, double *out, const char *origin,
                       char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || end == val || *end || !(lo_inclusive ? v >= lo : v > lo) || !(v <= hi)) {
        snprintf(err, errlen, "%s '%s': expected seconds %s %g %s %g, e.g. %s", origin, val,
                 lo_inclusive ? "from" : "above", lo, lo_inclusive ? "to" : "and at most", hi,
                 lo_inclusive ? "10 or 2.5" : "30 or 0.5");
        return -1;
    }
    *out = v;
    return 0;
}

int opts_check_host(const char *val, const char *origin, char *err, size_t errlen)
{
    size_t n = strlen(val);
    int ok = n >= 1 && n <= OPTS_MAX_HOST;
    for (size_t i = 0; ok && i < n; i++) /* what a JOIN carries: printable ASCII without spaces */
        ok = val[i] > ' ' && val[i] <= '~' && val[i] != ',';
    if (!ok)
        snprintf(err, errlen, "%s '%s': expected one host name or address: 1 to %d printable characters without "
                 "spaces or commas", origin, val, OPTS_MAX_HOST);
    return ok ? 0 : -1;
}

int opts_range(const char *name, char *buf, size_t cap)
{
    if (strcmp(name, "nproc-per-node") == 0)
        return snprintf(buf, cap, "1 to %d", OPTS_MAX_WORKERS);
    if (strcmp(name, "max-restarts") == 0 || strcmp(name, "max-no-progress-restarts") == 0)
        return snprintf(buf, cap, "0 to %d", OPTS_MAX_RESTARTS);
    if (strcmp(name, "spares") == 0)
        return snprintf(buf, cap, "0 to %d, with --nnodes at most %d nodes in all", OPTS_MAX_NODES - 1,
                        OPTS_MAX_NODES);
    if (strcmp(name, "no-progress-time") == 0)
        return snprintf(buf, cap, "0 to %d", OPTS_MAX_WAIT_S);
    if (strcmp(name, "grace") == 0)
        return snprintf(buf, cap, "0 to %d", OPTS_MAX_GRACE_S);
    if (strcmp(name, "nnodes") == 0)
        return snprintf(buf, cap, "1 to %d", OPTS_MAX_NODES);
    if (strcmp(name, "node-rank") == 0)
        return snprintf(buf, cap, "0 to %d", OPTS_MAX_NODES - 1);
    if (strcmp(name, "heartbeat") == 0)
        return snprintf(buf, cap, "above %g, at most %d", OPTS_MIN_HEARTBEAT_S, OPTS_MAX_HEARTBEAT_S);
    if (strcmp(name, "heartbeat-timeout") == 0)
        return snprintf(buf, cap, "above %g, at most %d, at least 1 ms longer than --heartbeat",
                        OPTS_MIN_HEARTBEAT_TIMEOUT_S, OPTS_MAX_HEARTBEAT_TIMEOUT_S);
    if (strcmp(name, "config") == 0)
        return snprintf(buf, cap, "a regular file of at most %u bytes", OPTFILE_MAX_CONFIG);
    if (strcmp(name, "token-file") == 0)
        return snprintf(buf, cap, "a regular file of mode 0600, at most %u bytes", OPTFILE_MAX_TOKEN);
    if (strcmp(name, "rdzv-timeout") == 0 || strcmp(name, "elastic-timeout") == 0)
        return snprintf(buf, cap, "above 0, at most %d", OPTS_MAX_WAIT_S);
    return 0;
}

int opts_check_token_file(const char *path, const char *origin, char *err, size_t errlen)
{
    unsigned char key[TLS_TOKEN_MAX_BYTES];
    size_t keylen = 0;
    char why[512];
    int rc = tls_token_read_file(path, key, sizeof key, &keylen, why, sizeof why);
    OPENSSL_cleanse(key, sizeof key);
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", origin, why);
    return rc;
}

uint32_t opts_ms(double seconds)
{
    double ms = round(seconds * 1000);
    return ms < 1 ? 1 : ms > WIRE_MAX_MS ? WIRE_MAX_MS : (uint32_t)ms;
}

int opts_check_heartbeat(const struct opts *o, char *err, size_t errlen)
{
    /* Compared as the ASSIGN carries them: in whole milliseconds. */
    uint32_t hb = opts_ms(o->heartbeat), timeout = opts_ms(o->heartbeat_timeout);
    if (timeout > hb)
        return 0;
    if (o->heartbeat_timeout > o->heartbeat)
        snprintf(err, errlen, "--heartbeat-timeout %g and --heartbeat %g are both %u ms in whole milliseconds, "
                 "the unit plaunch sends them in: make the timeout longer than the interval by at least 1 ms",
                 o->heartbeat_timeout, o->heartbeat, hb);
    else
        snprintf(err, errlen, "--heartbeat-timeout %g must be longer than --heartbeat %g", o->heartbeat_timeout,
                 o->heartbeat);
    return -1;
}

int opts_copy(char *dst, size_t cap, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strlen(val) >= cap) {
        snprintf(err, errlen, "%s: value is longer than %zu characters", origin, cap - 1);
        return -1;
    }
    memcpy(dst, val, strlen(val) + 1);
    return 0;
}

int opts_node_host(const struct opts *o, int rank, char *out, size_t cap, char *err, size_t errlen)
{
    if (!o->node_hosts[0]) {
        snprintf(err, errlen, "no --node-hosts");
        return -1;
    }
    if (sched_hostlist_nth(o->node_hosts, rank, out, cap, err, errlen) < 0)
        return -1;
    size_t n = strlen(out), k = strlen(o->node_hosts_suffix);
    if (n + k >= cap) {
        snprintf(err, errlen, "host %d's name with '%s' is longer than %zu characters", rank, o->node_hosts_suffix,
                 cap - 1);
        out[0] = '\0';
        return -1;
    }
    memcpy(out + n, o->node_hosts_suffix, k + 1);
    return 0;
}

int opts_check_node_hosts(const struct opts *o, char *err, size_t errlen)
{
    char why[512];
    if (!o->node_hosts[0] || (o->nnodes <= 1 && o->nnodes_min <= 1))
        return 0;
    if (o->nnodes_min < o->nnodes) {
        snprintf(err, errlen, "--node-hosts cannot be combined with an elastic --nnodes %d:%d: ranks follow the nodes "
                 "present; drop --node-hosts", o->nnodes_min, o->nnodes);
        return -1;
    }
    int n = sched_hostlist_each(o->node_hosts, OPTS_MAX_NODES, NULL, NULL, why, sizeof why);
    if (n < 0)
        snprintf(err, errlen, "--node-hosts %.600s", why);
    else if (n != o->nnodes)
        snprintf(err, errlen, "--node-hosts names %d host%s, but --nnodes is %d: give every node's host, in rank "
                 "order", n, n == 1 ? "" : "s", o->nnodes);
    return n == o->nnodes ? 0 : -1;
    return 0;
}
