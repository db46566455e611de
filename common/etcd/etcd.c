/* etcd: the etcd v3 JSON gateway through libcurl loaded with dlopen; every call bounded by ETCD_CALL_MS. */
#include "common/etcd/etcd.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ETCD_MAX_ANSWER (1u << 20) /* an answer longer than this is cut off and fails to parse */
#define ETCD_MIN_CONNECT_MS 150

struct curl_api {
    void *lib;
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    CURLcode (*perform)(CURL *);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    void (*cleanup)(CURL *);
    const char *(*strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
};

struct etcd {
    struct curl_api api;
    CURL *h;
    struct curl_slist *headers;
    char urls[ETCD_MAX_ENDPOINTS][300];
    int n, cur;                 /* endpoints; the one tried first (the last that answered) */
    char host[256];
    char cacert[4096], cert[4096], key[4096];
    char *buf;                  /* the answer being received */
    size_t len;
};

/* Function pointers from dlsym: the cast goes through void * as POSIX allows. */
#define S_LOAD(field, name) memcpy(&a->field, &(void *){ dlsym(a->lib, name) }, sizeof a->field)

static int s_load(struct curl_api *a, char *err, size_t errlen)
{
    const char *lib = getenv("PLAUNCH_CURL_LIBRARY");
    lib = lib && *lib ? lib : "libcurl.so.4";
    a->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        const char *why = dlerror();
        snprintf(err, errlen, "etcd needs libcurl, which is not loadable (%s): install it (Debian: apt-get install "
                 "libcurl4) or set PLAUNCH_CURL_LIBRARY to its path", why ? why : lib);
        return -1;
    }
    S_LOAD(global_init, "curl_global_init");
    S_LOAD(easy_init, "curl_easy_init");
    S_LOAD(setopt, "curl_easy_setopt");
    S_LOAD(perform, "curl_easy_perform");
    S_LOAD(getinfo, "curl_easy_getinfo");
    S_LOAD(cleanup, "curl_easy_cleanup");
    S_LOAD(strerror, "curl_easy_strerror");
    S_LOAD(slist_append, "curl_slist_append");
    S_LOAD(slist_free_all, "curl_slist_free_all");
    if (!a->global_init || !a->easy_init || !a->setopt || !a->perform || !a->getinfo || !a->cleanup || !a->strerror ||
        !a->slist_append || !a->slist_free_all) {
        snprintf(err, errlen, "%s lacks the curl_easy_* functions etcd needs: install libcurl4", lib);
        return -1;
    }
    return 0;
}

/* One endpoint of the list as a URL; 0, or -1 with a message. */
static int s_url(etcd_t *e, const char *ep, size_t n, int tls, char *err, size_t errlen)
{
    const char *scheme = tls ? "https://" : "http://";
    if (n > 7 && strncmp(ep, "http://", 7) == 0) {
        scheme = "http://";
        ep += 7, n -= 7;
    } else if (n > 8 && strncmp(ep, "https://", 8) == 0) {
        scheme = "https://";
        ep += 8, n -= 8;
    }
    while (n > 0 && ep[n - 1] == '/')
        n--;
    const char *colon = memchr(ep, ':', n);
    if (!colon || colon == ep || colon == ep + n - 1 || n >= sizeof e->host || memchr(ep, '/', n) ||
        strspn(colon + 1, "0123456789") != (size_t)(ep + n - colon - 1)) {
        snprintf(err, errlen, "etcd endpoint '%.*s': expected HOST:PORT (e.g. 10.0.0.5:2379)", (int)(n > 200 ? 200 : n),
                 ep);
        return -1;
    }
    if (e->n == 0)
        snprintf(e->host, sizeof e->host, "%.*s", (int)(colon - ep), ep);
    snprintf(e->urls[e->n++], sizeof e->urls[0], "%s%.*s", scheme, (int)n, ep);
    return 0;
}

