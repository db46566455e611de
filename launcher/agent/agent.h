/* agent: the node agent of every job: joins the coordinator (remote over TLS, or in process on the
 * coordinator's node), starts the generations it is assigned, reports failures, obeys STOP and BYE. */
#ifndef PLAUNCH_AGENT_H
#define PLAUNCH_AGENT_H

#include "launcher/job/job.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"
#include "launcher/supervisor/supervise.h"

typedef struct agent agent_t;

/* Resolves --master, decides whether this node hosts the coordinator, picks the advertised address and the
 * credentials. retry_hint is the command line other nodes should run (printed with a fresh token).
 * NULL + message in err (the caller exits 2). */
agent_t *agent_new(struct job *job, const struct mon_thresh *thresh, const char *retry_hint, char *err,
                   size_t errlen);
void agent_ctl(agent_t *ac, struct sup_ctl *ctl);
/* The loop exists (main's) and the supervisor is registered in it: the agent registers its sockets and timers
 * and starts joining. 0, or -1 after a message (the run ends with 125). */
int agent_start(agent_t *ac, sup_t *s, loop_t *loop);
/* After the loop and supervise_end: takes the agent's handlers out of the loop and closes what it opened. */
void agent_stop(agent_t *ac);
void agent_destroy(agent_t **ac);
/* The GPU memory wait of the last restart (generation, start, length, what held the GPUs: for the incident
 * timeline; pf_gpuwait_seconds gives its length), NULL when no restart waited. */
struct pf_gpuwait;
const struct pf_gpuwait *agent_gpuwait_last(const agent_t *ac);

#endif
