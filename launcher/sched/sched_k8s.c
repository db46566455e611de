/* sched_k8s: what a Kubernetes pod's environment says: the node rank from an Indexed Job's (or JobSet's)
 * completion index or a PyTorchJob's PET_NODE_RANK/RANK, the node count from PET_NNODES, the coordinator from
 * MASTER_ADDR/MASTER_PORT, the restart budget from PET_MAX_RESTARTS; and every pod's host name by rank, where
 * the controller's naming lets it follow from this pod's. */
#include "launcher/sched/sched_priv.h"

#include <stdlib.h>
#include <string.h>

#include "launcher/sched/sched_hostlist.h"

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
    s->naming = strcmp(rank_var, "JOB_COMPLETION_INDEX") == 0 ? SCHED_NAMING_INDEXED : SCHED_NAMING_PYTORCHJOB;
    const char *hn = sched_env(envp, "HOSTNAME");
    if (hn) /* setHostnameAsFQDN gives the whole name: its first label is the host name */
        snprintf(s->pod_host, sizeof s->pod_host, "%.*s", (int)strcspn(hn, "."), hn);
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

/* Whether name ends in tail; its length without tail in *head. */
static int s_ends(const char *name, const char *tail, size_t *head)
{
    size_t n = strlen(name), t = strlen(tail);
    *head = n > t ? n - t : 0;
    return n > t && strcmp(name + n - t, tail) == 0;
}

int sched_k8s_hosts(const struct sched *s, int rank, int nnodes, const char *master_host, char *list, size_t cap,
                    char *suffix, size_t scap, char *why, size_t whylen)
{
    char tail[40], name0[SCHED_HOSTLIST_NAME_MAX + 1], err[512] = "a name would be longer than 255 characters";
    size_t head = 0;
    int ok;
    list[0] = suffix[0] = '\0';
    if (s->kind != SCHED_K8S || rank < 0 || nnodes < 2 || !s->pod_host[0]) {
        snprintf(why, whylen, "%s", !s->pod_host[0] ? "no HOSTNAME in the pod's environment" : "one node");
        return -1;
    }
    if (s->naming == SCHED_NAMING_INDEXED) { /* <job>-<index> */
        snprintf(tail, sizeof tail, "-%d", rank);
        ok = s_ends(s->pod_host, tail, &head);
        snprintf(name0, sizeof name0, "%.*s-0", (int)head, s->pod_host);
    } else { /* <job>-master-0, <job>-worker-<rank - 1> */
        snprintf(tail, sizeof tail, rank ? "-worker-%d" : "-master-0", rank - 1);
        ok = s_ends(s->pod_host, tail, &head);
        snprintf(name0, sizeof name0, "%.*s-master-0", (int)head, s->pod_host);
    }
    if (!ok) {
        snprintf(why, whylen, "the pod's host name '%.100s' does not end in %s (node rank %d): not the %s naming",
                 s->pod_host, tail, rank, s->naming == SCHED_NAMING_INDEXED ? "Indexed Job's <job>-<index>"
                 : "PyTorchJob's <job>-master-0, <job>-worker-<rank - 1>");
        return -1;
    }
    /* Rank 0's name is the coordinator's host, up to the suffix every name shares (.SUBDOMAIN[.NAMESPACE...]). */
    size_t n0 = strlen(name0);
    if (strncmp(master_host, name0, n0) != 0 || (master_host[n0] && master_host[n0] != '.') ||
        strlen(master_host + n0) >= scap) {
        snprintf(why, whylen, "the coordinator's host '%.100s' is not rank 0's name %s[.SUBDOMAIN]", master_host,
                 name0);
        return -1;
    }
    snprintf(suffix, scap, "%s", master_host + n0);
    if (s->naming == SCHED_NAMING_INDEXED)
        ok = snprintf(list, cap, "%.*s-[0-%d]", (int)head, s->pod_host, nnodes - 1) < (int)cap;
    else
        ok = snprintf(list, cap, "%s,%.*s-worker-[0-%d]", name0, (int)head, s->pod_host, nnodes - 2) < (int)cap;
    /* the longest name, suffix included, must be a host name */
    if (!ok || head + 20 + strlen(suffix) > SCHED_HOSTLIST_NAME_MAX ||
        sched_hostlist_each(list, nnodes, NULL, NULL, err, sizeof err) != nnodes) {
        snprintf(why, whylen, "the names derived from '%.100s' are not a host list: %.200s", s->pod_host, err);
        list[0] = suffix[0] = '\0';
        return -1;
    }
    return 0;
}
