/* agent_etcd: the coordinator's election through etcd: this node's lease and membership, the campaign, the watch on
 * the coordinator's key, the job's durable state. Every etcd call blocks the loop at most ETCD_CALL_MS (1 s): less
 * than the shortest --heartbeat-timeout (2 s), so no heartbeat deadline passes while a call waits. */
#include "launcher/agent/agent_etcd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "common/etcd/etcd.h"
#include "common/log.h"

#define AE_WATCH_MS 500    /* how often a follower reads the coordinator's key */
#define AE_ELECT_MS 100    /* how often a campaign is tried again while the old key has not expired */
#define AE_WARN_NS 5000000000ull
#define AE_QUIET_NS 2000000000ull /* the watch's pause after etcd did not answer it */
#define AE_MIN_TTL 2       /* etcd's own minimum lease (1.5 s with its default timing) */

struct agent_etcd {
    etcd_t *etcd;
    const struct job *job;
    loop_t *loop;
    struct agent_etcd_cb cb;
    int64_t lease;
    int ttl;
    char prefix[128];          /* /plaunch/JOB/ */
    char me[300];              /* where this node would serve the coordinator */
    char coord[300];           /* the coordinator followed ("" none) */
    char lost[300];            /* the coordinator lost: its key is stale until its lease expires */
    int leader, electing;
    uint64_t elect_ns, keepalive_ns, warned_ns, quiet_until_ns;
    int timer;
};

int agent_etcd_host(const char *master, char *host, size_t cap)
{
    const char *p = strncmp(master, "etcd://", 7) == 0 ? master + 7 : master;
    if (strncmp(p, "http://", 7) == 0)
        p += 7;
    else if (strncmp(p, "https://", 8) == 0)
        p += 8;
    size_t n = strcspn(p, ":,");
    if (n == 0 || n >= cap)
        return -1;
    snprintf(host, cap, "%.*s", (int)n, p);
    return 0;
}

static void s_key(const agent_etcd_t *ae, char *out, size_t cap, const char *what)
{
    snprintf(out, cap, "%s%s", ae->prefix, what);
}

/* This node's membership key, bound to its lease: its presence says the node is alive. */
static int s_member(agent_etcd_t *ae, char *err, size_t errlen)
{
    char key[512];
    snprintf(key, sizeof key, "%smembers/%.100s-%d", ae->prefix, ae->job->node.hostname, (int)getpid());
    return etcd_put(ae->etcd, key, ae->me, ae->lease, err, errlen);
}

agent_etcd_t *agent_etcd_new(const struct job *job, const char *me, char *err, size_t errlen)
{
    const struct opts *o = &job->opt;
    agent_etcd_t *ae = calloc(1, sizeof *ae);
    char why[1024];
    if (!ae) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ae->job = job;
    snprintf(ae->me, sizeof ae->me, "%s", me);
    snprintf(ae->prefix, sizeof ae->prefix, "/plaunch/%.64s/", job->node.job_id);
    ae->ttl = (int)(o->heartbeat_timeout + 0.999);
    ae->ttl = ae->ttl < AE_MIN_TTL ? AE_MIN_TTL : ae->ttl;
    ae->etcd = etcd_new(o->master, o->etcd_cacert, o->etcd_cert, o->etcd_key, why, sizeof why);
    if (!ae->etcd) {
        snprintf(err, errlen, "--master %.300s: %s", o->master, why);
        goto error;
    }
    if (etcd_lease_grant(ae->etcd, ae->ttl, &ae->lease, why, sizeof why) < 0 || s_member(ae, why, sizeof why) < 0) {
        snprintf(err, errlen, "cannot elect the coordinator through etcd (--master %.300s): %s; start etcd there (or "
                 "fix the address%s)", o->master, why, o->etcd_cacert[0] ? " and the TLS files" : "; https:// "
                 "endpoints need --etcd-cacert");
        goto error;
    }
    return ae;
error:
    agent_etcd_destroy(&ae);
    return NULL;
}