etcd_t *etcd_new(const char *endpoints, const char *cacert, const char *cert, const char *key, char *err,
                 size_t errlen)
{
    etcd_t *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int tls = cacert && *cacert;
    const char *p = strncmp(endpoints, "etcd://", 7) == 0 ? endpoints + 7 : endpoints;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (e->n == ETCD_MAX_ENDPOINTS) {
            snprintf(err, errlen, "more than %d etcd endpoints", ETCD_MAX_ENDPOINTS);
            goto error;
        }
        if (n && s_url(e, p, n, tls, err, errlen) < 0)
            goto error;
        p += n + (p[n] == ',');
    }
    if (e->n == 0) {
        snprintf(err, errlen, "no etcd endpoint in '%.200s'", endpoints);
        goto error;
    }
    snprintf(e->cacert, sizeof e->cacert, "%s", cacert ? cacert : "");
    snprintf(e->cert, sizeof e->cert, "%s", cert ? cert : "");
    snprintf(e->key, sizeof e->key, "%s", key ? key : "");
    if (s_load(&e->api, err, errlen) < 0)
        goto error;
    e->api.global_init(CURL_GLOBAL_DEFAULT);
    e->h = e->api.easy_init();
    e->headers = e->api.slist_append(NULL, "Content-Type: application/json");
    if (!e->h || !e->headers) {
        snprintf(err, errlen, "libcurl: cannot make a handle");
        goto error;
    }
    return e;
error:
    etcd_destroy(&e);
    return NULL;
}

void etcd_destroy(etcd_t **pe)
{
    if (!pe || !*pe)
        return;
    etcd_t *e = *pe;
    if (e->h)
        e->api.cleanup(e->h);
    if (e->headers)
        e->api.slist_free_all(e->headers);
    /* libcurl stays loaded: OpenSSL's exit handlers may still point into it */
    free(e->buf);
    free(e);
    *pe = NULL;
}

const char *etcd_first_host(const etcd_t *e)
{
    return e->host;
}

const char *etcd_url(const etcd_t *e)
{
    return e->urls[e->cur];
}

static size_t s_write(char *data, size_t size, size_t nmemb, void *arg)
{
    etcd_t *e = arg;
    size_t n = size * nmemb;
    if (e->len + n > ETCD_MAX_ANSWER)
        return 0; /* libcurl ends the transfer with an error */
    char *b = realloc(e->buf, e->len + n + 1);
    if (!b)
        return 0;
    memcpy(b + e->len, data, n);
    e->len += n;
    b[e->len] = '\0';
    e->buf = b;
    return n;
}

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* POSTs body to path at one endpoint after another (from the last that answered) until one answers with HTTP 200,
 * within ETCD_CALL_MS in all. The answer parsed, or NULL with a message. */
static json_t *s_call(etcd_t *e, const char *path, json_t *body, char *err, size_t errlen)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int64_t until = s_now_ms() + ETCD_CALL_MS;
    long connect_ms = ETCD_CALL_MS / (2 * e->n);
    connect_ms = connect_ms < ETCD_MIN_CONNECT_MS ? ETCD_MIN_CONNECT_MS : connect_ms;
    json_t *ans = NULL;
    int tries = 0;
    snprintf(err, errlen, "no etcd endpoint answered within %d ms", ETCD_CALL_MS);
    for (int k = 0; k < e->n && !ans; k++) {
        int i = (e->cur + k) % e->n;
        int64_t left = until - s_now_ms();
        if (left <= 0)
            break;
        char url[sizeof e->urls[0] + 64];
        snprintf(url, sizeof url, "%s%s", e->urls[i], path);
        CURL *h = e->h;
        struct curl_api *a = &e->api;
        e->len = 0;
        a->setopt(h, CURLOPT_URL, url);
        a->setopt(h, CURLOPT_POSTFIELDS, text);
        a->setopt(h, CURLOPT_HTTPHEADER, e->headers);
        a->setopt(h, CURLOPT_WRITEFUNCTION, s_write);
        a->setopt(h, CURLOPT_WRITEDATA, e);
        a->setopt(h, CURLOPT_NOSIGNAL, 1L);
        a->setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
        a->setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms < left ? connect_ms : (long)left);
        a->setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        if (e->cacert[0])
            a->setopt(h, CURLOPT_CAINFO, e->cacert);
        if (e->cert[0]) {
            a->setopt(h, CURLOPT_SSLCERT, e->cert);
            a->setopt(h, CURLOPT_SSLKEY, e->key);
        }
        tries++;
        CURLcode rc = a->perform(h);
        long code = 0;
        a->getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        if (rc != CURLE_OK) {
            snprintf(err, errlen, "etcd at %s: %s", e->urls[i], a->strerror(rc));
            continue;
        }
        json_error_t jerr;
        ans = e->buf ? json_loadb(e->buf, e->len, 0, &jerr) : NULL;
        if (code != 200 || !json_is_object(ans)) {
            json_t *msg = json_object_get(ans, "message");
            snprintf(err, errlen, "etcd at %s answered HTTP %ld%s%.300s", e->urls[i], code, json_is_string(msg) ? ": " : "",
                     json_is_string(msg) ? json_string_value(msg) : "");
            json_decref(ans);
            ans = NULL;
            continue;
        }
        e->cur = i;
    }
    if (!ans && tries < e->n && s_now_ms() >= until)
        snprintf(err + strlen(err), errlen - strlen(err), " (no time left for the other endpoints of %d ms)",
                 ETCD_CALL_MS);
    free(text);
    return ans;
}

