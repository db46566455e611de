/* goodput: the one in-memory model of where the job's time goes: incidents and their phases, generations, steps,
 * goodput, and the live view of every node and rank. The coordinator owns the job's model (each agent may own one
 * of its node alone); the ledger (goodput.jsonl), status.json, `plaunch status`/`top`, the terminal summary,
 * `plaunch report` and the metrics endpoint all read it through this header, never compute their own.
 *
 * Time: seconds since the model was made (the job's start), from CLOCK_MONOTONIC; the start's wall clock is kept
 * for absolute times. Every interval of the wall clock is in exactly one of: startup (job start -> generation 0's
 * first progress), running (a generation's first progress -> the next incident's occurrence, or its end), an
 * incident's phases (occurred -> first progress of the next generation), ending (the last generation's end ->
 * the job's end). goodput = (running - recompute) / wall, recompute being the time of steps lost to restarts
 * (known only when ranks report steps). */
#ifndef PLAUNCH_GOODPUT_H
#define PLAUNCH_GOODPUT_H

#include <stddef.h>
#include <stdint.h>

#define GP_HOST_MAX 256   /* host names, NUL included */
#define GP_TEXT_MAX 512   /* an incident's text and hang groups */
#define GP_MAX_INCIDENTS 4096 /* kept in memory; later ones are counted in their cause and phases only */
#define GP_STATUS_NODES 256   /* nodes listed in status.json / the STATUS answer (the rest counted) */
#define GP_STATUS_RANKS 1024  /* ranks listed there */
#define GP_STATUS_MAX (256u << 10) /* the largest status.json written or read */
#define GP_LEDGER_MAX (64u << 20)  /* the largest goodput.jsonl read back */
#define GP_STATUS_SPARES 32   /* spares listed in the model and status.json (the rest counted) */
#define GP_STATUS_SWAPS 32    /* the last swaps kept there (the rest counted) */

enum gp_cause {
    GP_CAUSE_WORKER,    /* a worker failed (exit status or signal) */
    GP_CAUSE_NODE,      /* a node was lost (missed heartbeats, connection closed) */
    GP_CAUSE_HANG,      /* the hang watch's verdict */
    GP_CAUSE_SCALE,     /* the world changed size (an elastic node joined or left) */
    GP_CAUSE_STOP,      /* a stop request (signal, or the job ended by the user) */
    GP_NCAUSES
};

/* An incident's marks, in order. GP_OCCURRED: when it happened (a worker's exit time, a hang's last progress);
 * the others as the coordinator saw them. Phase p is the time from mark p to mark p + 1. */
enum gp_mark { GP_OCCURRED, GP_DETECTED, GP_TEARDOWN, GP_RENDEZVOUS, GP_STARTED, GP_PROGRESS, GP_NMARKS };
enum gp_phase {
    GP_PH_DETECT,       /* occurred -> detected */
    GP_PH_TEARDOWN,     /* detected -> every node's workers stopped */
    GP_PH_RENDEZVOUS,   /* -> the next generation's ASSIGN */
    GP_PH_START,        /* -> every node's workers spawned */
    GP_PH_INIT,         /* -> the first output or step report of a rank (framework, NCCL init, checkpoint load) */
    GP_NPHASES
};

struct gp_incident {
    int id;                     /* 0, 1, ... in the order they were detected */
    enum gp_cause cause;
    uint32_t generation;        /* the generation it ended */
    int rank, node;             /* the first failing rank and its node rank; -1 unknown or none */
    char host[GP_HOST_MAX];     /* that node's host name; "" unknown */
    int exit_code, signal;      /* the rank's exit: code 0..255 or -1, signal 0 (none) or 1..64 */
    char group[GP_TEXT_MAX];    /* a hang: the groups of ranks by stack, one line; else "" */
    char text[GP_TEXT_MAX];     /* why, one line (the verdict's words) */
    double at[GP_NMARKS];       /* seconds since the job's start; -1 not reached (yet, or ever) */
    double end_t;               /* when it stopped costing: its first progress, the next incident's occurrence
                                 * (one that came before it), or the job's end; -1 open. The time from its last
                                 * mark reached to end_t counts in the phase after that mark. */
    int closed;                 /* its record is complete (end_t is set) */
    int final;                  /* the job ended in it: the marks after the last reached never come */
    long long step_before;      /* the highest step reported before it (-1: none) */
    long long step_after;       /* the first step the next generation reported (-1: none yet) */
    long long steps_lost;       /* step_before - step_after + 1 when both are known and that is > 0; else 0 */
    double recompute_s;         /* steps_lost at the step time of the generation it ended; 0 unknown */
    char replaced_by[GP_HOST_MAX]; /* the hosts of the spares that took node ranks in the generation after it,
                                 * ", "-separated (cut); "" none */
};

