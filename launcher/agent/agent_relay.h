/* agent_relay: an agent that the coordinator asked to relay (RELAY_START): its relay (launcher/relay/) on the
 * agent's loop and address, with the agent's own credentials, its RELAY_READY, and RELAYED both ways. */
#ifndef PLAUNCH_AGENT_RELAY_H
#define PLAUNCH_AGENT_RELAY_H

#include "wire.h"

typedef struct agent agent_t;

/* RELAY_START (answered RELAY_READY) or RELAYED from the coordinator. */
void agent_relay_on_msg(agent_t *ac, const wire_msg_t *m);
/* The agent's session with the coordinator broke: every child's session ends (they go back to the coordinator). */
void agent_relay_drop(agent_t *ac, const char *why);
/* The nodes that hold a session at this relay now; 0 when it relays for nobody. */
int agent_relay_children(const agent_t *ac);
/* The agent's generation changed. */
void agent_relay_generation(agent_t *ac);
/* Ends the relay (its children's last messages may leave for 500 ms). */
void agent_relay_free(agent_t *ac);

#endif
