/* agent_relay: an agent that the coordinator asked to relay (RELAY_START): its relay (launcher/relay/) on the
 * agent's loop and address, with the agent's own credentials, its RELAY_READY, and RELAYED both ways. */
#ifndef PLAUNCH_AGENT_RELAY_H
#define PLAUNCH_AGENT_RELAY_H

#include "common/wire/wire.h"

typedef struct agent agent_t;

struct link_first;

/* The ranked layout (launcher/job/joblayout.h): when this node knows its rank, the job's size and every node's host
 * (--node-rank, --node-hosts), and the job forms a tree, where its first session goes: a relay starts its relay
 * now (held until its JOIN is sent) and asks the coordinator to serve it directly; another node goes to its
 * relay. Fills *first (its strings live in ac); nothing changes otherwise. */
void agent_relay_plan(agent_t *ac, struct link_first *first);
/* The same plan again, for a new link to the coordinator (its address changed). */
void agent_relay_first(const agent_t *ac, struct link_first *first);
/* The JOIN is on its way: a relay of the ranked layout names its endpoint there (NULL: none) ... */
const char *agent_relay_join_endpoint(const agent_t *ac);
/* ... and its held children get their HELLO. */
void agent_relay_joined(agent_t *ac);
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
