/* etcd: a small etcd v3 client over its JSON gateway (POST /v3/...), libcurl loaded at run time: leases, a
 * campaign (create a key only if absent), get, put, count and delete by prefix. Every call is bounded by
 * ETCD_CALL_MS in all, whatever the number of endpoints; an endpoint that fails hands the call to the next. */
#ifndef PLAUNCH_ETCD_H
#define PLAUNCH_ETCD_H

#include <stddef.h>
#include <stdint.h>

/* The longest one call may take, every endpoint tried included (it blocks the caller's loop that long at most). */
#define ETCD_CALL_MS 1000
#define ETCD_MAX_ENDPOINTS 8
#define ETCD_MAX_VALUE 4096 /* the longest value get and campaign return */

typedef struct etcd etcd_t;

/* endpoints: HOST:PORT[,HOST:PORT...], each optionally with http:// or https:// (etcd:// is http://, or https://
 * when cacert is given). cacert, cert, key: PEM files for TLS ("" none; cert and key go together). The library
 * is libcurl.so.4 (PLAUNCH_CURL_LIBRARY overrides). NULL + message in err. */
etcd_t *etcd_new(const char *endpoints, const char *cacert, const char *cert, const char *key, char *err,
                 size_t errlen);
void etcd_destroy(etcd_t **e);
/* The host of the first endpoint (for the route to it), and the URL that answered last. */
const char *etcd_first_host(const etcd_t *e);
const char *etcd_url(const etcd_t *e);

/* A lease of ttl seconds; its id in *id. */
int etcd_lease_grant(etcd_t *e, int ttl, int64_t *id, char *err, size_t errlen);
/* 1: the lease lives on (renewed); 0: it expired or was revoked; -1: no endpoint answered. */
int etcd_lease_keepalive(etcd_t *e, int64_t id, char *err, size_t errlen);
int etcd_lease_revoke(etcd_t *e, int64_t id, char *err, size_t errlen);
/* Writes key = val, bound to lease (0: none). */
int etcd_put(etcd_t *e, const char *key, const char *val, int64_t lease, char *err, size_t errlen);
/* 1 and the value in val (cut to cap), 0 when the key is absent, -1 on error. */
int etcd_get(etcd_t *e, const char *key, char *val, size_t cap, char *err, size_t errlen);
/* Creates key = val bound to lease if the key does not exist (a transaction on its create revision). 1: this
 * call created it; 0: it exists, its value in holder (cut to cap; "" when it vanished meanwhile); -1 on error. */
int etcd_campaign(etcd_t *e, const char *key, const char *val, int64_t lease, char *holder, size_t cap, char *err,
                  size_t errlen);
/* How many keys start with prefix; -1 on error. */
long etcd_count_prefix(etcd_t *e, const char *prefix, char *err, size_t errlen);
/* Deletes every key that starts with prefix; how many, or -1 on error. */
long etcd_delete_prefix(etcd_t *e, const char *prefix, char *err, size_t errlen);

#endif
