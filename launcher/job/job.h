/* job: what one node's launcher knows about the job: the options, the node's environment, the current generation
 * and the workers, each part with its one writer (below; docs/design.md, "Who writes what"). */
#ifndef PLAUNCH_JOB_H
#define PLAUNCH_JOB_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/loop.h"
#include "launcher/opts/opts.h"
#include "launcher/topo/topo.h"
#include "launcher/topo/topo.h"

enum worker_state { W_IDLE, W_RUNNING, W_EXITED };

/* A partial line of a --tee rank waiting for its newline. */
struct linebuf {
    char *buf;
    size_t len, cap;
};

#define JOB_TEE_OUT 1 /* struct worker's tee: the console shows its stdout (torchrun's --tee 1) */
#define JOB_TEE_ERR 2 /* ... its stderr (--tee 2) */

/* One worker slot of this node. Who writes: local_rank and gpu, jobworkers (once); rank, the agent with the
 * generation (struct job_gen); tee, jobsetup_tee; everything from state on, the supervisor alone (its run-time
 * state: others only read it). */
struct worker {
    int local_rank;
    int rank;                  /* global rank in the current generation */
    char gpu[64];              /* entry of CUDA_VISIBLE_DEVICES this worker uses; "" for CPU */
    /* ---- the supervisor's ---- */
    enum worker_state state;
    pid_t pid;
    int out_fd;                /* read end of the worker's stdout pipe (and stderr's when err_fd < 0); -1 closed */
    int err_fd;                /* read end of its stderr pipe: a worker the console shows has two; else -1 */
    int exec_fd;               /* close-on-exec pipe: errno of a failed exec, EOF when exec worked */
    int log_fd;                /* LOG_DIR/workerlog.<rank>, O_APPEND */
    int tee;                   /* what the console shows of it: JOB_TEE_OUT | JOB_TEE_ERR (jobsetup_tee) */
    struct linebuf line, eline; /* partial console lines of its stdout and its stderr */
    uint64_t start_ns, exit_ns;
    uint64_t out_ns;           /* when it last wrote output (the output pump woke for it); start_ns before */
    uint64_t first_out_ns;     /* when it first wrote output since its start; below start_ns: not yet */
    int status;                /* wait status */
    int exec_errno;            /* non-zero when exec failed */
    off_t gen_log_start;       /* offset of this generation's marker in log_fd */
    /* output.c: a full or failing log file system */
    uint64_t log_lost;         /* bytes of output the log lost, all generations */
    uint64_t gen_lost;         /* of which in this generation */
    uint64_t log_gap;          /* lost since the last write that worked: a gap marker is owed */
    off_t resume_at;           /* where the log goes on after this generation's last gap */
    int log_errno;             /* why the last write failed */
    int no_splice;             /* the log's file system refuses splice(2): read and write instead */
};

/* What one generation is: the node's ranks, the world, the ports and addresses its workers meet at. One writer:
 * the agent, from each ASSIGN (on one node too, where the in-process coordinator sends it, and where the agent
 * then picks the ports: jobsetup_pick_ports); jobsetup only sets the one-node defaults before the first. The
 * supervisor, the monitor and the hang watch read it. */
struct job_gen {
    int generation;
    int nnodes, node_rank, rank_base, world_size; /* node_rank < 0: no ASSIGN yet */
    char master_addr[256];     /* MASTER_ADDR: the address of node rank 0 */
    int master_port;
    char socket_ifname[64];    /* multi-node: the interface that routes to MASTER_ADDR (GLOO/NCCL_SOCKET_IFNAME) */
    int *endpoint_ports;       /* one per worker of this node */
    char *endpoints;           /* PADDLE_TRAINER_ENDPOINTS of the generation; NULL when the ASSIGN had no tables */
};

/* The node's environment: written once by jobsetup (and the base environment by wenv_init), before any part
 * starts; read-only after. */
struct job_node {
    char hostname[256];
    char host_addr[256];       /* this node's address for workers (PADDLE_CURRENT_ENDPOINT) */
    int multi;                 /* multi-node: ranks and ports come from the coordinator */
    char job_id[65];
    char log_dir[PATH_MAX];    /* absolute */
    char node_label[256];      /* this node's name in file names and reports (Slurm's node name, else the host) */
    char log_name[300];        /* this node's launcher log in log_dir: plaunch.log, plaunch.NODE.log (multi-node) */
    char run_dir[PATH_MAX];    /* 0700 directory for sockets; removed at exit */
    char agent_endpoint[PATH_MAX + 32]; /* PLAUNCH_AGENT */
    int gpu_mode;
    int gpu_inherit;           /* --nproc-per-node on a GPU node: CUDA_VISIBLE_DEVICES as inherited, worker i on
                                * its i-th entry (FLAGS_selected_gpus = i), as torchrun and Paddle do */
    int gpus_visible;          /* GPUs the inherited list (or the driver) shows, for gpu_inherit */
    int set_device_order;      /* CUDA_DEVICE_ORDER=PCI_BUS_ID: plaunch numbered the GPUs (no inherited list) */
    int nworkers;              /* on this node */
    char *visible_devices;     /* CUDA_VISIBLE_DEVICES of this node's workers; NULL for CPU */
    char **base_env;           /* the inherited environment minus the variables plaunch sets (job_base_env) */
    int base_has_omp;          /* OMP_NUM_THREADS was set by the user */
    struct topo_plan bind;     /* where each worker runs (jobsetup, once); bind.w[i] is workers[i]'s */
};

/* One node's job, in three parts with one writer each, and the workers. */
struct job {
    const struct opts opt;     /* what the user asked: set by jobsetup_init from the parsed options, then read-only */
    struct job_node node;      /* the node's environment */
    struct job_gen gen;        /* the current generation */
    /* The node's workers (node.nworkers): which slot and GPU each is (jobworkers), its rank in the generation (the
     * agent, with gen), and its run-time state (pid, pipes, logs, status: the supervisor's alone). */
    struct worker *workers;
};

/* The environment every process plaunch starts inherits (the user's, without the variables plaunch sets); never
 * NULL (an empty one before wenv_init). */
static inline char *const *job_base_env(const struct job *job)
{
    static char *const none[] = { NULL };
    return job->node.base_env ? job->node.base_env : none;
}

#endif
