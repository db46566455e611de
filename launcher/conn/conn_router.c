/* conn_router: what a ROUTER that takes unauthenticated peers (the coordinator's, a relay's) says and hears besides
 * its sessions' messages: its socket monitor's events, the plaintext refusal of a client without TLS, and the
 * frames of a session's TLS records. */
#include "launcher/conn/conn_router.h"

#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "common/wire/wire.h"

int conn_router_event(void *monitor, uint16_t *event, uint32_t *value)
{
    zmq_msg_t ev, addr;
    zmq_msg_init(&ev);
    if (!monitor || zmq_msg_recv(&ev, monitor, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&ev);
        return 0;
    }
    *event = 0;
    *value = 0;
    if (zmq_msg_size(&ev) >= 6) {
        memcpy(event, zmq_msg_data(&ev), 2);
        memcpy(value, (char *)zmq_msg_data(&ev) + 2, 4);
    }
    zmq_msg_init(&addr);
    if (zmq_msg_more(&ev)) /* the endpoint: not needed */
        zmq_msg_recv(&addr, monitor, 0);
    zmq_msg_close(&ev);
    zmq_msg_close(&addr);
    return 1;
}

int conn_router_refuse(void *router, const unsigned char *rid, size_t rid_len, const char *job_id, uint32_t gen,
                       const char *who)
{
    Plaunch__Refuse r;
    wire_msg_t m;
    unsigned char buf[512];
    char err[128], text[160];
    snprintf(text, sizeof text, "this %s requires TLS: start the node with the job's --token/PLAUNCH_TOKEN or "
             "--tls-dir, not --insecure", who);
    wire_refuse_init(&m, &r, job_id, gen, PLAUNCH__REFUSE__CODE__AUTH, text, 0, NULL, 0);
    ssize_t n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    if (n <= 0 || zmq_send(router, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -1;
    return zmq_send(router, buf, (size_t)n, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

int conn_router_flush(void *router, const unsigned char *rid, size_t rid_len, tls_chan_t *ch, unsigned char *scratch)
{
    size_t n;
    while (ch && rid_len && (n = tls_chan_pull(ch, scratch, TLS_CHAN_FRAME_MAX)) > 0)
        if (zmq_send(router, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
            zmq_send(router, scratch, n, ZMQ_DONTWAIT) < 0)
            return -1;
    return 0;
}
