/* joblayout: the fan-out tree of a job as a function of node rank, node count and --relay-fanout, the same on every
 * node, so that a node that knows its rank finds its relay without asking the coordinator. */
#ifndef PLAUNCH_JOBLAYOUT_H
#define PLAUNCH_JOBLAYOUT_H

/* The layout (docs/design.md, "The fan-out tree"): rank 0 is the coordinator's own node. A job of N nodes with K
 * nodes per relay (K = --relay-fanout, or ceil(sqrt(N)) for auto, which forms a tree only from
 * JOBLAYOUT_AUTO_FROM + 1 nodes on) has R = ceil((N - 1) / (K + 1)) relays when N - 1 > K, none otherwise. The
 * relays are ranks 1..R, assigned before any other node; every other rank c (R < c < N) sits behind relay
 * 1 + (c - R - 1) mod R, so relays hold N - 1 - R <= R * K nodes, at most one apart. Rank 0 and the relays talk to
 * the coordinator itself: depth 1; every other node depth 2 (<= log_K(N) + 1, since N >= K + 2 then). */

#define JOBLAYOUT_AUTO_FROM 512 /* --relay-fanout auto: a tree from this many nodes on (exclusive) */

struct joblayout {
    int nnodes;   /* N >= 1 */
    int fanout;   /* K: nodes per relay; 0 when there is no tree */
    int nrelays;  /* R: ranks 1..R relay; 0 none */
};

/* relay_fanout: -1 auto, 0 off, else K >= 1. nnodes >= 1. Always succeeds (no tree: nrelays 0). */
void joblayout_plan(struct joblayout *l, int nnodes, int relay_fanout);
/* The rank of `rank`'s relay, or -1 when it talks to the coordinator itself (rank 0, relays, no tree). */
int joblayout_parent(const struct joblayout *l, int rank);
int joblayout_is_relay(const struct joblayout *l, int rank);
/* Children of relay `rank` (0 for any other rank). */
int joblayout_children(const struct joblayout *l, int rank);
/* The sessions a relay takes before it refuses more: its share and room for nodes that reconnect or are sent to
 * it (newcomers of an elastic job), at most max (the protocol's bound). */
int joblayout_max_children(const struct joblayout *l, int max);

#endif
