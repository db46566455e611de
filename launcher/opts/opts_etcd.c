/* opts_etcd: the coordinator's election through etcd as its anchors spell it: Paddle's --master etcd://H:P[,H:P],
 * torchrun's --rdzv-backend etcd|etcd-v2 with --rdzv-endpoint and its --rdzv-conf keys, and --etcd-cacert/-cert/-key
 * (TLS to etcd). The election itself is the agent's (docs/resilience.md, its etcd part). */
#include "launcher/opts/opts_priv.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ETCD_MIN_HEARTBEAT_TIMEOUT_S 2 /* the lease's TTL is the heartbeat timeout (docs/resilience.md, its etcd part) */
#define ETCD_DEFAULT_PORT 2379 /* torchrun's port of an etcd --rdzv-endpoint without one (and etcd's own) */

int opts_is_etcd(const struct opts *o)
{
    return strncmp(o->master, "etcd://", 7) == 0;
}

/* etcd://HOST:PORT[,HOST:PORT...] (each may say http:// or https://): checked here, kept as given. */
int opts_etcd_master(const char *val, char *out, size_t cap, const char *origin, char *err, size_t errlen)
{
    const char *p = val + 7;
    int n = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *ep = p;
        if (len > 7 && strncmp(ep, "http://", 7) == 0)
            ep += 7;
        else if (len > 8 && strncmp(ep, "https://", 8) == 0)
            ep += 8;
        size_t elen = len - (size_t)(ep - p);
        const char *colon = memchr(ep, ':', elen);
        if (!colon || colon == ep || colon == ep + elen - 1 ||
            strspn(colon + 1, "0123456789") != (size_t)(ep + elen - colon - 1)) {
            snprintf(err, errlen, "%s '%.200s': expected etcd://HOST:PORT[,HOST:PORT...] (etcd's client endpoints, "
                     "e.g. etcd://10.0.0.5:2379,10.0.0.6:2379)", origin, val);
            return -1;
        }
        n++;
        p += len + (p[len] == ',');
    }
    if (n == 0 || strlen(val) >= cap) {
        snprintf(err, errlen, "%s '%.200s': expected etcd://HOST:PORT[,HOST:PORT...] of at most %zu characters",
                 origin, val, cap - 1);
        return -1;
    }
    snprintf(out, cap, "%s", val);
    return 0;
}

static int s_file(char *dst, size_t cap, const char *val, const char *origin, char *err, size_t errlen)
{
    if (!*val || strlen(val) >= cap) {
        snprintf(err, errlen, "%s: expected the path of a PEM file", origin);
        return -1;
    }
    snprintf(dst, cap, "%s", val);
    return 0;
}

int opts_etcd_set_cacert(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_file(o->etcd_cacert, sizeof o->etcd_cacert, val, origin, err, errlen);
}

int opts_etcd_set_cert(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_file(o->etcd_cert, sizeof o->etcd_cert, val, origin, err, errlen);
}

int opts_etcd_set_key(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_file(o->etcd_key, sizeof o->etcd_key, val, origin, err, errlen);
}

/* One --rdzv-conf KEY=VALUE of torchrun's etcd backends: 1 taken, 0 not an etcd key, -1 refused. */
int opts_etcd_torch_conf(struct opts *o, const char *key, const char *val, char *err, size_t errlen)
{
    if (strcmp(key, "protocol") == 0) {
        if (strcmp(val, "http") && strcmp(val, "https")) {
            snprintf(err, errlen, "--rdzv-conf protocol=%.40s: expected http or https (torchrun's choices)", val);
            return -1;
        }
        snprintf(o->etcd_scheme, sizeof o->etcd_scheme, "%s", val);
        return 1;
    }
    /* the legacy etcd backend's names, then etcd-v2's */
    if (strcmp(key, "cacert") == 0 || strcmp(key, "ca_cert") == 0)
        return s_file(o->etcd_cacert, sizeof o->etcd_cacert, val, "--rdzv-conf cacert", err, errlen) < 0 ? -1 : 1;
    if (strcmp(key, "cert") == 0 || strcmp(key, "ssl_cert") == 0)
        return s_file(o->etcd_cert, sizeof o->etcd_cert, val, "--rdzv-conf cert", err, errlen) < 0 ? -1 : 1;
    if (strcmp(key, "key") == 0 || strcmp(key, "ssl_cert_key") == 0)
        return s_file(o->etcd_key, sizeof o->etcd_key, val, "--rdzv-conf key", err, errlen) < 0 ? -1 : 1;
    if (strcmp(key, "last_call_timeout") == 0 || strcmp(key, "read_timeout") == 0 || strcmp(key, "ttl") == 0) {
        snprintf(err, errlen, "--rdzv-conf %s: plaunch's etcd election has no such setting (a rendezvous' last call "
                 "is 1 s, every etcd call is bounded by 1 s, its lease lasts --heartbeat-timeout); drop it", key);
        return -1;
    }
    return 0;
}

