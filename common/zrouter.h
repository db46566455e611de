/* zrouter: one message off a ZeroMQ ROUTER socket without blocking: the sender's routing id and one body frame. */
#ifndef PLAUNCH_ZROUTER_H
#define PLAUNCH_ZROUTER_H

#include <zmq.h>

/* Initialises rid and body (the caller closes both, whatever the result) and receives the next message into them.
 * 1: a routing id and exactly one body frame; 0: a malformed message (no body, or extra frames: drained and
 * dropped); -1: nothing is pending. */
int zrouter_recv(void *sock, zmq_msg_t *rid, zmq_msg_t *body);

#endif
