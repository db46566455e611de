/* coord_conns: the coordinator's TCP connections: the ROUTER's read loop (conn_reader: its socket monitor's accepted
 * and closed descriptors, failed ZeroMQ handshakes, accept failures) feeding conn_guard, bounded warnings about what the guard refused or
 * closed, the plaintext refusal of a client without TLS, and the short grace of a member whose connection closed
 * (an agent that died is lost at once, one that restarts its session is not). */
#include "launcher/coord/coord_priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <zmq.h>

#include "launcher/job/joblayout.h"
#include "common/log.h"

static const struct peerlog_kind PL_NOT_ZMQ = { "refused", "connection", "connections", "not ZeroMQ peers" };
static const struct peerlog_kind PL_CLOSED = { "closed", "connection", "connections",
                                               "unauthenticated, over a limit or past the deadline" };

static int s_grace_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    for (int i = 1; i < cs->npeers; i++) {
        struct peer *p = &cs->peers[i];
        if (!p->used || p->grace_timer != id)
            continue;
        p->grace_timer = 0;
        cs->ngrace--;
        if (p->reconnecting || p->sess.fd >= 0 || (p->via && !p->vclosed) || cs->state == CS_DONE)
            return 0; /* on its way back (or back): the heartbeat timeout decides */
        char why[160];
        snprintf(why, sizeof why, "its connection closed (the agent ended?) and it did not reconnect within %d ms",
                 CS_RECONNECT_GRACE_MS);
        cs->tr.ev.peer_lost(cs, i, why);
        return 0;
    }
    return 0;
}

/* A connection ended (conn_guard's callback): its session goes with it; a member gets a short grace to come back
 * on a new one. */
static void s_on_conn_end(void *arg, int fd, int tag, enum conn_state was, enum conn_why why, const char *addr)
{
    coord_server_t *cs = arg;
    static const char *const whys[] = {
        [CONN_DEADLINE] = "no TLS session within " CS_STR(CONN_AUTH_MS) " ms of connecting",
        [CONN_PER_ADDR] = "too many unauthenticated connections from its address",
        [CONN_TOTAL] = "too many unauthenticated connections",
        [CONN_HANDSHAKES] = "too many TLS handshakes under way",
        [CONN_DESCRIPTORS] = "the coordinator ran out of descriptors",
    };
    unsigned zmtp_error = 0;
    if (why == CONN_GONE && was == CONN_NEW && conn_reader_zmtp_failed(cs->tr.reader, &zmtp_error))
        peerlog_warn(cs->tr.plog, &PL_NOT_ZMQ, addr, "refused a connection from %s: not a ZeroMQ peer (ZMTP handshake "
                     "failed, error %u: random bytes or another protocol on the port)", addr, zmtp_error);
    else if (why == CONN_GONE && was == CONN_NEW)
        peerlog_warn(cs->tr.plog, &PL_NOT_ZMQ, addr, "refused a connection from %s: it ended before its first frame (not "
                     "a ZeroMQ peer, or a port scan)", addr);
    else if (why != CONN_GONE && why != CONN_REFUSAL && (was == CONN_NEW || was == CONN_PENDING))
        peerlog_warn(cs->tr.plog, &PL_CLOSED, addr, "closed a connection from %s: %s (limits: docs/security.md)", addr,
                     whys[why] ? whys[why] : "?");
    if (tag < 1 || tag >= cs->npeers || !cs->peers[tag].used || cs->peers[tag].sess.fd != fd)
        return;
    struct peer *p = &cs->peers[tag];
    if (p->st != PS_MEMBER) {
        coord_peers_release(cs, tag);
        return;
    }
    p->sess.fd = -1;
    coord_conns_grace(cs, tag);
}

void coord_conns_grace(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    if (cs->state != CS_DONE && p->grace_timer <= 0 &&
        (p->grace_timer = loop_timer_after_ms(cs->loop, CS_RECONNECT_GRACE_MS, s_grace_tick, cs)) > 0)
        cs->ngrace++;
}

/* A new connection (conn_reader's) from the address of a member in its grace: it is reconnecting, not gone. */
static void s_note_reconnect(void *arg, int fd)
{
    coord_server_t *cs = arg;
    const char *addr = conn_guard_addr(cs->tr.guard, fd);
    for (int i = 1; i < cs->npeers && cs->ngrace > 0; i++) /* none in grace: no scan on every connect */
        if (cs->peers[i].used && cs->peers[i].grace_timer > 0 && strcmp(cs->peers[i].from, addr) == 0)
            cs->peers[i].reconnecting = 1;
}

