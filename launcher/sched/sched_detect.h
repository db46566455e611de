/* sched_detect: what a cluster scheduler's environment says about the job (Slurm step, Kubernetes pod), as option
 * values with their sources, for the option layer to apply where the user gave none. Calls only libc and the
 * hostlist parser below it. */
#ifndef PLAUNCH_SCHED_DETECT_H
#define PLAUNCH_SCHED_DETECT_H

#include <stddef.h>

enum sched_kind { SCHED_NONE, SCHED_SLURM, SCHED_K8S };
/* How a Kubernetes pod's host name follows from its rank: an Indexed Job's or JobSet's <job>-<index>, a
 * PyTorchJob's <job>-master-0 (rank 0) and <job>-worker-<rank - 1>. */
enum sched_naming { SCHED_NAMING_NONE, SCHED_NAMING_INDEXED, SCHED_NAMING_PYTORCHJOB };

#define SCHED_MAX_SETTINGS 12
#define SCHED_VALUE_MAX 300
#define SCHED_ORIGIN_MAX 200

/* One option value: name as in the option table, the value, and where it came from ("Slurm: SLURM_NODEID=1"). */
struct sched_setting {
    const char *name;
    char value[SCHED_VALUE_MAX];
    char origin[SCHED_ORIGIN_MAX];
};

struct sched {
    enum sched_kind kind;
    int srun;                       /* Slurm, outside a step: the caller starts one plaunch per node through srun */
    int node_index;                 /* this node's place in the scheduler's list (0 hosts the coordinator); -1 */
    char what[300];                 /* "Slurm job 12, step 0 (SLURM_JOB_ID, SLURM_STEP_ID)" */
    char node_name[256];            /* SLURMD_NODENAME; "" where the host name is the node's name */
    char pod_host[256];             /* Kubernetes: the pod's host name (HOSTNAME up to its first '.'), or "" */
    enum sched_naming naming;       /* Kubernetes: how the pods' host names follow from their ranks */
    char gpu_scope[1024];           /* the step's GPUs when CUDA_VISIBLE_DEVICES is unset ("" = none known) */
    char gpu_scope_origin[SCHED_ORIGIN_MAX];
    int has_gpus;                   /* the step was given GPUs (CUDA_VISIBLE_DEVICES or gpu_scope) */
    char note[600];                 /* one line for the user ("" = none): a batch script of a multi-node job, ... */
    int nsettings;
    struct sched_setting settings[SCHED_MAX_SETTINGS];
};

/* Reads envp for mode "auto", "none", "slurm" or "k8s" into *s (kind SCHED_NONE when nothing applies). 0, or
 * -1 with a message naming the variable and the fix (the caller exits 2): more than one task on a node, a
 * forced scheduler whose variables are missing, a node list that does not parse. */
int sched_detect(const char *mode, char **envp, struct sched *s, char *err, size_t errlen);

/* The scheduler's setting for option name, or NULL. */
const struct sched_setting *sched_detect_get(const struct sched *s, const char *name);

/* Kubernetes: every pod's host name by rank, derived from this pod's (s->pod_host, rank) and the coordinator's
 * host, which is rank 0's name and gives the suffix every name carries (".SUBDOMAIN", the headless Service's).
 * A Slurm host list cannot carry a suffix after a bracket group (scontrol refuses "a[0-3].b"), so the names
 * come as a host list of the bare names into list ("train-[0-7]"; a PyTorchJob "pt-master-0,pt-worker-[0-6]")
 * and the suffix apart (".train", or ""). 0, or -1 with one line in why saying what does not fit the naming. */
int sched_k8s_hosts(const struct sched *s, int rank, int nnodes, const char *master_host, char *list, size_t cap,
                    char *suffix, size_t scap, char *why, size_t whylen);

#endif