/* Base64 of a string, as etcd's gateway wants keys and values. */
static json_t *s_b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (!out)
        return NULL;
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    json_t *j = json_string(out);
    free(out);
    return j;
}

/* The base64 value of a JSON string into out (cut to cap); -1 when it is not base64. */
static int s_unb64(json_t *j, char *out, size_t cap)
{
    const char *s = json_string_value(j);
    size_t n = s ? strlen(s) : 0;
    if (!s || n % 4)
        return -1;
    unsigned char *b = malloc(n / 4 * 3 + 1);
    if (!b)
        return -1;
    int len = EVP_DecodeBlock(b, (const unsigned char *)s, (int)n);
    if (len < 0) {
        free(b);
        return -1;
    }
    len -= (n && s[n - 1] == '=') + (n > 1 && s[n - 2] == '=');
    snprintf(out, cap, "%.*s", len, (char *)b);
    free(b);
    return 0;
}

/* The end of a prefix's range: the prefix with its last byte plus one. */
static json_t *s_range_end(const char *prefix)
{
    char end[1024];
    size_t n = strlen(prefix);
    if (n == 0 || n >= sizeof end)
        return NULL;
    memcpy(end, prefix, n + 1);
    end[n - 1]++;
    return s_b64(end);
}

/* A 64-bit number that the gateway writes as a JSON string (or, rarely, as a number); 0 when absent. */
static int64_t s_int(json_t *j)
{
    if (json_is_integer(j))
        return json_integer_value(j);
    return json_is_string(j) ? strtoll(json_string_value(j), NULL, 10) : 0;
}

static json_t *s_id(int64_t id)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)id);
    return json_string(s);
}

int etcd_lease_grant(etcd_t *e, int ttl, int64_t *id, char *err, size_t errlen)
{
    json_t *a = s_call(e, "/v3/lease/grant", json_pack("{s:i}", "TTL", ttl), err, errlen);
    if (!a)
        return -1;
    *id = s_int(json_object_get(a, "ID"));
    json_decref(a);
    if (*id == 0) {
        snprintf(err, errlen, "etcd at %s granted no lease", etcd_url(e));
        return -1;
    }
    return 0;
}

int etcd_lease_keepalive(etcd_t *e, int64_t id, char *err, size_t errlen)
{
    json_t *a = s_call(e, "/v3/lease/keepalive", json_pack("{s:o}", "ID", s_id(id)), err, errlen);
    if (!a)
        return -1;
    /* the gateway streams the answer as {"result": {...}}; an expired lease has no TTL (or TTL 0) */
    json_t *r = json_object_get(a, "result");
    int64_t ttl = s_int(json_object_get(r ? r : a, "TTL"));
    json_decref(a);
    return ttl > 0;
}

