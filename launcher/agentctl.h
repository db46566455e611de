/* agentctl: a node agent of a multi-node job: joins the coordinator (remote over TLS, or in process on the
 * coordinator's node), starts the generations it is assigned, reports failures, obeys STOP and BYE. */
#ifndef PLAUNCH_AGENTCTL_H
#define PLAUNCH_AGENTCTL_H

#include "job.h"
#include "supervise.h"

typedef struct agentctl agentctl_t;

/* Resolves --master, decides whether this node hosts the coordinator, picks the advertised address and the
 * credentials. retry_hint is the command line other nodes should run (printed with a fresh token).
 * NULL + message in err (the caller exits 2). */
agentctl_t *agentctl_new(struct job *job, const char *retry_hint, char *err, size_t errlen);
void agentctl_ctl(agentctl_t *ac, struct sup_ctl *ctl);
void agentctl_destroy(agentctl_t **ac);

#endif
