/* opts_compat: the spellings torchrun and paddle.distributed.launch users bring (--master-addr/--master-port,
 * --standalone, --ips, --rank), folded into plaunch's own options once every source was read. */
#include "launcher/opts/opts_priv.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COMPAT_MAX_IPS 4096 /* --ips entries (Paddle jobs of more nodes give --nnodes and --master instead) */
#define COMPAT_MAX_MINE 256 /* addresses of this host looked at */

/* Splits --master-addr's HOST[:PORT] into host (when not NULL) and *port (0 without one); 0, or -1 with a
 * message naming origin. */
static int s_split_addr(const char *val, char *host, size_t hostcap, int *port, const char *origin, char *err,
                           size_t errlen)
{
    const char *colon = strchr(val, ':');
    size_t hlen = colon ? (size_t)(colon - val) : strlen(val);
    char *end = NULL;
    long p = colon ? strtol(colon + 1, &end, 10) : 0;
    int bad_port = colon && (end == colon + 1 || *end || p < 1 || p > 65535); /* a second ':' lands here too */
    if (hlen == 0 || hlen >= 256 || strpbrk(val, ", \t") || bad_port) {
        snprintf(err, errlen, "%s '%s': expected the coordinator's HOST (its port from --master-port, default %d) "
                 "or HOST:PORT, e.g. 10.0.0.1 or 10.0.0.1:%d", origin, val, OPTS_DEFAULT_PORT, OPTS_DEFAULT_PORT);
        return -1;
    }
    if (host)
        snprintf(host, hostcap, "%.*s", (int)hlen, val);
    if (port)
        *port = (int)p;
    return 0;
}

/* Parses "A,B,C" into IPv4 addresses; the count, or -1 with a message naming origin. */
static int s_parse_ips(const char *val, struct in_addr *ips, int max, const char *origin, char *err, size_t errlen)
{
    int n = 0;
    for (const char *p = val;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char one[INET_ADDRSTRLEN];
        if (n == max) {
            snprintf(err, errlen, "%s: more than %d addresses (at most %d nodes)", origin, max, max);
            return -1;
        }
        snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
        if (len == 0 || len >= sizeof one || inet_pton(AF_INET, one, &ips[n]) != 1) {
            snprintf(err, errlen, "%s '%.200s': entry %d ('%.*s') is not an IPv4 address; expected the nodes' "
                     "addresses, e.g. 10.0.0.1,10.0.0.2 (host names: use --master HOST:PORT --nnodes N)", origin, val,
                     n + 1, (int)(len > 64 ? 64 : len), p);
            return -1;
        }
        for (int k = 0; k < n; k++)
            if (ips[k].s_addr == ips[n].s_addr) {
                snprintf(err, errlen, "%s '%.200s': %s is listed twice; name each node once", origin, val, one);
                return -1;
            }
        n++;
        if (!end)
            return n;
        p = end + 1;
    }
}

int opts_compat_set_master_addr(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (s_split_addr(val, NULL, 0, NULL, origin, err, errlen) < 0)
        return -1;
    if (strlen(val) >= sizeof o->master_addr) {
        snprintf(err, errlen, "%s: value is longer than %zu characters", origin, sizeof o->master_addr - 1);
        return -1;
    }
    memcpy(o->master_addr, val, strlen(val) + 1);
    return 0;
}

int opts_compat_set_master_port(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    char *end = NULL;
    long v = strtol(val, &end, 10);
    if (end == val || *end || v < 1 || v > 65535) {
        snprintf(err, errlen, "%s '%s': expected the coordinator's TCP port, a whole number from 1 to 65535", origin,
                 val);
        return -1;
    }
    o->master_port = (int)v;
    return 0;
}