enum gp_node_state { GP_NODE_JOINING, GP_NODE_RUNNING, GP_NODE_RESTARTING, GP_NODE_LOST, GP_NODE_DONE,
                     GP_NNODE_STATES };

/* One node as the model last heard of it. NAN where unknown. */
struct gp_node {
    int node_rank;
    char host[GP_HOST_MAX];
    int first_rank, nranks;     /* its ranks in the current generation */
    enum gp_node_state state;
    double seen_t;              /* when the coordinator last heard from it */
    double gpu_util;            /* percent, mean over its GPUs (the monitor) */
    double gpu_mem_mib, gpu_mem_total_mib; /* used and total, summed over its GPUs */
};

/* One rank (global rank of the current generation). NAN / -1 where unknown. */
struct gp_rank {
    int rank, node;
    long long step;             /* its latest reported step; -1 it reports none */
    double step_rate;           /* steps per second over its recent reports; NAN fewer than two */
    double out_t;               /* when it last wrote output (seconds since the job's start); -1 never */
    double gpu_util, gpu_mem_mib, gpu_mem_total_mib;
};

struct gp_gen {
    uint32_t gen;
    int world, nnodes;
    double start_t;             /* its ASSIGN */
    double run_t;               /* its first progress; -1 none yet */
    double end_t;               /* its end (an incident occurred, or the job ended); -1 running */
    long long first_step, last_step; /* the lowest first and highest last step reported; -1 none */
};

/* Hot spares (--spares): a member standing by, ready to take a lost node's rank; swapped out: one that stands by
 * after its workers failed two generations in a row (taken last). */
enum gp_spare_state { GP_SPARE_STANDBY, GP_SPARE_SWAPPED_OUT, GP_NSPARE_STATES };
struct gp_spare {
    char host[GP_HOST_MAX];
    enum gp_spare_state state;
};
/* A spare that took a node rank. */
struct gp_swap {
    uint32_t generation;        /* the generation it runs in */
    int node_rank;
    char host[GP_HOST_MAX];     /* the spare's host */
    double after_s;             /* from the loss (or swap-out) of the node to the generation's ASSIGN; -1 unknown */
};

/* The job's account at a time: what the summary, the ledger's last line and the metrics show. */
struct gp_summary {
    double wall_s, startup_s, running_s, ending_s, recompute_s;
    double lost_s[GP_NPHASES];  /* summed over the incidents, the open one's reached phases included */
    double lost_total_s;        /* sum of lost_s */
    double goodput;             /* 0..1; NAN before any time passed */
    int incidents[GP_NCAUSES];
    int nincidents;             /* all, the ones not kept in memory included */
    unsigned restarts;          /* generations begun after the first */
    long long steps_lost;
    int steps_reported;         /* some rank reported a step */
    enum gp_phase slowest;      /* the phase with the most lost time (GP_NPHASES: no incident) */
    int exit_status;            /* the job's, -1 running */
};

typedef struct goodput gp_t;

/* The model of a job starting now (mono_ns: CLOCK_MONOTONIC; unix_ms: the wall clock at the same instant). NULL
 * when memory runs out. */
gp_t *gp_new(const char *job_id, uint64_t mono_ns, int64_t unix_ms);
void gp_free(gp_t **g);
/* Seconds since the job's start of a CLOCK_MONOTONIC time. */
double gp_time(const gp_t *g, uint64_t mono_ns);

/* --- recording (the owner: the coordinator's components, from the events they already see) --- */
struct gp_cause_info {
    int rank, node;             /* -1 unknown */
    const char *host;           /* NULL unknown */
    int exit_code, signal;      /* -1 / 0 unknown */
    uint64_t occurred_ago_ms;   /* how long before its detection it happened (a worker's exit time, a hang's
                                 * silence); 0: at its detection */
    const char *text;           /* why, or NULL */
};
/* An incident detected now. While one is open (not yet at its first progress) a second detection is the same
 * incident (a node that dies with its ranks is one incident): the open one's id is returned. -1: out of memory
 * (the incident is counted, not kept). */
