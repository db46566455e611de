/* topo: where each worker of this node runs: the CPUs and NUMA nodes its GPU's PCI locality asks for (hwloc), an
 * even split for CPU workers and GPUs without locality, or the user's list; computed once, applied by the spawn. */
#ifndef PLAUNCH_TOPO_H
#define PLAUNCH_TOPO_H

#include <sched.h>
#include <stddef.h>

/* The binding modes: one option surface, two spellings (--cpu-bind, torchrun's --numa-binding). */
enum topo_mode {
    TOPO_AUTO,         /* default: NODE where the machine has several NUMA nodes and the launcher is not bound */
    TOPO_NONE,         /* --cpu-bind none */
    TOPO_NODE,         /* --numa-binding node, --cpu-bind numa: every CPU of the GPU's NUMA node */
    TOPO_SOCKET,       /* --numa-binding socket: every CPU of the GPU's socket */
    TOPO_EXCLUSIVE,    /* --numa-binding exclusive, --cpu-bind cores: the node's cores split between its GPUs */
    TOPO_CORE_COMPLEX, /* --numa-binding core-complex: one last-level cache's cores per GPU */
    TOPO_LIST,         /* --cpu-bind list:CPUS:CPUS:...: local rank i on the i-th list (modulo their count) */
};

#define TOPO_NODE_WORDS 4 /* NUMA nodes 0..255 in a memory policy */

struct topo_bind {
    int local_rank;
    char gpu[64];              /* the CUDA_VISIBLE_DEVICES entry; "" for a CPU worker */
    char busid[32];            /* its PCI bus id, "" when unknown */
    char numa[64];             /* NUMA nodes of its CPUs, "0" or "0-1", "-" unknown */
    cpu_set_t cpus;            /* where it runs */
    int ncpus, ncores;
    unsigned long nodes[TOPO_NODE_WORDS]; /* memory policy: preferred nodes (os indexes), none when all zero */
    int apply;                 /* 1: the spawn sets cpus (and nodes) before exec */
    char why[128];             /* "GPU locality", "even split", "user mask", ... */
};

struct topo_plan {
    int n;
    struct topo_bind *w;
    int mode;                  /* enum topo_mode as asked */
    int active;                /* some worker is bound */
    int numa_nodes;            /* NUMA nodes of the machine (1 when hwloc was not needed to say so) */
    char note[256];            /* one sentence on the plan as a whole */
};

struct topo_input {
    int mode;
    const char *list;          /* TOPO_LIST: "CPUS:CPUS:..." */
    int n;                     /* workers of this node */
    const char (*gpus)[64];    /* their GPU entries, or NULL for CPU workers */
    const cpu_set_t *allowed;  /* the CPUs the launcher may use; NULL: its own affinity (or, for a topology that is
                                * not this machine's, HWLOC_XMLFILE/HWLOC_SYNTHETIC, the topology's) */
    int mem_bound;             /* the launcher has a memory policy of its own (numactl --membind) */
};

/* Parses a --cpu-bind (torch 0) or --numa-binding (torch 1) value into *mode; 0, or -1 with a sentence. */
int topo_mode_parse(const char *val, int torch, int *mode, char *err, size_t errlen);
/* The mode's name as plaunch's --cpu-bind spells it ("numa", "cores", ...). */
const char *topo_mode_name(int mode);

/* Computes the plan (hwloc's topology, loaded only when the mode needs it). 0, or -1 with a sentence (a list that
 * names no CPU the launcher may use, a topology hwloc cannot read). */
int topo_plan_build(const struct topo_input *in, struct topo_plan *plan, char *err, size_t errlen);
void topo_plan_free(struct topo_plan *plan);
/* One line of the plan: "rank R: GPU 3 (0000:4e:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (numa)";
 * rank < 0 (not known yet: multi-node before the coordinator's ASSIGN) names the local rank. */
void topo_plan_line(const struct topo_plan *plan, int i, int rank, char *buf, size_t cap);

/* CPU lists as Linux writes them ("0-3,8"): parse (each CPU < CPU_SETSIZE) and format. */
int topo_cpus_parse(const char *s, size_t len, cpu_set_t *set);
void topo_cpus_format(const cpu_set_t *set, char *buf, size_t cap);
/* The CPUs of the cpu list file path (/sys/devices/system/cpu/online); -1 when unreadable. */
int topo_cpus_read(const char *path, cpu_set_t *set);

#endif