/* torchrun's etcd backends: --rdzv-endpoint HOST[:PORT] (port 2379 when omitted) is the etcd to elect through. */
int opts_etcd_torch_endpoint(struct opts *o, char *err, size_t errlen)
{
    const char *ep = o->rdzv_endpoint, *colon = strrchr(ep, ':');
    if (!ep[0]) {
        snprintf(err, errlen, "--rdzv-backend %s needs --rdzv-endpoint HOST[:PORT] of etcd (e.g. 10.0.0.5:2379)",
                 o->rdzv_backend);
        return -1;
    }
    const char *scheme = o->etcd_scheme[0] ? o->etcd_scheme : "", *sep = o->etcd_scheme[0] ? "://" : "";
    if (colon)
        snprintf(o->master, sizeof o->master, "etcd://%s%s%.200s", scheme, sep, ep);
    else
        snprintf(o->master, sizeof o->master, "etcd://%s%s%.200s:%d", scheme, sep, ep, ETCD_DEFAULT_PORT);
    return 0;
}

static int s_readable(const char *path, const char *what, char *err, size_t errlen)
{
    if (path[0] && access(path, R_OK) < 0) {
        snprintf(err, errlen, "%s '%.300s' cannot be read: give the PEM file's path", what, path);
        return -1;
    }
    return 0;
}

/* After every source: the job's name in etcd (the anchors' defaults), TLS files that go together. */
int opts_etcd_resolve(struct opts *o, int torch, char *err, size_t errlen)
{
    int files = o->etcd_cacert[0] || o->etcd_cert[0] || o->etcd_key[0];
    if (!opts_is_etcd(o)) {
        if (files) {
            snprintf(err, errlen, "--etcd-cacert, --etcd-cert and --etcd-key are for an etcd rendezvous: add "
                     "--master etcd://HOST:PORT (or --rdzv-backend etcd --rdzv-endpoint HOST:PORT), or drop them");
            return -1;
        }
        return 0;
    }
    if (!o->etcd_cert[0] != !o->etcd_key[0]) {
        snprintf(err, errlen, "--etcd-cert and --etcd-key go together (the client certificate and its key)");
        return -1;
    }
    if (s_readable(o->etcd_cacert, "--etcd-cacert", err, errlen) < 0 ||
        s_readable(o->etcd_cert, "--etcd-cert", err, errlen) < 0 || s_readable(o->etcd_key, "--etcd-key", err, errlen) < 0)
        return -1;
    if (o->heartbeat_timeout < ETCD_MIN_HEARTBEAT_TIMEOUT_S) {
        snprintf(err, errlen, "--heartbeat-timeout %g with an etcd rendezvous: at least %d s (etcd's shortest lease, "
                 "and one call to etcd may hold this node's loop for 1 s)", o->heartbeat_timeout,
                 ETCD_MIN_HEARTBEAT_TIMEOUT_S);
        return -1;
    }
    if (o->sched_node0) {
        snprintf(err, errlen, "--master etcd:// under %s: the scheduler's first node would host the coordinator; "
                 "give --scheduler none to elect it through etcd", o->sched_what);
        return -1;
    }
    if (!o->job_id[0]) /* every node must name the same keys: the anchors' own defaults */
        snprintf(o->job_id, sizeof o->job_id, "%s", torch ? "none" : "default");
    return 0;
}