int gp_incident_open(gp_t *g, uint64_t now_ns, enum gp_cause cause, const struct gp_cause_info *ci);
/* The hang groups of the open incident (one line, cut at GP_TEXT_MAX). */
void gp_incident_group(gp_t *g, const char *groups);
/* A mark of the open incident reached now (earlier marks not reached are set to it; a mark reached is kept).
 * GP_RENDEZVOUS, GP_STARTED and GP_PROGRESS come from gp_gen_begin, gp_node_started and gp_rank_progress. */
void gp_mark(gp_t *g, enum gp_mark m, uint64_t now_ns);
/* A generation's ASSIGN: world and nodes, and the open incident's GP_RENDEZVOUS. */
void gp_gen_begin(gp_t *g, uint32_t gen, int world, int nnodes, uint64_t now_ns);
/* A node of the generation: its host, ranks and state (set again on each change). */
void gp_node_set(gp_t *g, int node_rank, const char *host, int first_rank, int nranks, enum gp_node_state st,
                 uint64_t now_ns);
/* Heard from a node now (a heartbeat): its workers of the current generation all started ago_ms ago (0: not
 * yet), its first output or step report ago_ms ago (0: none yet); its GPUs (util < 0: no GPU data). Once every
 * node of the generation started, GP_STARTED; at a node's first progress, GP_PROGRESS. */
void gp_node_heard(gp_t *g, int node_rank, uint64_t now_ns, uint64_t started_ago_ms, uint64_t progress_ago_ms,
                   double gpu_util, double gpu_mem_mib, double gpu_mem_total_mib);
/* A rank's progress report: its step (-1 none) and how long ago it last wrote output (UINT64_MAX never). */
void gp_rank_progress(gp_t *g, int rank, int node, long long step, uint64_t out_age_ms, uint64_t now_ns);
/* A rank's GPU from the monitor (NAN unknown). */
void gp_rank_gpu(gp_t *g, int rank, double util, double mem_mib, double mem_total_mib);
/* The spares standing by now: n of them listed (at most GP_STATUS_SPARES are kept), standby and swapped_out
 * counted whether listed or not. */
void gp_spares_set(gp_t *g, const struct gp_spare *list, int n, int standby, int swapped_out);
/* A spare took node_rank at generation's ASSIGN; it is the open incident's replacement (replaced_by). */
void gp_spare_swap(gp_t *g, uint32_t generation, int node_rank, const char *host, double after_s);
/* The job ended now with exit_status: the open incident (if any) becomes final, the last generation ends. */
void gp_finish(gp_t *g, uint64_t now_ns, int exit_status);

/* --- reading (everyone: metrics, status, the ledger, the summary, the report) --- */
const char *gp_job_id(const gp_t *g);
int64_t gp_start_unix_ms(const gp_t *g);
uint32_t gp_generation(const gp_t *g);
int gp_world(const gp_t *g);
/* The account as of now_ns (CLOCK_MONOTONIC; ignored once the job ended). */
void gp_summary(const gp_t *g, uint64_t now_ns, struct gp_summary *out);
int gp_nincidents(const gp_t *g);                     /* kept in memory */
const struct gp_incident *gp_incident(const gp_t *g, int i);
const struct gp_incident *gp_incident_current(const gp_t *g); /* the open one, or NULL */
int gp_ngens(const gp_t *g);
const struct gp_gen *gp_gen(const gp_t *g, int i);
int gp_nnodes(const gp_t *g);
const struct gp_node *gp_node(const gp_t *g, int i);   /* by index, in node rank order */
int gp_nranks(const gp_t *g);
const struct gp_rank *gp_rank(const gp_t *g, int i);   /* by index, in rank order */
/* Spares: standing by in a state; listed (at most GP_STATUS_SPARES); swaps so far, and the last ones kept (oldest
 * first, at most GP_STATUS_SWAPS). */
int gp_spares_count(const gp_t *g, enum gp_spare_state s);
int gp_nspares(const gp_t *g);
const struct gp_spare *gp_spare(const gp_t *g, int i);
int gp_swaps_total(const gp_t *g);
int gp_nswaps(const gp_t *g);
const struct gp_swap *gp_swap(const gp_t *g, int i);
/* "spares: 1 standing by (node3), 1 swap: node rank 1 -> node3 in 0.28 s" (the last swap), "" with no spare and no
 * swap; raw host bytes: the caller escapes. Returns the length. */
