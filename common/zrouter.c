/* zrouter: one message off a ZeroMQ ROUTER socket without blocking: the sender's routing id and one body frame. */
#include "common/zrouter.h"

int zrouter_recv(void *sock, zmq_msg_t *rid, zmq_msg_t *body)
{
    zmq_msg_init(rid);
    zmq_msg_init(body);
    if (zmq_msg_recv(rid, sock, ZMQ_DONTWAIT) < 0)
        return -1;
    int ok = zmq_msg_more(rid) && zmq_msg_recv(body, sock, ZMQ_DONTWAIT) >= 0;
    /* A well-formed DEALER sends one frame per message: drain and drop anything beyond it. */
    while (ok && zmq_msg_more(body)) {
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        zmq_msg_recv(&extra, sock, ZMQ_DONTWAIT);
        ok = 0;
        int again = zmq_msg_more(&extra);
        zmq_msg_close(&extra);
        if (!again)
            break;
    }
    return ok;
}
