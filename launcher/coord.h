/* coord: the job-wide services the coordinator gives agents in a generation: NCCL unique ids by key and
 * barriers. Transport-free: messages come in through coord_on_msg and go out through the send callback, so the
 * same code serves an in-process agent (one node) and agents behind TLS sessions (many nodes). */
#ifndef PLAUNCH_COORD_H
#define PLAUNCH_COORD_H

#include "wire.h"

typedef struct coord coord_t;
/* Sends m to agent `peer`; returns 0 or -1 (the peer is then treated as gone for this request). */
typedef int (*coord_send_fn)(void *arg, int peer, const wire_msg_t *m);

coord_t *coord_new(const char *job_id, coord_send_fn send, void *arg);
void coord_destroy(coord_t **c);
/* Starts generation gen of world_size ranks: forgets ids, aborts barriers still waiting. */
void coord_set_generation(coord_t *c, uint32_t gen, uint32_t world_size);
/* Handles NCCL_ID_PUT, NCCL_ID_GET and BARRIER from agent `peer` (already decoded and checked). */
void coord_on_msg(coord_t *c, int peer, const wire_msg_t *m);

#endif