size_t gp_spares_text(const gp_t *g, char *buf, size_t cap);
/* A phase's lost time in an incident (-1: not reached). */
double gp_incident_phase(const struct gp_incident *in, enum gp_phase p);
/* Names as the ledger, status and metrics spell them: "worker-failure" "node-loss" "hang" "scale-change"
 * "stop-request"; "detect" "teardown" "rendezvous" "start" "init"; "joining" "running" "restarting" "lost" "done";
 * marks "occurred" "detected" "teardown_done" "rendezvous_done" "workers_started" "first_progress"; spares
 * "standby" "swapped_out". */
const char *gp_cause_name(enum gp_cause c);
const char *gp_phase_name(enum gp_phase p);
const char *gp_mark_name(enum gp_mark m);
const char *gp_node_state_name(enum gp_node_state s);
const char *gp_spare_state_name(enum gp_spare_state s);

/* The one-line summary of the console's status line: "plaunch: generation 1 | 8 ranks on 2 nodes | running |
 * step 1200 (3.1/s) | goodput 97.2 % | 1 incident", or the incident's phase while one is open; at most width
 * columns (0: cap), nothing a terminal acts on. Returns the length. */
size_t gp_status_line(const gp_t *g, uint64_t now_ns, int width, char *buf, size_t cap);

/* --- outputs (goodput_out.c: ledger, block; goodput_status.c: status.json and its text) --- */
/* The ledger LOG_DIR/goodput.jsonl, created (or emptied: one ledger per job and log directory) with
 * common/ownfile.h in log_dir. 0, or -1 with a message. */
int gp_ledger_open(gp_t *g, const char *log_dir, char *err, size_t errlen);
/* Appends every closed incident not written yet (each record once), and after gp_finish the summary line. 0, or
 * -1 with a message (later calls try again what failed). */
int gp_ledger_flush(gp_t *g, char *err, size_t errlen);
/* A model rebuilt from a ledger's text (len <= GP_LEDGER_MAX): incidents and the summary line. NULL with a
 * message naming the line and field. */
gp_t *gp_ledger_load(const char *text, size_t len, char *err, size_t errlen);
/* The Goodput block for the terminal summary and plaunch report:
 *   plaunch: ===== goodput 93.1 % of 612.0 s (time in steps 570.0 s) =====
 *     incident 0  worker-failure rank 3 (node-b) exit 1: lost 12.4 s (detect 0.0, teardown 0.3, ...)
 *     lost by phase: detect 0.0 s, teardown 0.3 s, rendezvous 0.1 s, start 0.0 s, init 12.0 s (slowest: init)
 *     steps lost to restarts: 40 (recomputed in ~21.0 s)
 * Lines that do not fit in cap are left out and counted. Returns the length. */
size_t gp_block(const gp_t *g, uint64_t now_ns, char *buf, size_t cap);
/* The summary and incidents as one JSON object (malloc'ed; NULL out of memory) for plaunch report --json. */
char *gp_report_json(const gp_t *g, uint64_t now_ns);

/* status.json: the live view, bounded (GP_STATUS_NODES nodes, GP_STATUS_RANKS ranks listed, the rest counted). */
char *gp_status_json(const gp_t *g, uint64_t now_ns);  /* malloc'ed; NULL out of memory */
/* Writes LOG_DIR/status.json (temporary name + rename, common/ownfile.h) unless one was written less than a
 * second before now_ns (returns 1 then); 0 written, -1 with a message. */
int gp_status_write(gp_t *g, const char *log_dir, uint64_t now_ns, char *err, size_t errlen);
/* The same under another name in log_dir (an agent's view of its node: "status.NODE.json"). */
int gp_status_write_as(gp_t *g, const char *log_dir, const char *name, uint64_t now_ns, char *err, size_t errlen);
/* A model of the live view read back from status.json or a STATUS answer (len <= GP_STATUS_MAX); its times are
 * relative to the reader's now_ns as the writer's were to its own. NULL with a message. */
gp_t *gp_status_load(const char *text, size_t len, uint64_t now_ns, char *err, size_t errlen);
/* The live view as text of at most width columns (0: no limit) and rows lines (0: no limit; the rest counted),
 * with no byte a terminal acts on. Returns the length. */
size_t gp_status_text(const gp_t *g, uint64_t now_ns, int width, int rows, char *buf, size_t cap);

#endif
