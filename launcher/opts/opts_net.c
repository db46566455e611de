/* opts_net: the setters of the options of a job of many nodes: its size and spares, the coordinator, the node's
 * rank and the host list, deadlines and heartbeats, credentials, the fan-out tree, /metrics (the table is
 * opts_defs.c). Each validates its value or refuses it with a sentence. */
#include "launcher/opts/opts_priv.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/sched/sched_hostlist.h"

#define s_copy opts_copy
#define s_int opts_parse_int
/* Seconds in (lo, hi]: a timeout or an interval. */
#define s_seconds(val, lo, hi, out, origin, err, errlen) opts_parse_seconds(val, lo, 0, hi, out, origin, err, errlen)

int opts_net_set_spares(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_count(&o->spares, val, OPTS_MAX_NODES - 1, "the number of spare nodes", origin, err, errlen);
}

int opts_net_set_nnodes(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long lo, hi;
    const char *colon = strchr(val, ':');
    char first[32];
    if (colon) {
        snprintf(first, sizeof first, "%.*s", (int)(colon - val) < 31 ? (int)(colon - val) : 31, val);
        if (s_int(first, 1, OPTS_MAX_NODES, &lo, origin, "MIN:MAX nodes", err, errlen) < 0 ||
            s_int(colon + 1, 1, OPTS_MAX_NODES, &hi, origin, "MIN:MAX nodes", err, errlen) < 0)
            return -1;
        if (lo > hi) {
            snprintf(err, errlen, "%s '%s': MIN is larger than MAX; expected e.g. 2:4", origin, val);
            return -1;
        }
    } else if (s_int(val, 1, OPTS_MAX_NODES, &lo, origin, "the number of nodes (or MIN:MAX)", err, errlen) < 0) {
        return -1;
    } else {
        hi = lo;
    }
    o->nnodes_min = (int)lo;
    o->nnodes = (int)hi;
    return 0;
}

int opts_net_set_master(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    char hp[sizeof o->master];
    if (opts_paddle_master(val, hp, sizeof hp, origin, err, errlen) < 0) /* http://, etcd:// (Paddle's) */
        return -1;
    val = hp;
    if (strncmp(val, "etcd://", 7) == 0)
        return s_copy(o->master, sizeof o->master, val, origin, err, errlen);
    const char *colon = strrchr(val, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == val || !end || *end || port < 1 || port > 65535 || strlen(val) >= sizeof o->master) {
        snprintf(err, errlen, "%s '%s': expected HOST:PORT of the coordinator, e.g. 10.0.0.1:6170", origin, val);
        return -1;
    }
    return s_copy(o->master, sizeof o->master, val, origin, err, errlen);
}

int opts_net_set_node_rank(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long v;
    if (s_int(val, 0, OPTS_MAX_NODES - 1, &v, origin, "this node's rank", err, errlen) < 0)
        return -1;
    o->node_rank = (int)v;
    return 0;
}

int opts_net_set_rdzv_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, 0, OPTS_MAX_WAIT_S, &o->rdzv_timeout, origin, err, errlen);
}

int opts_net_set_heartbeat(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, OPTS_MIN_HEARTBEAT_S, OPTS_MAX_HEARTBEAT_S, &o->heartbeat, origin, err, errlen);
}

int opts_net_set_heartbeat_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, OPTS_MIN_HEARTBEAT_TIMEOUT_S, OPTS_MAX_HEARTBEAT_TIMEOUT_S, &o->heartbeat_timeout, origin,
                     err, errlen);
}

int opts_net_set_elastic_timeout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_seconds(val, 0, OPTS_MAX_WAIT_S, &o->elastic_timeout, origin, err, errlen);
}

int opts_net_set_tls_dir(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_copy(o->tls_dir, sizeof o->tls_dir, val, origin, err, errlen);
}

int opts_net_set_token(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    size_t n = strlen(val);
    int ok = n >= 32 && n <= 128 && n % 2 == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = isxdigit((unsigned char)val[i]);
    if (!ok) {
        /* never echo a token: it is a secret even when malformed */
        snprintf(err, errlen, "%s: expected a token of 32 to 128 hex digits (plaunch prints one when it creates it)",
                 origin);
        return -1;
    }
    return s_copy(o->token, sizeof o->token, val, origin, err, errlen);
}

int opts_net_set_token_file(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (opts_check_token_file(val, origin, err, errlen) < 0)
        return -1;
    return s_copy(o->token_file, sizeof o->token_file, val, origin, err, errlen);
}

int opts_net_set_insecure(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->insecure, origin, err, errlen);
}

int opts_net_set_relay_fanout(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long v;
    if (strcmp(val, "auto") == 0 || strcmp(val, "off") == 0) {
        o->relay_fanout = val[0] == 'a' ? -1 : 0;
        return 0;
    }
    if (s_int(val, 2, OPTS_MAX_NODES - 1, &v, origin, "nodes per relay (or auto, off)", err, errlen) < 0)
        return -1;
    o->relay_fanout = (int)v;
    return 0;
}

int opts_net_set_node_hosts(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    char why[512];
    if (sched_hostlist_each(val, OPTS_MAX_NODES, NULL, NULL, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s %.600s", origin, why);
        return -1;
    }
    return opts_copy(o->node_hosts, sizeof o->node_hosts, val, origin, err, errlen);
}

int opts_net_set_metrics_port(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    long v;
    if (s_int(val, 0, 65535, &v, origin, "a TCP port for /metrics (0: none)", err, errlen) < 0)
        return -1;
    o->metrics_port = (int)v;
    return 0;
}

int opts_net_set_metrics_addr(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    unsigned char a[16];
    if (inet_pton(AF_INET, val, a) != 1 && inet_pton(AF_INET6, val, a) != 1) {
        snprintf(err, errlen, "%s '%s': expected an IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0 or ::1", origin,
                 val);
        return -1;
    }
    return s_copy(o->metrics_addr, sizeof o->metrics_addr, val, origin, err, errlen);
}
