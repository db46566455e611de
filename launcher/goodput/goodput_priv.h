/* goodput_priv: the model's state (struct goodput), shared by goodput.c (recording), goodput_sum.c (reading),
 * goodput_out.c (ledger, block) and goodput_status.c (status.json). Not for other modules. */
#ifndef PLAUNCH_GOODPUT_PRIV_H
#define PLAUNCH_GOODPUT_PRIV_H

#include "launcher/goodput/goodput.h"

#include <limits.h>

#define GP_MAX_NODES 65536 /* WIRE_MAX_NODES */
#define GP_MAX_RANKS 65536 /* WIRE_MAX_WORLD */

struct gp_node_x {
    struct gp_node n;
    int started, progressed;   /* this generation: its workers all started; one wrote or reported a step */
    double started_t;
};

struct gp_rank_x {
    struct gp_rank r;
    double rate_t0;            /* the step rate counts from this report (-1 none) */
    long long rate_s0;
};

struct goodput {
    char job_id[65];
    uint64_t start_ns;
    int64_t start_unix_ms;
    struct gp_incident *inc;
    int ninc, cap_inc;
    int open;                  /* the incident not yet at its first progress, or -1 */
    int ntotal;                /* incidents, the ones not kept included */
    int count[GP_NCAUSES];
    struct gp_gen *gens;
    int ngens, cap_gens;
    unsigned restarts;
    struct gp_node_x *nodes;   /* by node rank */
    int nnodes, cap_nodes;
    struct gp_rank_x *ranks;   /* by rank */
    int nranks, cap_ranks;
    uint32_t generation;
    int world;
    int steps_reported;
    double end_t;              /* the job's end, -1 running */
    int exit_status;
    /* a model read back (status.json, the ledger): its account as written, its times from frozen_now */
    int frozen;
    double frozen_now;
    struct gp_summary fsum;
    int nodes_more, ranks_more; /* status.json: nodes and ranks it did not list */
    /* goodput_spares.c: the spares standing by (listed, counted by state) and the last swaps */
    struct gp_spare *spares;   /* GP_STATUS_SPARES, made on first use */
    int nspares, spares_in[GP_NSPARE_STATES];
    struct gp_swap *swaps;     /* GP_STATUS_SWAPS, oldest first */
    int nswaps, swaps_total;
    /* goodput_out.c: the ledger */
    int ledger_fd;
    int ledger_written;        /* incidents written, in order */
    int summary_written;
    char ledger_path[PATH_MAX + 32];
    /* goodput_status.c */
    uint64_t status_ns;
    int status_any;
};

/* goodput.c */
/* The entry of rank (made, with every field unknown, when new); NULL past GP_MAX_RANKS or out of memory. */
struct gp_rank_x *gp_rank_get(gp_t *g, int rank);
void *gp_grow(void *p, int *cap, int need, size_t size);
/* src on one line (newlines and tabs as spaces), cut to cap. */
void gp_oneline(char *dst, size_t cap, const char *src);
/* goodput_spares.c: the spares and swaps as status.json's fields "spares", "spares_standby",
 * "spares_swapped_out", "swaps", "swaps_total" (added to o). */
struct json_t;
void gp_spares_json(const gp_t *g, struct json_t *o);

#endif
