/* job: what one node's launcher knows about the job and its workers; owned by the supervisor. */
#ifndef PLAUNCH_JOB_H
#define PLAUNCH_JOB_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"
#include "opts.h"

enum worker_state { W_IDLE, W_RUNNING, W_EXITED };

/* A partial line of a --tee rank waiting for its newline. */
struct linebuf {
    char *buf;
    size_t len, cap;
};

#define JOB_TEE_OUT 1 /* struct worker's tee: the console shows its stdout (torchrun's --tee 1) */
#define JOB_TEE_ERR 2 /* ... its stderr (--tee 2) */

struct worker {
    int local_rank;
    int rank;                  /* global rank in the current generation */
    char gpu[64];              /* entry of CUDA_VISIBLE_DEVICES this worker uses; "" for CPU */
    enum worker_state state;
    pid_t pid;
    int out_fd;                /* read end of the worker's stdout pipe (and stderr's when err_fd < 0); -1 closed */
    int err_fd;                /* read end of its stderr pipe: a worker the console shows has two; else -1 */
    int exec_fd;               /* close-on-exec pipe: errno of a failed exec, EOF when exec worked */
    int log_fd;                /* LOG_DIR/workerlog.<rank>, O_APPEND */
    int tee;                   /* what the console shows of it: JOB_TEE_OUT | JOB_TEE_ERR */
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

struct job {
    struct opts opt;
    char hostname[256];
    char host_addr[256];       /* this node's address for workers (PADDLE_CURRENT_ENDPOINT) */
    char master_addr[256];     /* MASTER_ADDR: the address of node rank 0 */
    char socket_ifname[64];    /* multi-node: the interface that routes to MASTER_ADDR (GLOO/NCCL_SOCKET_IFNAME) */
    int multi;                 /* multi-node: ranks and ports come from the coordinator */
    char job_id[65];
    char log_dir[PATH_MAX];    /* absolute */
    char node_label[256];      /* this node's name in file names and reports (Slurm's node name, else the host) */
    char log_name[300];        /* this node's launcher log in log_dir: plaunch.log, plaunch.NODE.log (multi-node) */
    char run_dir[PATH_MAX];    /* 0700 directory for sockets; removed at exit */
    int gpu_mode;
    int gpu_inherit;           /* --nproc-per-node on a GPU node: CUDA_VISIBLE_DEVICES as inherited, worker i on
                                * its i-th entry (FLAGS_selected_gpus = i), as torchrun and Paddle do */
    int gpus_visible;          /* GPUs the inherited list (or the driver) shows, for gpu_inherit */
    int set_device_order;      /* CUDA_DEVICE_ORDER=PCI_BUS_ID: plaunch numbered the GPUs (no inherited list) */
    int nworkers;              /* on this node */
    int nnodes, node_rank, rank_base, world_size;
    struct worker *workers;
    int generation;
    int master_port;
    int *endpoint_ports;       /* one per rank, this node's ranks only on one node */
    char *endpoints;           /* PADDLE_TRAINER_ENDPOINTS of the generation */
    char *visible_devices;     /* CUDA_VISIBLE_DEVICES of this node's workers; NULL for CPU */
    char agent_endpoint[PATH_MAX + 32]; /* PLAUNCH_AGENT */
    char **base_env;           /* inherited environment minus the variables plaunch sets */
    int base_has_omp;          /* OMP_NUM_THREADS was set by the user */
};

#endif
