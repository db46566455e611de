/* opts_torch: torchrun's options that have no plaunch name of their own: -t/--tee and -r/--redirects (stream
 * numbers per local rank), --local-ranks-filter, --rdzv-backend/-endpoint/-conf, --monitor-interval,
 * --start-method, --role; each means what it means in torch/distributed/run.py or is refused with a sentence. */
#include "launcher/opts/opts_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/idlist.h"

#define TORCH_DEFAULT_C10D_PORT 29400 /* torchrun's port of an --rdzv-endpoint without one */

#define s_copy opts_copy

int opts_torch_streams(const char *spec, int local_rank)
{
    if (!spec[0])
        return 0;
    if (!strchr(spec, ':'))
        return atoi(spec);
    for (const char *p = spec; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL)
        if (atoi(p) == local_rank)
            return atoi(strchr(p, ':') + 1);
    return 0;
}

/* "N" (0..3) or "L:N,L:N" (local rank: stream number), as torchrun's --tee and --redirects take them. */
static int s_check_streams(const char *val, const char *origin, const char *what, char *err, size_t errlen)
{
    int ok = *val != '\0';
    if (ok && !strchr(val, ':'))
        ok = val[0] >= '0' && val[0] <= '3' && val[1] == '\0';
    for (const char *p = val; ok && strchr(val, ':') && *p;) {
        char *end;
        long l = strtol(p, &end, 10);
        ok = end != p && l >= 0 && l < OPTS_MAX_WORKERS && *end == ':' && end[1] >= '0' && end[1] <= '3' &&
             (end[2] == ',' || end[2] == '\0') && !(end[2] == ',' && end[3] == '\0');
        p = ok ? end + 2 + (end[2] == ',') : p;
    }
    if (!ok)
        snprintf(err, errlen, "%s '%.200s': expected torchrun's stream number (0 none, 1 stdout, 2 stderr, 3 both) "
                 "or LOCAL_RANK:N,... such as 0:3,1:2; %s", origin, val, what);
    return ok ? 0 : -1;
}

int opts_torch_set_tee(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    /* plaunch's words stay; a rank list is not torchrun's syntax, so it is refused rather than guessed */
    if (strcmp(val, "all") == 0 || strcmp(val, "none") == 0) {
        snprintf(o->origin_tee, sizeof o->origin_tee, "%s", origin);
        return s_copy(o->tee, sizeof o->tee, val, origin, err, errlen);
    }
    if (s_check_streams(val, origin, "to choose the ranks shown by their global rank, use --console-ranks "
                        "(e.g. --console-ranks 0,3)", err, errlen) < 0)
        return -1;
    return s_copy(o->torch_tee, sizeof o->torch_tee, val, origin, err, errlen);
}

int opts_torch_set_redirects(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (s_check_streams(val, origin, "every stream is always in LOG_DIR/workerlog.RANK", err, errlen) < 0)
        return -1;
    return s_copy(o->redirects, sizeof o->redirects, val, origin, err, errlen);
}

int opts_torch_set_ranks_filter(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    int ids[OPTS_MAX_WORKERS];
    char why[256];
    if (idlist_parse(val, "local rank", OPTS_MAX_WORKERS, ids, OPTS_MAX_WORKERS, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s '%.200s': %s; expected local ranks such as 0,1", origin, val, why);
        return -1;
    }
    return s_copy(o->ranks_filter, sizeof o->ranks_filter, val, origin, err, errlen);
}

int opts_torch_set_rdzv_backend(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strcmp(val, "static") && strcmp(val, "c10d") && strcmp(val, "etcd") && strcmp(val, "etcd-v2")) {
        snprintf(err, errlen, "%s '%.100s': there is no such backend; plaunch's rendezvous (TLS, docs/multinode.md) "
                 "stands in for torchrun's static and c10d backends, and etcd or etcd-v2 elect its coordinator through "
                 "etcd; use --rdzv-backend c10d with --rdzv-endpoint HOST:PORT", origin, val);
        return -1;
    }
    return s_copy(o->rdzv_backend, sizeof o->rdzv_backend, val, origin, err, errlen);
}

