/* heartbeat: the one heartbeat rule of every session end (the agent, the coordinator, a relay, the agent
 * simulator): how often the loop looks (the tick), when a heartbeat is due, when a peer is silent, the HEARTBEAT
 * message, and the jitter of many senders in one process. Pure: the caller passes its clock (loop_now_ns).
 *
 * The rule
 *   tick    min(interval, timeout / 10), at least 1 ms: a silence is seen within a tenth of the timeout after it
 *           passes, and a heartbeat leaves within one tick of its time.
 *   send    once 9/10 of the interval passed since the last one (a tick that comes a little early still sends:
 *           heartbeats keep the interval, not interval + tick).
 *   silent  nothing heard for more than the timeout (or a longer limit the caller gives, e.g. a node that has not
 *           had its ASSIGN yet).
 *   jitter  many senders in one process (the simulator) start their ticks at random phases of one tick. */
#ifndef PLAUNCH_HEARTBEAT_H
#define PLAUNCH_HEARTBEAT_H

#include <stdint.h>

#include "common/wire/wire.h"

struct heartbeat {
    uint64_t interval_ns, timeout_ns;
    uint64_t sent_ns; /* the last one sent (0: none yet) */
    uint64_t seq;     /* its number (HEARTBEAT.seq) */
};

/* interval and timeout in seconds (timeout > interval > 0, checked by the caller). */
void heartbeat_init(struct heartbeat *hb, double interval_s, double timeout_s);
/* The tick of that interval and timeout, in ms (the rule above). */
long heartbeat_tick_ms(double interval_s, double timeout_s);
/* 1 when a heartbeat is due at now; it is then counted as sent (hb->seq its number, heartbeat_msg builds it). */
int heartbeat_due(struct heartbeat *hb, uint64_t now);
/* 1 when a peer last heard at last_ns is silent at now: more than limit_ns ago (0: the timeout). */
int heartbeat_silent(const struct heartbeat *hb, uint64_t last_ns, uint64_t now, uint64_t limit_ns);
/* The last heartbeat due, for job_id's generation gen: *body and *m in the caller's storage (wire_init's rules). */
void heartbeat_msg(const struct heartbeat *hb, Plaunch__Heartbeat *body, wire_msg_t *m, const char *job_id,
                   uint32_t gen);
/* A sender's first tick: at now plus a phase within one tick (r: a random number), so that many senders in one
 * process spread over the tick. */
uint64_t heartbeat_first_ns(long tick_ms, uint64_t now, unsigned r);

#endif
