/* coord_hang: the hang watch and the job's health (coord_hang.c, coord_health.c; below coord_world.c).
 * Private to launcher/coord/. */
#ifndef PLAUNCH_COORD_HANG_H
#define PLAUNCH_COORD_HANG_H

#include "coord_server.h"
#include "mon_diag.h"
#include "wire.h"

/* coord_health.c: the job's health (below coord_world.c and coord_end.c; calls only launcher/monitor/) */
/* Every rank's health summary as its node last sent it (REPORT "health"), by global rank. */
struct coord_health {
    struct mon_rank_summary *sum;
    int n, cap;
    int *at, nat;               /* by rank: its place in sum + 1, 0 none */
    int bad;                    /* reports refused (the first few are logged) */
};
/* A node's REPORT "health": its ranks' summaries, decoded with every bound checked, replacing earlier ones of
 * the same ranks. 0, or -1 (logged, the report dropped). */
int coord_health_add(coord_server_t *cs, int peer, const Plaunch__Report *r);
/* The Health block of the whole job into buf ("" when no sample came); 1 when it is worth the terminal (a
 * finding, or enough steady state to call the job healthy), 0 when plaunch.log is enough. */
int coord_health_block(coord_server_t *cs, char *buf, size_t cap);
void coord_health_free(coord_server_t *cs);

/* coord_hang.c: the hang watch (below coord_world.c; calls coord_end.c, coord_transport.c and hang_report.c) */
/* Starts the watch (nothing with --hang-timeout 0). 0, or -1 (out of memory). */
int coord_hang_start(coord_server_t *cs);
void coord_hang_destroy(coord_server_t *cs);
/* A node's REPORT "progress": [rank, step, output age ms, step age ms] per rank, every bound checked. */
int coord_hang_progress(coord_server_t *cs, int peer, const Plaunch__Report *r);
/* Did the running generation step? 1: a rank reported a step beyond the best of the generations before (*best);
 * 0: steps are reported, none beyond; -1: the job reports no steps (or the watch is off). */
int coord_hang_stepped(coord_server_t *cs, long long *best);
/* A node's REPORT "stacks" (one rank) or "stacks-done" (all of that node's ranks sent), while stacks are taken. */
int coord_hang_stacks(coord_server_t *cs, int peer, const Plaunch__Report *r);

#endif