int opts_compat_set_ips(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    static struct in_addr ips[COMPAT_MAX_IPS];
    if (strlen(val) >= sizeof o->ips) {
        snprintf(err, errlen, "%s: value is longer than %zu characters", origin, sizeof o->ips - 1);
        return -1;
    }
    if (s_parse_ips(val, ips, COMPAT_MAX_IPS, origin, err, errlen) < 0)
        return -1;
    memcpy(o->ips, val, strlen(val) + 1);
    return 0;
}

/* A flag like --quiet. */
int opts_compat_set_standalone(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->standalone, origin, err, errlen);
}

/* This host's IPv4 addresses on interfaces that are up (of its network namespace); the count. */
static int s_local_addrs(struct in_addr *out, int max)
{
    struct ifaddrs *all = NULL;
    int n = 0;
    if (getifaddrs(&all) < 0)
        return 0;
    for (struct ifaddrs *i = all; i && n < max; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP))
            out[n++] = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
    freeifaddrs(all);
    return n;
}

static int s_is_mine(struct in_addr a, const struct in_addr *mine, int nmine)
{
    for (int k = 0; k < nmine; k++)
        if (mine[k].s_addr == a.s_addr)
            return 1;
    return 0;
}

/* Paddle's --ips: the node count, the coordinator on the first address, this node's rank by its address. */
static int s_from_ips(struct opts *o, char *err, size_t errlen)
{
    static struct in_addr ips[COMPAT_MAX_IPS];
    struct in_addr mine[COMPAT_MAX_MINE];
    char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    int n = s_parse_ips(o->ips, ips, COMPAT_MAX_IPS, "--ips", err, errlen);
    if (n < 0)
        return -1;
    if (o->master[0] || o->master_addr[0]) {
        snprintf(err, errlen, "--ips names the coordinator (its first address, port --master-port); drop --master "
                 "and --master-addr");
        return -1;
    }
    if ((o->nnodes != 1 || o->nnodes_min != 1) && (o->nnodes != n || o->nnodes_min != n)) {
        snprintf(err, errlen, "--nnodes %d%s%.0d disagrees with --ips, which lists %d node%s; drop --nnodes",
                 o->nnodes_min, o->nnodes_min < o->nnodes ? ":" : "", o->nnodes_min < o->nnodes ? o->nnodes : 0, n,
                 n == 1 ? "" : "s");
        return -1;
    }
    int nmine = s_local_addrs(mine, COMPAT_MAX_MINE), found = -1;
    for (int i = 0; i < n && o->node_rank < 0; i++) {
        if (!s_is_mine(ips[i], mine, nmine))
            continue;
        if (found >= 0) {
            inet_ntop(AF_INET, &ips[found], a, sizeof a);
            inet_ntop(AF_INET, &ips[i], b, sizeof b);
            snprintf(err, errlen, "--ips: %s and %s both belong to this host; give this node's position in the "
                     "list with --rank R", a, b);
            return -1;
        }
        found = i;
    }
    if (o->node_rank < 0 && found < 0) {
        char have[512] = "no IPv4 address";
        size_t used = 0;
        for (int k = 0; k < nmine && used + INET_ADDRSTRLEN + 8 < sizeof have; k++) {
            inet_ntop(AF_INET, &mine[k], a, sizeof a);
            used += (size_t)snprintf(have + used, sizeof have - used, "%s%s", k ? ", " : "", a);
        }
        snprintf(err, errlen, "--ips '%.300s': none of these addresses belongs to this host (it has %s); run this "
                 "command on the hosts the list names, or give this node's position with --rank R", o->ips, have);
        return -1;
    }
    if (o->node_rank < 0)
        o->node_rank = found;
    if (!o->node_hosts[0]) /* every node's host by rank: a ranked node finds its relay (--node-hosts) */
        snprintf(o->node_hosts, sizeof o->node_hosts, "%s", o->ips);
    /* This node advertises the address the list gives it, as Paddle's endpoints do, when it really has it. */
    if (!o->host[0] && o->node_rank < n && s_is_mine(ips[o->node_rank], mine, nmine))
        inet_ntop(AF_INET, &ips[o->node_rank], o->host, sizeof o->host);
    o->nnodes = o->nnodes_min = n;
    if (n > 1) { /* one address: a one-node job, its coordinator in this process */
        inet_ntop(AF_INET, &ips[0], a, sizeof a);
        snprintf(o->master, sizeof o->master, "%s:%d", a, o->master_port ? o->master_port : OPTS_DEFAULT_PORT);
    }
    return 0;
}

