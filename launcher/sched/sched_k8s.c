/* sched_k8s: what a Kubernetes pod's environment says: the node rank from an Indexed Job's (or JobSet's)
 * completion index or a PyTorchJob's PET_NODE_RANK/RANK, the node count from PET_NNODES, the coordinator from
 * MASTER_ADDR/MASTER_PORT, the restart budget from PET_MAX_RESTARTS. */
#include "launcher/sched/sched_priv.h"

#include <stdlib.h>
#include <string.h>

int sched_k8s_read(char **envp, int forced, struct sched *s, char *err, size_t errlen)
{
    static const char *const ranks[] = { "JOB_COMPLETION_INDEX", "PET_NODE_RANK", "RANK", NULL };
    static const char *const addrs[] = { "PET_MASTER_ADDR", "MASTER_ADDR", NULL };
    static const char *const ports[] = { "PET_MASTER_PORT", "MASTER_PORT", NULL };
    const char *rank_var = NULL, *addr_var = NULL, *port_var = NULL;
    const char *rank = sched_first_of(envp, ranks, &rank_var);
    int in_pod = sched_env(envp, "KUBERNETES_SERVICE_HOST") != NULL;
    /* RANK alone is what any torch launcher sets: only a pod's PET_* or its completion index make it a job's. */
    int ours = in_pod && (sched_env(envp, "JOB_COMPLETION_INDEX") || sched_env(envp, "PET_NODE_RANK") ||
                          sched_env(envp, "PET_NNODES"));
    if (!forced && !ours)
        return 0;
    if (!rank) {
        snprintf(err, errlen, "--scheduler k8s: no node rank in the environment: run plaunch in a pod of an Indexed "
                 "Job or JobSet (JOB_COMPLETION_INDEX) or of a PyTorchJob (PET_NODE_RANK or RANK), or give "
                 "--node-rank with --scheduler none");
        return -1;
    }
    long r = sched_num(rank);
    if (r < 0) {
        snprintf(err, errlen, "Kubernetes: %s='%.60s' is not a node rank (a whole number from 0)", rank_var, rank);
        return -1;
    }
    s->kind = SCHED_K8S;
    s->node_index = (int)r;
    snprintf(s->what, sizeof s->what, "Kubernetes pod%s%.100s, %s=%ld", sched_env(envp, "HOSTNAME") ? " " : "",
             sched_env(envp, "HOSTNAME") ? sched_env(envp, "HOSTNAME") : "", rank_var, r);
    const char *nn = sched_env(envp, "PET_NNODES"), *addr = sched_first_of(envp, addrs, &addr_var);
    const char *port = sched_first_of(envp, ports, &port_var), *restarts = sched_env(envp, "PET_MAX_RESTARTS");
    if (nn)
        sched_put(s, "nnodes", nn, "Kubernetes: PET_NNODES=%.60s", nn);
    sched_put(s, "node-rank", rank, "Kubernetes: %s=%.60s", rank_var, rank);
    if (addr)
        sched_put(s, "master-addr", addr, "Kubernetes: %s=%.120s", addr_var, addr);
    if (addr && port)
        sched_put(s, "master-port", port, "Kubernetes: %s=%.20s", port_var, port);
    if (restarts)
        sched_put(s, "max-restarts", restarts, "Kubernetes: PET_MAX_RESTARTS=%.20s", restarts);
    return 1;
}
