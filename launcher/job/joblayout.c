/* joblayout: the fan-out tree of a job as a function of node rank, node count and --relay-fanout (joblayout.h has
 * the layout and why it is two levels). */
#include "launcher/job/joblayout.h"

static int s_isqrt_up(int n)
{
    int k = 1;
    while (k * k < n)
        k++;
    return k;
}

void joblayout_plan(struct joblayout *l, int nnodes, int relay_fanout)
{
    int n = nnodes < 1 ? 1 : nnodes, k = relay_fanout;
    *l = (struct joblayout){ .nnodes = n };
    if (k == 0 || (k < 0 && n <= JOBLAYOUT_AUTO_FROM))
        return;
    if (k < 0)
        k = s_isqrt_up(n);
    if (n - 1 <= k)
        return; /* the coordinator holds them all anyway */
    l->fanout = k;
    l->nrelays = (n - 1 + k) / (k + 1); /* relays and their K nodes each cover every node but the coordinator's */
}

int joblayout_parent(const struct joblayout *l, int rank)
{
    if (!l->nrelays || rank <= l->nrelays || rank >= l->nnodes)
        return -1;
    return 1 + (rank - l->nrelays - 1) % l->nrelays;
}

int joblayout_is_relay(const struct joblayout *l, int rank)
{
    return rank >= 1 && rank <= l->nrelays;
}

int joblayout_children(const struct joblayout *l, int rank)
{
    if (!joblayout_is_relay(l, rank))
        return 0;
    int others = l->nnodes - 1 - l->nrelays; /* dealt round-robin: the first (others mod R) relays get one more */
    return others / l->nrelays + (rank - 1 < others % l->nrelays);
}

int joblayout_max_children(const struct joblayout *l, int max)
{
    int k = l->fanout + l->fanout / 4 + 2;
    return k > max ? max : k;
}