int opts_torch_set_rdzv_endpoint(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    const char *colon = strrchr(val, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : TORCH_DEFAULT_C10D_PORT;
    if (!*val || colon == val || (colon && (end == colon + 1 || *end || port < 0 || port > 65535))) {
        snprintf(err, errlen, "%s '%.200s': expected HOST or HOST:PORT of the rendezvous, e.g. 10.0.0.1:29400 (port "
                 "0, on one node: any free port)", origin, val);
        return -1;
    }
    return s_copy(o->rdzv_endpoint, sizeof o->rdzv_endpoint, val, origin, err, errlen);
}

int opts_torch_set_rdzv_conf(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_copy(o->rdzv_conf, sizeof o->rdzv_conf, val, origin, err, errlen);
}

int opts_torch_set_monitor_interval(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_seconds(val, 0, 0, OPTS_MAX_HEARTBEAT_S, &o->monitor_interval, origin, err, errlen);
}

int opts_torch_set_start_method(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strcmp(val, "spawn") && strcmp(val, "fork") && strcmp(val, "forkserver")) {
        snprintf(err, errlen, "%s '%.100s': expected spawn, fork or forkserver (torchrun's choices)", origin, val);
        return -1;
    }
    return s_copy(o->start_method, sizeof o->start_method, val, origin, err, errlen);
}

int opts_torch_set_role(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    size_t n = strlen(val);
    int ok = n >= 1 && n < sizeof o->role;
    for (size_t i = 0; ok && i < n; i++)
        ok = val[i] > ' ' && val[i] < 0x7f && val[i] != ',';
    if (!ok) {
        snprintf(err, errlen, "%s: expected a role name (ROLE_NAME) of 1 to %zu printable characters", origin,
                 sizeof o->role - 1);
        return -1;
    }
    return s_copy(o->role, sizeof o->role, val, origin, err, errlen);
}

/* --rdzv-conf: join_timeout (torch's name; also timeout) is --rdzv-timeout; the rest tunes torch's own store. */
static int s_rdzv_conf(struct opts *o, int timeout_given, char *err, size_t errlen)
{
    char buf[sizeof o->rdzv_conf];
    snprintf(buf, sizeof buf, "%s", o->rdzv_conf);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            snprintf(err, errlen, "--rdzv-conf '%.200s': expected KEY=VALUE,..., e.g. join_timeout=900", o->rdzv_conf);
            return -1;
        }
        *eq = '\0';
        int etcd = strncmp(o->rdzv_backend, "etcd", 4) == 0 ? opts_etcd_torch_conf(o, kv, eq + 1, err, errlen) : 0;
        if (etcd < 0)
            return -1;
        if (etcd > 0)
            continue;
        if (strcmp(kv, "join_timeout") == 0 || strcmp(kv, "timeout") == 0) {
            if (!timeout_given && opts_parse_seconds(eq + 1, 0, 0, OPTS_MAX_WAIT_S, &o->rdzv_timeout,
                                                     "--rdzv-conf join_timeout", err, errlen) < 0)
                return -1;
            continue;
        }
        snprintf(err, errlen, "--rdzv-conf %.60s: no counterpart in plaunch's rendezvous (it waits --rdzv-timeout "
                 "for the nodes, --heartbeat-timeout for a silent one, and picks the coordinator's host by "
                 "--master); drop it (join_timeout is read)", kv);
        return -1;
    }
    return 0;
}

int opts_torch_resolve(struct opts *o, int timeout_given, char *err, size_t errlen)
{
    if (o->rdzv_conf[0] && s_rdzv_conf(o, timeout_given, err, errlen) < 0)
        return -1;
    if (strncmp(o->rdzv_backend, "etcd", 4) == 0) {
        if (o->master[0] || o->master_addr[0] || o->ips[0]) {
            snprintf(err, errlen, "--rdzv-backend %s elects the coordinator through etcd at --rdzv-endpoint: drop %s",
                     o->rdzv_backend, o->ips[0] ? "--ips" : o->master[0] ? "--master" : "--master-addr");
            return -1;
        }
        return opts_etcd_torch_endpoint(o, err, errlen);
    }
    if (!o->rdzv_endpoint[0])
        return 0;
    const char *colon = strrchr(o->rdzv_endpoint, ':');
    long port = colon ? atol(colon + 1) : TORCH_DEFAULT_C10D_PORT;
    int one = o->nnodes == 1 && o->nnodes_min == 1;
    if (o->master[0] || o->master_addr[0] || o->ips[0]) {
        snprintf(err, errlen, "--rdzv-endpoint '%s' and %s both name the rendezvous; keep one", o->rdzv_endpoint,
                 o->ips[0] ? "--ips" : o->master[0] ? "--master" : "--master-addr");
        return -1;
    }
    if (one)
        return 0; /* one node: the rendezvous is this process, as torchrun's --standalone (localhost:0) */
    if (port == 0) {
        snprintf(err, errlen, "--rdzv-endpoint '%s': port 0 (any free port) works on one node only; give the "
                 "coordinator's port, the same on every node, e.g. HOST:%d", o->rdzv_endpoint,
                 TORCH_DEFAULT_C10D_PORT);
        return -1;
    }
    snprintf(o->master, sizeof o->master, "%.*s:%ld", colon ? (int)(colon - o->rdzv_endpoint) : 255,
             o->rdzv_endpoint, port);
    return 0;
}