/* torchrun's --master-addr HOST[:PORT] and --master-port PORT: plaunch's --master HOST:PORT. */
static int s_from_master_addr(struct opts *o, char *err, size_t errlen)
{
    char host[256];
    int port = 0;
    if (s_split_addr(o->master_addr, host, sizeof host, &port, "--master-addr", err, errlen) < 0)
        return -1;
    if (o->master[0]) {
        snprintf(err, errlen, "--master-addr '%s' and --master '%s' both name the coordinator; keep one", o->master_addr,
                 o->master);
        return -1;
    }
    if (port && o->master_port && port != o->master_port) {
        snprintf(err, errlen, "--master-addr '%s' and --master-port %d give different ports; keep one",
                 o->master_addr, o->master_port);
        return -1;
    }
    snprintf(o->master, sizeof o->master, "%s:%d", host,
             port ? port : o->master_port ? o->master_port : OPTS_DEFAULT_PORT);
    return 0;
}

#define COMPAT_TORCH_MASTER_PORT 29500 /* torchrun's --master-port default */

/* torchrun's --master-addr/--master-port on one node: the workers' MASTER_ADDR and MASTER_PORT, as its static
 * rendezvous gives them (no coordinator: there is no other node to reach it). */
static int s_one_node_master(struct opts *o, char *err, size_t errlen)
{
    int port = 0;
    if (o->standalone && o->master_addr[0]) {
        snprintf(err, errlen, "--standalone runs a one-node job on this host, but --master-addr names a master: "
                 "drop one of them");
        return -1;
    }
    if (o->master_addr[0]) {
        if (s_split_addr(o->master_addr, o->worker_master_addr, sizeof o->worker_master_addr, &port,
                         "--master-addr", err, errlen) < 0)
            return -1;
        if (port && o->master_port && port != o->master_port) {
            snprintf(err, errlen, "--master-addr '%s' and --master-port %d give different ports; keep one",
                     o->master_addr, o->master_port);
            return -1;
        }
    }
    o->worker_master_port = port ? port : o->master_port ? o->master_port : COMPAT_TORCH_MASTER_PORT;
    return 0;
}

int opts_compat_resolve(struct opts *o, char *err, size_t errlen)
{
    int one = o->nnodes == 1 && o->nnodes_min == 1 && !o->ips[0] && !o->master[0];
    if (o->master_port && !o->master_addr[0] && !o->ips[0] && !one) {
        if (o->master[0])
            snprintf(err, errlen, "--master-port %d with --master '%s': give the port in --master HOST:PORT",
                     o->master_port, o->master);
        else
            snprintf(err, errlen, "--master-port %d with --nnodes %d needs --master-addr HOST: the coordinator's "
                     "host, the same on every node", o->master_port, o->nnodes);
        return -1;
    }
    if (one && (o->master_port || o->master_addr[0]))
        return s_one_node_master(o, err, errlen);
    if (o->ips[0] && s_from_ips(o, err, errlen) < 0)
        return -1;
    if (o->master_addr[0] && s_from_master_addr(o, err, errlen) < 0)
        return -1;
    if (o->standalone && (o->nnodes > 1 || o->master[0])) {
        snprintf(err, errlen, "--standalone runs a one-node job, but %s; drop one of them",
                 o->ips[0] ? "--ips lists several nodes" : o->nnodes > 1 ? "--nnodes asks for several nodes"
                                                           : "--master names a coordinator to join");
        return -1;
    }
    return 0;
}
