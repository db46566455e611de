/* conn_router: what a ROUTER that takes unauthenticated peers (the coordinator's, a relay's) says and hears besides
 * its sessions' messages: its socket monitor's events, the plaintext refusal of a client without TLS, and the
 * frames of a session's TLS records. */
#ifndef PLAUNCH_CONN_ROUTER_H
#define PLAUNCH_CONN_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "common/tls/tls_chan.h"

/* The next event of a socket monitor (a PAIR), without waiting: 1 and *event, *value (a descriptor, an errno), or
 * 0 when none is pending. */
int conn_router_event(void *monitor, uint16_t *event, uint32_t *value);
/* Tells routing id rid, in plaintext, that this ROUTER wants TLS (the text holds nothing secret): a plaintext agent
 * can then stop at once and say why. 0 sent, -1 not (no such peer now). */
int conn_router_refuse(void *router, const unsigned char *rid, size_t rid_len, const char *job_id, uint32_t gen,
                       const char *who);

/* Sends every pending TLS record of ch to routing id rid, one frame each (scratch: TLS_CHAN_FRAME_MAX bytes). 0, or
 * -1 with errno (EHOSTUNREACH: that connection is gone). */
int conn_router_flush(void *router, const unsigned char *rid, size_t rid_len, tls_chan_t *ch, unsigned char *scratch);

#endif
