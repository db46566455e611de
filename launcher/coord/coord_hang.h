/* coord_hang: the hang watch and the job's health (coord_hang.c, coord_health.c; below coord_world.c).
 * Private to launcher/coord/. */
#ifndef PLAUNCH_COORD_HANG_H
#define PLAUNCH_COORD_HANG_H

#include "launcher/coord/coord_server.h"
#include "launcher/goodput/goodput.h"
#include "launcher/monitor/diagnosis/mon_diag.h"
#include "common/wire/wire.h"

/* coord_health.c: the job's health (below coord_world.c and coord_end.c; calls only launcher/monitor/) */
/* Every rank's health summary as its node last sent it (REPORT HEALTH), by global rank. */
struct coord_health {
    struct mon_rank_summary *sum;
    int n, cap;
    int *at, nat;               /* by rank: its place in sum + 1, 0 none */
    int bad;                    /* reports refused (the first few are logged) */
    /* the nodes' preflight findings from their JOIN (the latest of each host), for the block's first lines */
    struct coord_pf *pf;
    int npf, pf_lost;           /* nodes kept (at most COORD_PF_NODES), nodes with findings beyond them */
};
#define COORD_PF_NODES 64
struct coord_pf {
    char host[WIRE_MAX_HOST + 1];
    int n;
    char *lines;                /* n NUL-terminated lines, as the node sent them (escaped when shown) */
};
/* A JOIN's preflight findings, replacing those its host sent before. */
void coord_health_preflight(coord_server_t *cs, const char *host, const Plaunch__Join *j);
/* A node's REPORT HEALTH: its ranks' summaries, decoded with every bound checked, replacing earlier ones of the
 * same ranks. 0, or -1 (logged, the report dropped). */
int coord_health_add(coord_server_t *cs, int peer, const Plaunch__Health *r);
/* The Health block of the whole job into buf ("" when no sample came); 1 when it is worth the terminal (a
 * finding, or enough steady state to call the job healthy), 0 when plaunch.log is enough. */
int coord_health_block(coord_server_t *cs, char *buf, size_t cap);
void coord_health_free(coord_server_t *cs);
/* The goodput model (cs->gp), its ledger and status.json once a second. 0, or -1 (out of memory). */
int coord_goodput_start(coord_server_t *cs);
void coord_goodput_free(coord_server_t *cs);
/* A node's REPORT NODE_STATE: its workers' start and first output ages, its ranks' GPU figures. 0, or -1 (logged). */
int coord_goodput_node(coord_server_t *cs, int peer, uint32_t generation, const Plaunch__NodeState *ns);
/* The job is over (status): the model's end, the ledger's last lines, the last status.json, the Goodput block. */
void coord_goodput_finish(coord_server_t *cs, int status);

/* coord_hang.c: the hang watch (below coord_world.c; calls coord_end.c, coord_transport.c and hang_report.c) */
/* Starts the watch (nothing with --hang-timeout 0). 0, or -1 (out of memory). */
int coord_hang_start(coord_server_t *cs);
void coord_hang_destroy(coord_server_t *cs);
/* A node's REPORT PROGRESS of that generation (the envelope's; bounds checked by the wire layer): where its ranks
 * are. 0, or -1 (a rank not of this job: logged, dropped). */
int coord_hang_progress(coord_server_t *cs, int peer, uint32_t generation, const Plaunch__Progress *r);
/* A node's REPORT STACKS (one rank) and STACKS_DONE (all of that node's ranks sent), while stacks are taken. */
int coord_hang_stacks(coord_server_t *cs, int peer, const Plaunch__Stacks *r);
int coord_hang_stacks_done(coord_server_t *cs, int peer, const Plaunch__StacksDone *r);
/* Did the running generation step? 1: a rank reported a step beyond the best of the generations before (*best);
 * 0: steps are reported, none beyond; -1: the job reports no steps (or the watch is off). */
int coord_hang_stepped(coord_server_t *cs, long long *best);

#endif
