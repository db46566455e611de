/* sim: the agent simulator's shared state (pl_agentsim): thousands of simulated agents in one process, a few
 * threads each driving many, every agent with its own ZeroMQ DEALER, TLS 1.3 session and wire messages. */
#ifndef PLAUNCH_SIM_H
#define PLAUNCH_SIM_H

/* Calling rules: sim_main.c (options, the phases, the coordinator's CPU and memory through sim_proc.c, checks)
 * forks processes that each run sim_part.c (a share of the agents: threads, the phases it is told, its results):
 * one process cannot hold 16,384 agents where the descriptor limit is 20,000 (SIM_FDS_PER_AGENT each). sim_part.c calls
 * sim_net.c (a thread's event loop, each agent's socket and session), which calls sim_agent.c (what an agent says
 * and hears) through sim_agent_on_msg and sim_agent_tick; sim_agent.c sends through sim_net_send. Every agent
 * belongs to one thread, which alone touches it until the threads are joined; struct sim_run's counters are
 * atomics. The protocol is the real one: common/wire encodes and checks every message, common/tls carries it. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/loop.h"
#include "common/tls/tls_chan.h"
#include "common/wire/heartbeat.h"
#include "common/wire/wire.h"

#define SIM_MAX_KEYS 4      /* NCCL id keys each simulated worker asks for, in order */
#define SIM_MAX_NPROC 64    /* simulated workers per agent */
#define SIM_TICK_MS 10      /* heartbeats, retries and phase changes are looked at this often */
#define SIM_BARRIER "done"  /* the barrier every rank passes once it holds every id (nccl_id's) */
/* Descriptors an agent holds: its connection and four ZeroMQ mailboxes (its DEALER, the DEALER's monitor and the
 * PAIR reading it), with room for sockets closed but not yet reaped. */
#define SIM_FDS_PER_AGENT 5

enum sim_phase {
    SIM_HOSTS,  /* only the agents that can relay run: they join first, and the coordinator asks them to relay */
    SIM_FORM,   /* connect, JOIN, ASSIGN, ids, barrier */
    SIM_STEADY, /* heartbeats only; the silent agents stop sending */
    SIM_END,    /* every agent says its workers ended (WORKER_EXIT, BYE) and waits for the coordinator's BYE */
    SIM_QUIT    /* the threads close their sockets and return */
};

struct sim_opts {
    char endpoint[300];        /* tcp://HOST:PORT of the coordinator */
    const char *addr;          /* JOIN.addr and the source address of every agent; NULL: agent i has its own,
                                  127.1.0.0 + i (a node per address, as the coordinator's per-address caps expect) */
    int agents;                /* simulated agents */
    int nnodes;                /* what every ASSIGN must say (the simulated agents plus the real ones) */
    int nproc;                 /* simulated workers per agent */
    int threads;
    int window;                /* agents between connect and HELLO at once, over all threads; 0 no limit */
    int silent;                /* this many agents (the last ones) stop sending once steady */
    int ranks;                 /* 1: agent i asks for node rank i + 1 (node 0 is the real plaunch) */
    int procs;                 /* processes sharing the agents */
    int relays;                /* agents that can relay (sim_host.c), the first ones of each process's share */
    int fanout;                /* the coordinator's --relay-fanout (0 off), for the count of relays it wants */
    int want;                  /* relays the coordinator wants (launcher/job/joblayout.c) */
    int ranked;                /* the ranked layout (default): agent i is node rank i + 1, agents 0..want-1 relay from
                                  the start, the others go to their relay directly; 0 (--elastic): REDIRECTs */
    int relay_port;            /* ranked: where relay agent j listens (at its address; + j with --addr) */
    double heartbeat, hb_timeout;
    const char *keys[SIM_MAX_KEYS];
    int nkeys;
};

enum sim_state {
    SA_WAIT,      /* no session: (re)connects at retry_at */
    SA_HANDSHAKE, /* connected, TLS handshake under way, no HELLO yet */
    SA_JOINING,   /* JOIN sent */
    SA_RUNNING,   /* assigned: its workers ask for ids and pass the barrier */
    SA_ENDING,    /* WORKER_EXIT and BYE sent: waiting for the coordinator's BYE */
    SA_DONE,      /* the coordinator's BYE came */
    SA_FAILED     /* refused, or lost its coordinator */
};

