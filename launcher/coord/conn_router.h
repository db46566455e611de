/* conn_router: what a ROUTER that takes unauthenticated peers (the coordinator's, a relay's) says and hears before
 * any session: its socket monitor's events, and the plaintext refusal of a client without TLS. */
#ifndef PLAUNCH_CONN_ROUTER_H
#define PLAUNCH_CONN_ROUTER_H

#include <stddef.h>
#include <stdint.h>

/* The next event of a socket monitor (a PAIR), without waiting: 1 and *event, *value (a descriptor, an errno), or
 * 0 when none is pending. */
int conn_router_event(void *monitor, uint16_t *event, uint32_t *value);
/* Tells routing id rid, in plaintext, that this ROUTER wants TLS (the text holds nothing secret): a plaintext agent
 * can then stop at once and say why. 0 sent, -1 not (no such peer now). */
int conn_router_refuse(void *router, const unsigned char *rid, size_t rid_len, const char *job_id, uint32_t gen,
                       const char *who);

#endif