/* One campaign: 1 decided (the callback ran), 0 try again later. */
static int s_campaign(agent_etcd_t *ae)
{
    char key[256], holder[300], why[1024];
    s_key(ae, key, sizeof key, "coordinator");
    int rc = etcd_campaign(ae->etcd, key, ae->me, ae->lease, holder, sizeof holder, why, sizeof why);
    uint64_t now = loop_now_ns();
    if (rc < 0 || (rc == 0 && (!holder[0] || strcmp(holder, ae->lost) == 0))) {
        if (rc < 0 && now - ae->warned_ns >= AE_WARN_NS) {
            ae->warned_ns = now;
            log_warn("electing the coordinator through etcd: %s; trying again", why);
        }
        return 0;
    }
    ae->electing = 0;
    ae->leader = rc == 1;
    snprintf(ae->coord, sizeof ae->coord, "%s", rc == 1 ? ae->me : holder);
    log_info("etcd election (%s): %s %s, after %.2f s", etcd_url(ae->etcd),
             ae->leader ? "this node coordinates the job at" : "the coordinator is at", ae->coord,
             (double)(now - ae->elect_ns) / 1e9);
    ae->cb.elected(ae->cb.arg, ae->leader, ae->coord);
    return 1;
}

/* The lease lives on; a lease that expired (etcd away longer than its TTL) is granted again, and a leader that
 * lost its key while away cannot go on: another node may coordinate by now. */
static void s_keepalive(agent_etcd_t *ae, uint64_t now)
{
    char why[1024];
    ae->keepalive_ns = now;
    int rc = etcd_lease_keepalive(ae->etcd, ae->lease, why, sizeof why);
    if (rc < 0 && now - ae->warned_ns >= AE_WARN_NS) {
        ae->warned_ns = now;
        log_warn("etcd does not answer (%s): the job goes on; a lost coordinator cannot be replaced until it does",
                 why);
    }
    if (rc != 0)
        return;
    log_warn("this node's lease in etcd expired (etcd was away longer than %d s): granting a new one", ae->ttl);
    if (etcd_lease_grant(ae->etcd, ae->ttl, &ae->lease, why, sizeof why) < 0 || s_member(ae, why, sizeof why) < 0) {
        log_warn("etcd: %s", why);
        return;
    }
    if (ae->leader) {
        char key[256], holder[300];
        s_key(ae, key, sizeof key, "coordinator");
        int won = etcd_campaign(ae->etcd, key, ae->me, ae->lease, holder, sizeof holder, why, sizeof why);
        if (won == 0 && holder[0] && strcmp(holder, ae->me) != 0)
            ae->cb.fail(ae->cb.arg, 125, "this node lost the coordinator's key in etcd while etcd could not be "
                        "reached; another node coordinates the job now");
    }
}

/* A follower reads the coordinator's key: gone, or held by another address, the coordinator is lost. */
static void s_watch(agent_etcd_t *ae)
{
    char key[256], val[300], why[1024], text[700];
    s_key(ae, key, sizeof key, "coordinator");
    uint64_t now = loop_now_ns();
    if (now < ae->quiet_until_ns)
        return;
    int rc = etcd_get(ae->etcd, key, val, sizeof val, why, sizeof why);
    if (rc < 0) /* etcd away: the keepalive says so; the watch waits rather than hold the loop twice as often */
        ae->quiet_until_ns = now + AE_QUIET_NS;
    if (rc < 0 || (rc == 1 && strcmp(val, ae->coord) == 0))
        return;
    if (rc == 0)
        snprintf(text, sizeof text, "its key in etcd expired (its node stopped renewing its lease)");
    else
        snprintf(text, sizeof text, "etcd names another coordinator, at %s", val);
    ae->cb.lost(ae->cb.arg, text);
}

static int s_tick(loop_t *loop, int id, void *arg)
{
    agent_etcd_t *ae = arg;
    const struct opts *o = &ae->job->opt;
    uint64_t now = loop_now_ns();
    ae->timer = 0;
    if (now - ae->keepalive_ns >= (uint64_t)ae->ttl * 1000000000ull / 3)
        s_keepalive(ae, now);
    if (ae->electing && !s_campaign(ae) && now - ae->elect_ns > (uint64_t)(o->rdzv_timeout * 1e9)) {
        char why[512];
        snprintf(why, sizeof why, "no coordinator elected through etcd within --rdzv-timeout %g s", o->rdzv_timeout);
        ae->electing = 0;
        ae->cb.fail(ae->cb.arg, 125, why);
        return 0;
    } else if (!ae->electing && !ae->leader && ae->coord[0]) {
        s_watch(ae);
    }
    if (!ae->timer) /* a callback may have started an election, which arms its own */
        ae->timer = loop_timer_after_ms(loop, ae->electing ? AE_ELECT_MS : AE_WATCH_MS, s_tick, ae);
    return 0;
}

void agent_etcd_start(agent_etcd_t *ae, loop_t *loop, const struct agent_etcd_cb *cb)
{
    ae->loop = loop;
    ae->cb = *cb;
    ae->keepalive_ns = loop_now_ns();
    agent_etcd_elect(ae, "", NULL);
}