/* A descriptor per node, room for the unauthenticated ones and this process's own: the soft limit is raised as
 * far as the hard one allows (further with CAP_SYS_RESOURCE); when that is not enough, the log says so once. */
static void s_raise_fds(coord_server_t *cs)
{
    struct rlimit rl;
    int nnodes = cs->job->opt.nnodes + cs->job->opt.spares;
    rlim_t need = (rlim_t)nnodes + 2 * CONN_MAX_UNAUTH + 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return;
    rlim_t was = rl.rlim_cur, hard = rl.rlim_max;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
    if (rl.rlim_cur < need) {
        struct rlimit more = { need, need };
        if (setrlimit(RLIMIT_NOFILE, &more) == 0) {
            log_info("coordinator: descriptor limit raised from %lu to %lu for %d nodes", (unsigned long)was,
                     (unsigned long)need, nnodes);
            return;
        }
    }
    if (rl.rlim_cur > was && setrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = was;
    if (rl.rlim_cur < need)
        log_warn("coordinator: %d nodes need about %lu descriptors, but the limit is %lu (hard limit %lu, which "
                 "this process may not raise): nodes past about %lu will be refused; raise it with ulimit -n, "
                 "LimitNOFILE= or limits.conf", nnodes, (unsigned long)need, (unsigned long)rl.rlim_cur,
                 (unsigned long)hard, rl.rlim_cur > 512 + CONN_MAX_UNAUTH ? (unsigned long)(rl.rlim_cur - 512) : 0);
    else
        log_info("coordinator: descriptor limit raised from %lu to %lu for %d nodes", (unsigned long)was,
                 (unsigned long)rl.rlim_cur, nnodes);
}

int coord_conns_open(coord_server_t *cs, const struct conn_reader_ops *ops, char *err, size_t errlen)
{
    struct conn_limits lim;
    s_raise_fds(cs);
    conn_guard_limits(&lim, cs->job->opt.nnodes + cs->job->opt.spares);
    /* A ranked tree's relays (and a few that fall back) all handshake here at once, as a relay's own nodes do there:
     * a slot each, or the last of them wait in the admission queue and a relay stalled by a busy host loses its
     * slot (and its nodes their wait) */
    struct joblayout l;
    joblayout_plan(&l, cs->job->opt.nnodes + cs->job->opt.spares, cs->job->opt.relay_fanout);
    if (cs->job->opt.node_hosts[0] && l.nrelays + l.nrelays / 8 + 16 > lim.max_pending)
        lim.max_pending = l.nrelays + l.nrelays / 8 + 16;
    if (lim.max_unauth < 2 * lim.max_pending)
        lim.max_unauth = 2 * lim.max_pending;
    /* libzmq's own deadline for the ZeroMQ handshake backs up the guard's, which comes first; a backlog for every
     * node of the job (the kernel caps it at net.core.somaxconn): a full one makes a SYN wait 1 s to be retried */
    int nodes = cs->job->opt.nnodes + cs->job->opt.spares;
    int hs_ivl = lim.auth_ms + 1000, backlog = nodes > 1024 ? nodes : 1024;
    if (!(cs->tr.guard = conn_guard_new(cs->loop, &lim, s_on_conn_end, cs)) || !(cs->tr.plog = peerlog_new(cs->loop, 0))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (zmq_setsockopt(cs->tr.router, ZMQ_HANDSHAKE_IVL, &hs_ivl, sizeof hs_ivl) < 0 ||
        zmq_setsockopt(cs->tr.router, ZMQ_BACKLOG, &backlog, sizeof backlog) < 0) {
        snprintf(err, errlen, "coordinator socket: %s", zmq_strerror(errno));
        return -1;
    }
    struct conn_reader_ops with = *ops;
    with.accepted = s_note_reconnect;
    return (cs->tr.reader = conn_reader_new(cs->zctx, cs->loop, cs->tr.router, cs->tr.guard, &with, cs, err,
                                            errlen)) ? 0 : -1;
}

void coord_conns_close(coord_server_t *cs)
{
    conn_reader_destroy(&cs->tr.reader);
    for (int i = 1; cs->peers && i < cs->npeers; i++)
        if (cs->peers[i].grace_timer > 0)
            loop_timer_cancel(cs->loop, cs->peers[i].grace_timer);
    conn_guard_destroy(&cs->tr.guard);
    peerlog_destroy(&cs->tr.plog);
}