struct sim_agent {
    int idx;                      /* 0..agents-1; its host name is sim-IDX */
    struct sim_thread *th;
    enum sim_state st;
    void *sock, *mon;             /* DEALER; PAIR receiving the DEALER's DISCONNECTED events */
    tls_chan_t *ch;
    int open;                     /* HELLO came on this session */
    int in_drain;                 /* inside sim_net's receive loop: a send must not start another one */
    int backoff_ms;               /* before the next session after a broken one (the real link's: 0, 50 .. 1000) */
    uint64_t retry_at;
    int sessions;                 /* sessions started (1 unless the coordinator closed some) */
    struct sim_host *host;        /* an agent that can relay: its own thread, loop, link and relay (sim_host.c) */
    char relay_ep[WIRE_MAX_ENDPOINT + 1]; /* a REDIRECT's relay, for the next session; "" none */
    int at_relay;                 /* the current session is at a relay */
    int direct;                   /* its relay failed it: the coordinator is asked to serve it itself */
    int redirected;               /* it was sent to a relay once */
    tls_chan_t *keep;             /* a REDIRECT's handshake, which goes on at the relay (as link.c does) */
    unsigned char *hello;         /* its ClientHello, resent there */
    size_t hello_len;
    int relaying;                 /* it relays for others */
    char job_id[WIRE_MAX_JOB_ID + 1];
    char addr[64];                /* its address (JOIN.addr, the source of its connection) */
    char endpoint[400];           /* "tcp://ADDR:0;HOST:PORT" */
    uint32_t generation;
    int joined_once;              /* a JOIN was sent (its time is join_ns) */
    int assigned;
    int node_rank, first_rank, world, nnodes;
    unsigned char step[SIM_MAX_NPROC]; /* worker l waits for key step[l]'s id; at nkeys for the barrier; then done */
    int have_ids, passed;         /* every worker holds every id / passed the barrier */
    uint64_t join_ns, assign_ns, ids_ns, barrier_ns, stop_ns, last_heard_ns;
    struct heartbeat hb;
    uint64_t next_tick_ns;        /* its own tick, as a real agent's timer: a random phase, every tick_ms */
    int stop_reason;
    int errors;                   /* anything a real agent would have refused or failed on */
};

struct sim_thread {
    struct sim_run *run;
    int id, first, n;             /* agents [first, first + n) */
    struct sim_agent *agents;
    int epfd;
    int handshaking;              /* of its agents, those in SA_HANDSHAKE */
    pthread_t tid;
    unsigned char frame[TLS_CHAN_FRAME_MAX];
};

/* What an agent got, sent from each process to sim_main.c at the end. */
struct sim_result {
    int idx, node_rank, first_rank, world, nnodes;
    int assigned, have_ids, passed, errors, sessions, stop_reason, joined, redirected, relaying;
    uint64_t join_ns, assign_ns, ids_ns, barrier_ns, stop_ns;
};

/* A process's totals, after its results. */
struct sim_part_report {
    int n, failed, id_mismatch, drops, logged, finished;
    int have_ref[SIM_MAX_KEYS];
    unsigned char ref[SIM_MAX_KEYS][WIRE_NCCL_ID_BYTES];
};

/* The pipes between sim_main.c and each process: down 'G' go (the agents that cannot relay start), 'S' steady,
 * 'E' end, 'Q' quit; up 'R' an agent relays (or 'N' it was asked and cannot), 'J' every agent of the process that can
 * relay joined, 'F' formed (every agent of the process passed the barrier or failed), 'T' every live agent got
 * STOP, 'D' + report + results. */
#define SIM_UP_RELAY 'R'
#define SIM_UP_NORELAY 'N'
#define SIM_UP_JOINED 'J'
#define SIM_DOWN_GO 'G'
#define SIM_UP_FORMED 'F'
#define SIM_UP_STOPPED 'T'
#define SIM_UP_DONE 'D'
#define SIM_DOWN_STEADY 'S'
#define SIM_DOWN_END 'E'
#define SIM_DOWN_QUIT 'Q'