void agent_etcd_elect(agent_etcd_t *ae, const char *lost_addr, const char *why)
{
    snprintf(ae->lost, sizeof ae->lost, "%s", lost_addr);
    if (why)
        log_warn("the coordinator at %s is lost: %s; electing a new one through etcd", lost_addr, why);
    ae->electing = 1;
    ae->leader = 0;
    ae->coord[0] = '\0';
    ae->elect_ns = loop_now_ns();
    if (ae->timer > 0)
        loop_timer_cancel(ae->loop, ae->timer);
    ae->timer = 0;
    s_tick(ae->loop, 0, ae);
}

int agent_etcd_move(agent_etcd_t *ae, const char *me)
{
    char key[256], why[1024];
    s_key(ae, key, sizeof key, "coordinator");
    if (etcd_put(ae->etcd, key, me, ae->lease, why, sizeof why) < 0) {
        log_error("etcd: cannot publish the coordinator's new address %s: %s", me, why);
        return -1;
    }
    log_warn("the coordinator's port at %s was taken meanwhile: it serves at %s", ae->me, me);
    snprintf(ae->me, sizeof ae->me, "%s", me);
    snprintf(ae->coord, sizeof ae->coord, "%s", me);
    return 0;
}

void agent_etcd_silent(agent_etcd_t *ae, const char *why)
{
    if (!ae->electing && !ae->leader)
        ae->cb.lost(ae->cb.arg, why);
}

int agent_etcd_load(agent_etcd_t *ae, struct agent_etcd_state *st)
{
    char key[256], val[ETCD_MAX_VALUE], why[1024];
    memset(st, 0, sizeof *st);
    snprintf(key, sizeof key, "%smembers/", ae->prefix);
    long alive = etcd_count_prefix(ae->etcd, key, why, sizeof why);
    st->alive = alive > 0 ? (int)alive : 0;
    s_key(ae, key, sizeof key, "state");
    if (etcd_get(ae->etcd, key, val, sizeof val, why, sizeof why) != 1)
        return -1;
    json_t *j = json_loads(val, 0, NULL);
    json_int_t gen = json_integer_value(json_object_get(j, "generation"));
    json_int_t used = json_integer_value(json_object_get(j, "restarts_used"));
    json_decref(j);
    if (gen < 0 || gen > UINT32_MAX - 1 || used < 0 || used > 1000000)
        return -1;
    st->generation = (uint32_t)gen;
    st->restarts_used = (int)used;
    return 0;
}

void agent_etcd_save(agent_etcd_t *ae, uint32_t generation, int restarts_used, int nnodes)
{
    char key[256], val[512], why[1024];
    s_key(ae, key, sizeof key, "state");
    snprintf(val, sizeof val, "{\"generation\":%u,\"restarts_used\":%d,\"nnodes\":%d,\"coordinator\":\"%s\"}",
             generation, restarts_used, nnodes, ae->me);
    if (etcd_put(ae->etcd, key, val, 0, why, sizeof why) < 0)
        log_warn("etcd: the job's state of generation %u is not saved (%s): a coordinator taking over would "
                 "start from an older one", generation, why);
}

void agent_etcd_incident(agent_etcd_t *ae, uint32_t generation, const char *text)
{
    char key[256], why[1024];
    snprintf(key, sizeof key, "%sincidents/%010u", ae->prefix, generation);
    if (etcd_put(ae->etcd, key, text, 0, why, sizeof why) < 0)
        log_warn("etcd: incident of generation %u not saved: %s", generation, why);
}

void agent_etcd_finish(agent_etcd_t *ae)
{
    char why[1024];
    if (!ae)
        return;
    if (ae->leader && etcd_delete_prefix(ae->etcd, ae->prefix, why, sizeof why) < 0)
        log_warn("etcd: the job's keys under %s are left (%s); remove them with etcdctl del --prefix %s", ae->prefix,
                 why, ae->prefix);
    if (ae->lease && etcd_lease_revoke(ae->etcd, ae->lease, why, sizeof why) == 0)
        ae->lease = 0;
    ae->leader = 0;
}

void agent_etcd_destroy(agent_etcd_t **pae)
{
    if (!pae || !*pae)
        return;
    agent_etcd_t *ae = *pae;
    if (ae->timer > 0 && ae->loop)
        loop_timer_cancel(ae->loop, ae->timer);
    etcd_destroy(&ae->etcd);
    free(ae);
    *pae = NULL;
}

int agent_etcd_leader(const agent_etcd_t *ae)
{
    return ae && ae->leader;
}