int etcd_lease_revoke(etcd_t *e, int64_t id, char *err, size_t errlen)
{
    json_t *a = s_call(e, "/v3/lease/revoke", json_pack("{s:o}", "ID", s_id(id)), err, errlen);
    json_decref(a);
    return a ? 0 : -1;
}

int etcd_put(etcd_t *e, const char *key, const char *val, int64_t lease, char *err, size_t errlen)
{
    json_t *req = json_pack("{s:o,s:o}", "key", s_b64(key), "value", s_b64(val));
    if (req && lease)
        json_object_set_new(req, "lease", s_id(lease));
    json_t *a = req ? s_call(e, "/v3/kv/put", req, err, errlen) : NULL;
    json_decref(a);
    return a ? 0 : -1;
}

/* The first kv's value of a range answer into val: 1, 0 when there is none, -1 when it is not base64. */
static int s_first_value(json_t *range, char *val, size_t cap)
{
    json_t *kv = json_array_get(json_object_get(range, "kvs"), 0);
    if (!kv)
        return 0;
    json_t *v = json_object_get(kv, "value");
    if (!v) { /* an empty value is left out of the answer */
        if (cap)
            *val = '\0';
        return 1;
    }
    return s_unb64(v, val, cap) < 0 ? -1 : 1;
}

int etcd_get(etcd_t *e, const char *key, char *val, size_t cap, char *err, size_t errlen)
{
    json_t *a = s_call(e, "/v3/kv/range", json_pack("{s:o}", "key", s_b64(key)), err, errlen);
    if (!a)
        return -1;
    int rc = s_first_value(a, val, cap);
    json_decref(a);
    if (rc < 0)
        snprintf(err, errlen, "etcd at %s: the value of %.200s is not base64", etcd_url(e), key);
    return rc;
}

int etcd_campaign(etcd_t *e, const char *key, const char *val, int64_t lease, char *holder, size_t cap, char *err,
                  size_t errlen)
{
    json_t *put = json_pack("{s:o,s:o,s:o}", "key", s_b64(key), "value", s_b64(val), "lease", s_id(lease));
    json_t *req = json_pack("{s:[{s:o,s:s,s:s,s:s}],s:[{s:o}],s:[{s:{s:o}}]}", "compare", "key", s_b64(key),
                            "target", "CREATE", "result", "EQUAL", "create_revision", "0", "success", "request_put",
                            put, "failure", "request_range", "key", s_b64(key));
    json_t *a = req ? s_call(e, "/v3/kv/txn", req, err, errlen) : NULL;
    if (!a)
        return -1;
    /* proto3 leaves a false "succeeded" out: a missing field is a lost campaign */
    int won = json_is_true(json_object_get(a, "succeeded"));
    if (cap)
        *holder = '\0';
    if (!won) {
        json_t *r = json_object_get(json_array_get(json_object_get(a, "responses"), 0), "response_range");
        s_first_value(r, holder, cap);
    }
    json_decref(a);
    return won;
}

/* A range call over every key that starts with prefix (path: range or deleterange); the answer's number in field. */
static long s_prefix_call(etcd_t *e, const char *path, const char *prefix, int count_only, const char *field,
                          char *err, size_t errlen)
{
    json_t *req = json_pack("{s:o,s:o}", "key", s_b64(prefix), "range_end", s_range_end(prefix));
    if (req && count_only)
        json_object_set_new(req, "count_only", json_true());
    json_t *a = req ? s_call(e, path, req, err, errlen) : NULL;
    if (!a)
        return -1;
    long n = (long)s_int(json_object_get(a, field));
    json_decref(a);
    return n;
}

long etcd_count_prefix(etcd_t *e, const char *prefix, char *err, size_t errlen)
{
    return s_prefix_call(e, "/v3/kv/range", prefix, 1, "count", err, errlen);
}

long etcd_delete_prefix(etcd_t *e, const char *prefix, char *err, size_t errlen)
{
    return s_prefix_call(e, "/v3/kv/deleterange", prefix, 0, "deleted", err, errlen);
}
