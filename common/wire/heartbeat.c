/* heartbeat: the tick, send and silence rule of heartbeats (heartbeat.h), and the HEARTBEAT message. */
#include "common/wire/heartbeat.h"

void heartbeat_init(struct heartbeat *hb, double interval_s, double timeout_s)
{
    *hb = (struct heartbeat){ .interval_ns = (uint64_t)(interval_s * 1e9), .timeout_ns = (uint64_t)(timeout_s * 1e9) };
}

long heartbeat_tick_ms(double interval_s, double timeout_s)
{
    double t = interval_s < timeout_s / 10 ? interval_s : timeout_s / 10;
    return t * 1000 < 1 ? 1 : (long)(t * 1000);
}

int heartbeat_due(struct heartbeat *hb, uint64_t now)
{
    if (now - hb->sent_ns < hb->interval_ns * 9 / 10)
        return 0;
    hb->sent_ns = now;
    hb->seq++;
    return 1;
}

int heartbeat_silent(const struct heartbeat *hb, uint64_t last_ns, uint64_t now, uint64_t limit_ns)
{
    return now - last_ns > (limit_ns ? limit_ns : hb->timeout_ns);
}

void heartbeat_msg(const struct heartbeat *hb, Plaunch__Heartbeat *body, wire_msg_t *m, const char *job_id,
                   uint32_t gen)
{
    plaunch__heartbeat__init(body);
    body->seq = hb->seq;
    body->mono_ns = hb->sent_ns;
    wire_init(m, job_id, gen, WIRE_HEARTBEAT, body);
}

uint64_t heartbeat_first_ns(long tick_ms, uint64_t now, unsigned r)
{
    uint64_t tick = (uint64_t)tick_ms * 1000000u;
    return now + r % (tick ? tick : 1);
}
