/* coord_server: the coordinator's public face (coord_server.h): it builds the transport with handlers into the
 * floors above it (membership, endings), so that the transport never calls them by name. */
#include "coord_priv.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

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

coord_server_t *coord_server_new(const struct job *job, loop_t *loop, void *zctx, const char *endpoint,
                                 tls_ctx_t *tls, coord_local_fn local, void *local_arg, char *err, size_t errlen)
{
    coord_server_t *cs = coord_transport_new(job, loop, zctx, endpoint, tls, local, local_arg, &s_events, err,
                                             errlen);
    if (cs)
        coord_verdict_init(&cs->verdict, job->opt.max_restarts);
    if (cs && coord_hang_start(cs) < 0) {
        snprintf(err, errlen, "out of memory");
        coord_transport_destroy(&cs);
    }
    return cs;
}

void coord_server_destroy(coord_server_t **cs)
{
    if (cs && *cs)
        coord_hang_destroy(*cs);
    coord_transport_destroy(cs);
}

void coord_server_local_hello(coord_server_t *cs)
{
    coord_transport_hello(cs, 0);
}

int coord_server_local_in(coord_server_t *cs, const wire_msg_t *m, char *err, size_t errlen)
{
    return coord_mail_post_local(cs, m, err, errlen);
}

void coord_server_stop_signal(coord_server_t *cs, int sig)
{
    char text[sizeof cs->job->hostname + 64];
    const char *name = sigabbrev_np(sig) ? sigabbrev_np(sig) : "?";
    if (cs->job->opt.nnodes > 1)
        snprintf(text, sizeof text, "the coordinator's plaunch on %s got SIG%s", cs->job->hostname, name);
    else
        snprintf(text, sizeof text, "plaunch got SIG%s", name);
    coord_verdict_fail(&cs->verdict, COORD_VERDICT_TOLD, 128 + sig, "plaunch: job %s stopped: %s\n", cs->job_id, text);
    coord_end_stop_all(cs, PLAUNCH__STOP__REASON__SIGNAL, sig, text);
}
