/* coord_server: the coordinator's public face (coord_server.h): it builds the transport with handlers into the
 * floors above it (membership, endings), so that the transport never calls them by name. */
#include "launcher/coord/coord_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static void s_fatal(coord_server_t *cs, const char *text)
{
    coord_end_fatal(cs, "%s", text);
}

static const struct coord_events s_events = {
    .on_message = coord_world_on_message,
    .peer_lost = coord_end_peer_lost,
    .rendezvous_timeout = coord_end_rendezvous_timeout,
    .last_call = coord_assign_last_call,
    .fatal = s_fatal,
};

/* Each component sets up its own part of the coordinator, in the order they depend on each other. */
coord_server_t *coord_server_new(const struct job *job, loop_t *loop, void *zctx, const char *endpoint,
                                 tls_ctx_t *tls, const struct mon_thresh *thresh, coord_local_fn local, void *local_arg,
                                 char *err, size_t errlen)
{
    coord_server_t *cs = calloc(1, sizeof *cs);
    if (!cs) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cs->job = job;
    cs->thresh = thresh;
    cs->loop = loop;
    cs->zctx = zctx;
    cs->tls = tls;
    cs->local = local;
    cs->local_arg = local_arg;
    snprintf(cs->job_id, sizeof cs->job_id, "%s", job->node.job_id);
    cs->wait_for_more = 1;
    coord_verdict_init(&cs->verdict, job->opt.max_restarts);
    coord_verdict_no_progress(&cs->verdict, job->opt.max_no_progress);
    if (coord_peers_init(cs) < 0 || !(cs->services = coord_services_new(cs->job_id, loop, (coord_services_send_fn)coord_transport_send,
                                                            cs))) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    if (coord_transport_open(cs, endpoint, &s_events, err, errlen) < 0)
        goto error;
    if (endpoint) {
        coord_relay_init(cs);
        coord_transport_rendezvous_deadline(cs, job->opt.rdzv_timeout);
        log_info("coordinator listening on %s (%s), waiting for %d node%s", endpoint, tls ? "TLS 1.3" : "PLAINTEXT",
                 job->opt.nnodes, job->opt.nnodes == 1 ? "" : "s");
    }
    if (coord_hang_start(cs) < 0 || coord_goodput_start(cs) < 0) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    return cs;
error:;
    int e = errno;
    coord_server_destroy(&cs);
    errno = e;
    return NULL;
}

void coord_server_destroy(coord_server_t **pcs)
{
    if (!pcs || !*pcs)
        return;
    coord_server_t *cs = *pcs;
    coord_hang_destroy(cs);
    coord_goodput_free(cs);
    coord_transport_close(cs); /* every session ends first: close_notify, DROPs to relays */
    coord_relay_free(cs);
    coord_services_destroy(&cs->services);
    coord_members_free(cs);
    coord_peers_free(cs);
    coord_health_free(cs);
    free(cs);
    *pcs = NULL;
}

void coord_server_local_hello(coord_server_t *cs)
{
    coord_transport_hello(cs, 0);
}

int coord_server_local_in(coord_server_t *cs, const wire_msg_t *m, char *err, size_t errlen)
{
    return coord_mail_post_local(cs, m, err, errlen);
}

void coord_server_on_generation(coord_server_t *cs, coord_durable_fn fn, void *arg)
{
    cs->durable = fn;
    cs->durable_arg = arg;
}

void coord_server_resume(coord_server_t *cs, uint32_t generation, int restarts_used, int expect)
{
    cs->generation = generation;
    cs->resume_expect = expect;
    coord_verdict_resume(&cs->verdict, restarts_used);
}

const gp_t *coord_server_goodput(const coord_server_t *cs)
{
    return cs ? cs->gp : NULL;
}

void coord_server_stop_signal(coord_server_t *cs, int sig)
{
    char text[sizeof cs->job->node.hostname + 64];
    const char *name = sigabbrev_np(sig) ? sigabbrev_np(sig) : "?";
    if (cs->job->opt.nnodes > 1)
        snprintf(text, sizeof text, "the coordinator's plaunch on %s got SIG%s", cs->job->node.hostname, name);
    else
        snprintf(text, sizeof text, "plaunch got SIG%s", name);
    coord_verdict_fail(&cs->verdict, COORD_VERDICT_TOLD, 128 + sig, "plaunch: job %s stopped: %s\n", cs->job_id, text);
    if (cs->state != CS_DONE)
        gp_incident_open(cs->gp, loop_now_ns(), GP_CAUSE_STOP,
                         &(struct gp_cause_info){ .rank = -1, .node = -1, .exit_code = -1, .text = text });
    coord_end_stop_all(cs, PLAUNCH__STOP__REASON__SIGNAL, sig, text);
}

void coord_server_census(const coord_server_t *cs, struct coord_census *out)
{
    *out = cs->tree.census;
}