struct sim_run {
    const struct sim_opts *o;
    void *zctx;
    tls_ctx_t *tls;
    struct sim_thread *threads;
    atomic_int phase;
    atomic_int assigned, ids_done, barriers_done, stopped, finished, failed, errors, drops;
    pthread_mutex_t ref_lock;     /* the first id seen for each key: every other copy must equal it */
    int have_ref[SIM_MAX_KEYS];
    unsigned char ref[SIM_MAX_KEYS][WIRE_NCCL_ID_BYTES];
    atomic_int id_mismatch;
    atomic_int logged;            /* error lines printed, bounded */
    int first, n;                 /* this process's agents */
    tls_ctx_t *server_tls;        /* the relays' side of their children's sessions */
    int up;                       /* the pipe to sim_main.c ('R', 'N' come from the relays' threads) */
    struct sim_host *hosts;       /* this process's agents that can relay, run by one thread */
    int nhosts;
    pthread_t host_tid;
    int hosts_started;
    atomic_int hosts_joined;
    atomic_int relay_kids;        /* sessions this process's relays hold, as their thread counted them last */
};

/* sim_part.c */
/* Runs agents [first, first + n) in this process (threads o->threads), following the phases read from down and
 * reporting on up; returns the process's exit status. */
int sim_part_run(const struct sim_opts *o, int first, int n, int up, int down);

/* sim_net.c */
/* The thread's loop: runs its agents until the run's phase is SIM_QUIT. */
void *sim_net_thread(void *arg);
/* Encodes m (checked by wire_encode) and sends it over a's session. 0, or -1 (not open, or m breaks a bound). */
int sim_net_send(struct sim_agent *a, const wire_msg_t *m);
/* Ends a's session and socket; with retry, a new one starts after the back-off. */
void sim_net_reset(struct sim_agent *a, int retry);

/* sim_host.c: agents that can relay, on one thread per process with the real agent's loop, each with its link
 * (link.c) and relay (launcher/relay/): the same code a real relay runs */
/* Makes agents[0..n) the process's agents that can relay (each gets a sim_host; a->th becomes the host's own). */
int sim_host_setup(struct sim_run *run, struct sim_agent **agents, int n);
/* Starts the thread of this process's agents that can relay (run->hosts). 0, or -1. */
int sim_host_start(struct sim_run *run);
/* Joins them, once the run's phase is SIM_QUIT. */
void sim_host_join(struct sim_run *run);
/* A hosted agent's message to the coordinator, over its link. 0, or -1. */
int sim_host_send(struct sim_agent *a, const wire_msg_t *m);
/* RELAY_START (answered RELAY_READY; an agent that is not hosted answers that it cannot) or RELAYED. */
void sim_host_relay(struct sim_agent *a, const wire_msg_t *m);
/* Ranked: the endpoint a hosted agent's JOIN names (NULL: none) ... */
const char *sim_host_join_endpoint(const struct sim_agent *a);
/* ... and, its JOIN sent, its relay's held children get their HELLO. */
void sim_host_joined(struct sim_agent *a);
/* Ranked: where relay agent j listens ("tcp://ADDR:PORT"). */
void sim_host_relay_ep(const struct sim_opts *o, int j, char *out, size_t cap);

/* sim_proc.c (for sim_main.c) */
/* The process's user + system CPU seconds, -1 when it cannot be read. */
double sim_proc_cpu(int pid);
/* Its peak RSS (VmHWM) in KiB, -1 when it cannot be read. */
long sim_proc_hwm_kib(int pid);
/* 1 when it is gone or a zombie. */
int sim_proc_ended(int pid);

/* sim_agent.c */
/* A checked message from the coordinator (HELLO first on every session). */
void sim_agent_on_msg(struct sim_agent *a, const wire_msg_t *m);
/* Heartbeats, the silence, the end, the coordinator's silence; every SIM_TICK_MS. */
void sim_agent_tick(struct sim_agent *a, uint64_t now);
/* Monotonic ns. */
uint64_t sim_now_ns(void);
/* A bounded number of error lines on stderr (the rest are counted). */
void sim_log(struct sim_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
