/* coord_services: the job-wide services the coordinator gives agents in a generation: NCCL unique ids by key and
 * barriers. Transport-free: messages come in through coord_services_on_msg and go out through the send callback, so the
 * same code serves an in-process agent (one node) and agents behind TLS sessions (many nodes). */
#ifndef PLAUNCH_COORD_SERVICES_H
#define PLAUNCH_COORD_SERVICES_H

#include "common/loop.h"
#include "common/wire/wire.h"

#define COORD_MAX_KEYS 1024     /* NCCL id keys per generation; a program making more communicators is refused */
#define COORD_MAX_BARRIERS 1024 /* barrier instances open at once, those that timed out included */

typedef struct coord coord_services_t;
/* Sends m to agent `peer`; returns 0 or -1 (the peer is then treated as gone for this request). */
typedef int (*coord_services_send_fn)(void *arg, int peer, const wire_msg_t *m);

/* Barrier deadlines are timers of loop (NULL: barriers never time out, for tests without a loop). */
coord_services_t *coord_services_new(const char *job_id, loop_t *loop, coord_services_send_fn send, void *arg);
void coord_services_destroy(coord_services_t **c);
/* Starts generation gen of world_size ranks: forgets ids, aborts barriers still waiting. */
void coord_services_set_generation(coord_services_t *c, uint32_t gen, uint32_t world_size);
/* Handles NCCL_ID_PUT, NCCL_ID_GET and BARRIER from agent `peer` (already decoded and checked). A refusal goes
 * back as REFUSE naming the request (type, key, rank); a barrier is over when every rank arrived (OK), when the
 * timeout of a rank that arrived runs out (TIMEOUT, also for every rank that arrives at it later), or when the
 * generation ends (ABORTED). */
void coord_services_on_msg(coord_services_t *c, int peer, const wire_msg_t *m);

#endif
