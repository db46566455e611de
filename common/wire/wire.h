/* wire: the control plane's messages (schema common/wire.proto): encode, decode with every bound checked, peers. */
#ifndef PLAUNCH_WIRE_H
#define PLAUNCH_WIRE_H

/* Calling rules: a message from wire_decode() is owned by the caller and freed with wire_free(); one built with
 * wire_init() lives in the caller's storage, borrows every pointer it holds and is never passed to wire_free().
 * Every function is thread-safe; none logs. Errors: -1 / NULL and a message naming the field in err[errlen]. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/wire/wire.pb-c.h"

#define WIRE_PROTOCOL_VERSION 5u

/* Bounds (docs/protocol.md explains each). The largest valid message is an ASSIGN for 65536 ranks. */
#define WIRE_MAX_MSG         (1u << 20)  /* encoded envelope, checked before unpacking */
#define WIRE_MAX_DECODED     (4u << 20)  /* memory the unpacker may take for one message */
#define WIRE_MAX_JOB_ID      64
#define WIRE_MAX_HOST        255         /* host names and addresses */
#define WIRE_MAX_VERSION_STR 64
#define WIRE_MAX_GPUS_STR    1024
#define WIRE_MAX_NODES       65536       /* one worker per node at least */
#define WIRE_MAX_LOCAL       1024        /* workers on one node */
#define WIRE_MAX_WORLD       65536
#define WIRE_MAX_KEY         128
#define WIRE_NCCL_ID_BYTES   128
#define WIRE_MAX_TEXT        1024        /* REFUSE/STOP text, one log line */
#define WIRE_MAX_LOG_LINES   64
#define WIRE_MAX_REPORT      (256u << 10) /* a REPORT's document or text */
#define WIRE_MIN_STACKS_MS   1000        /* STACKS_REQUEST.deadline_ms */
#define WIRE_MAX_STACKS_MS   600000
#define WIRE_MAX_AGE_MS      (86400000ll * 365) /* PROGRESS ages: a year */
#define WIRE_MAX_STATUS      (256u << 10) /* a STATUS_ANSWER's document (GP_STATUS_MAX) */
#define WIRE_MAX_PREFLIGHT   16          /* JOIN's preflight findings (launcher/preflight/preflight.h PF_FINDINGS_MAX) */
#define WIRE_MAX_RESTARTS    100000
#define WIRE_MAX_GRACE_S     3600
#define WIRE_MAX_MS          86400000u   /* heartbeat interval/timeout, barrier timeout */
#define WIRE_MAX_SIGNAL      64
#define WIRE_MAX_ENDPOINT    300         /* "tcp://ADDR:PORT" of a relay */
#define WIRE_MAX_RELAYED     (WIRE_MAX_MSG - 4096) /* one child's message inside RELAYED */
#define WIRE_MAX_RELAY_ITEMS 4096        /* items of one RELAYED */
#define WIRE_MAX_RELAY_TO    65535       /* children named by one item */
#define WIRE_MAX_ADDR        79          /* a child's remote address in RELAYED's OPENED */
#define WIRE_MAX_PATH        4096        /* a file's path on a node (WORKER_EXIT.error_file) */
/* An ASSIGN carries the tables of every node and rank only while nnodes x world_size stays within this (the
 * broadcast then stays under ~60 MB): beyond, each node gets its own part only (docs/protocol.md). */
#define WIRE_TABLES_MAX      (1u << 22)
#define WIRE_MAX_TABLE_NODES 2048        /* so the tables never list more nodes (world_size >= nnodes) */

typedef Plaunch__Envelope wire_msg_t;

/* Body types, as msg->body_case holds them (the oneof field numbers of wire.proto). */
typedef Plaunch__Envelope__BodyCase wire_type_t;
#define WIRE_NONE PLAUNCH__ENVELOPE__BODY__NOT_SET
#define WIRE_HELLO PLAUNCH__ENVELOPE__BODY_HELLO
#define WIRE_JOIN PLAUNCH__ENVELOPE__BODY_JOIN
#define WIRE_ASSIGN PLAUNCH__ENVELOPE__BODY_ASSIGN
#define WIRE_REFUSE PLAUNCH__ENVELOPE__BODY_REFUSE
#define WIRE_HEARTBEAT PLAUNCH__ENVELOPE__BODY_HEARTBEAT
#define WIRE_WORKER_EXIT PLAUNCH__ENVELOPE__BODY_WORKER_EXIT
#define WIRE_STOP PLAUNCH__ENVELOPE__BODY_STOP
#define WIRE_NCCL_ID_PUT PLAUNCH__ENVELOPE__BODY_NCCL_ID_PUT
#define WIRE_NCCL_ID_GET PLAUNCH__ENVELOPE__BODY_NCCL_ID_GET
#define WIRE_NCCL_ID PLAUNCH__ENVELOPE__BODY_NCCL_ID
#define WIRE_BARRIER PLAUNCH__ENVELOPE__BODY_BARRIER
#define WIRE_BARRIER_DONE PLAUNCH__ENVELOPE__BODY_BARRIER_DONE
#define WIRE_REPORT PLAUNCH__ENVELOPE__BODY_REPORT
#define WIRE_BYE PLAUNCH__ENVELOPE__BODY_BYE
#define WIRE_RELAY_START PLAUNCH__ENVELOPE__BODY_RELAY_START
#define WIRE_RELAY_READY PLAUNCH__ENVELOPE__BODY_RELAY_READY
#define WIRE_REDIRECT PLAUNCH__ENVELOPE__BODY_REDIRECT
#define WIRE_RELAYED PLAUNCH__ENVELOPE__BODY_RELAYED
#define WIRE_STATUS_REQUEST PLAUNCH__ENVELOPE__BODY_STATUS_REQUEST
#define WIRE_STATUS_ANSWER PLAUNCH__ENVELOPE__BODY_STATUS_ANSWER

/* Which bodies a receiver accepts (the `allowed` argument of wire_decode). */
#define WIRE_BIT(type) (1ull << (type)) /* oneof numbers up to 63 */
#define WIRE_ANY                                                                                                  \
    (WIRE_BIT(WIRE_HELLO) | WIRE_BIT(WIRE_JOIN) | WIRE_BIT(WIRE_ASSIGN) | WIRE_BIT(WIRE_REFUSE) |                 \
     WIRE_BIT(WIRE_HEARTBEAT) | WIRE_BIT(WIRE_WORKER_EXIT) | WIRE_BIT(WIRE_STOP) | WIRE_BIT(WIRE_NCCL_ID_PUT) |    \
     WIRE_BIT(WIRE_NCCL_ID_GET) | WIRE_BIT(WIRE_NCCL_ID) | WIRE_BIT(WIRE_BARRIER) | WIRE_BIT(WIRE_BARRIER_DONE) |  \
     WIRE_BIT(WIRE_REPORT) | WIRE_BIT(WIRE_BYE) | WIRE_BIT(WIRE_RELAY_START) | WIRE_BIT(WIRE_RELAY_READY) |       \
     WIRE_BIT(WIRE_REDIRECT) | WIRE_BIT(WIRE_RELAYED) | WIRE_BIT(WIRE_STATUS_REQUEST) |                           \
     WIRE_BIT(WIRE_STATUS_ANSWER))
/* worker -> agent over ipc:// (REPORTs are the agents' and the coordinator's: a worker cannot speak for its node) */
#define WIRE_TO_AGENT_IPC (WIRE_BIT(WIRE_NCCL_ID_PUT) | WIRE_BIT(WIRE_NCCL_ID_GET) | WIRE_BIT(WIRE_BARRIER))
/* a relay's child -> the relay (each one but HEARTBEAT goes on to the coordinator inside RELAYED) */
#define WIRE_TO_RELAY                                                                                             \
    (WIRE_TO_AGENT_IPC | WIRE_BIT(WIRE_JOIN) | WIRE_BIT(WIRE_REFUSE) | WIRE_BIT(WIRE_HEARTBEAT) |                  \
     WIRE_BIT(WIRE_WORKER_EXIT) | WIRE_BIT(WIRE_REPORT) | WIRE_BIT(WIRE_BYE))
/* agent -> coordinator */
#define WIRE_TO_COORD (WIRE_TO_RELAY | WIRE_BIT(WIRE_RELAY_READY) | WIRE_BIT(WIRE_RELAYED) | WIRE_BIT(WIRE_STATUS_REQUEST))
/* coordinator -> `plaunch status --master` (on its TLS session) */
#define WIRE_TO_STATUS (WIRE_BIT(WIRE_HELLO) | WIRE_BIT(WIRE_STATUS_ANSWER) | WIRE_BIT(WIRE_REFUSE) | WIRE_BIT(WIRE_BYE))
/* coordinator -> agent */
#define WIRE_TO_AGENT                                                                                             \
    (WIRE_BIT(WIRE_HELLO) | WIRE_BIT(WIRE_ASSIGN) | WIRE_BIT(WIRE_REFUSE) | WIRE_BIT(WIRE_HEARTBEAT) |            \
     WIRE_BIT(WIRE_STOP) | WIRE_BIT(WIRE_NCCL_ID) | WIRE_BIT(WIRE_BARRIER_DONE) | WIRE_BIT(WIRE_BYE) |           \
     WIRE_BIT(WIRE_REPORT) | WIRE_BIT(WIRE_RELAY_START) | WIRE_BIT(WIRE_RELAYED))
/* coordinator -> agent in plaintext, before any TLS session: the answer to a ClientHello */
#define WIRE_TO_AGENT_PLAIN (WIRE_BIT(WIRE_REDIRECT) | WIRE_BIT(WIRE_REFUSE))
/* agent -> worker over ipc:// */
#define WIRE_TO_WORKER                                                                                            \
    (WIRE_BIT(WIRE_REFUSE) | WIRE_BIT(WIRE_STOP) | WIRE_BIT(WIRE_NCCL_ID) | WIRE_BIT(WIRE_BARRIER_DONE))

/* A REPORT's kinds, as report->kind_case holds them (the oneof field numbers of Report in wire.proto). */
typedef Plaunch__Report__KindCase wire_report_t;
#define WIRE_R_NONE PLAUNCH__REPORT__KIND__NOT_SET
#define WIRE_R_PROGRESS PLAUNCH__REPORT__KIND_PROGRESS
#define WIRE_R_STACKS_REQUEST PLAUNCH__REPORT__KIND_STACKS_REQUEST
#define WIRE_R_STACKS PLAUNCH__REPORT__KIND_STACKS
#define WIRE_R_STACKS_DONE PLAUNCH__REPORT__KIND_STACKS_DONE
#define WIRE_R_HEALTH PLAUNCH__REPORT__KIND_HEALTH
#define WIRE_R_HEALTH_BLOCK PLAUNCH__REPORT__KIND_HEALTH_BLOCK
#define WIRE_R_SUMMARY PLAUNCH__REPORT__KIND_SUMMARY
#define WIRE_R_NODE_STATE PLAUNCH__REPORT__KIND_NODE_STATE
#define WIRE_R_STANDBY PLAUNCH__REPORT__KIND_STANDBY

/* "JOIN", "NCCL_ID_PUT", ...; "NONE" or "UNKNOWN" otherwise. */
const char *wire_type_name(wire_type_t type);

/* Fills *msg: this protocol version, job_id (borrowed), generation, and body (a Plaunch__<Type> of that type,
 * borrowed; asserted). Example:
 *     Plaunch__Heartbeat hb = PLAUNCH__HEARTBEAT__INIT;  wire_msg_t m;
 *     wire_init(&m, "job-1", gen, WIRE_HEARTBEAT, &hb); */
void wire_init(wire_msg_t *msg, const char *job_id, uint32_t generation, wire_type_t type, void *body);

/* "PROGRESS", "STACKS_REQUEST", ...; "NONE" or "UNKNOWN" otherwise. */
const char *wire_report_name(wire_report_t kind);

/* Fills *msg and *r as a REPORT of that kind, whose message is body (a Plaunch__<Kind> of that kind, borrowed;
 * asserted), like wire_init. Example:
 *     Plaunch__StacksDone d = PLAUNCH__STACKS_DONE__INIT;  Plaunch__Report r;  wire_msg_t m;
 *     wire_report_init(&m, &r, "job-1", gen, WIRE_R_STACKS_DONE, &d); */
void wire_report_init(wire_msg_t *msg, Plaunch__Report *r, const char *job_id, uint32_t generation,
                      wire_report_t kind, void *body);

/* Fills *msg and *r as a REFUSE: code, text, and, for a refused worker request, its type, key and rank (request 0
 * and key NULL otherwise). Everything is borrowed, as with wire_init. */
void wire_refuse_init(wire_msg_t *msg, Plaunch__Refuse *r, const char *job_id, uint32_t generation, int code,
                      const char *text, uint32_t request, const char *key, uint32_t rank);

/* Checks msg against every bound, as wire_decode does, and packs it into buf[cap]. Returns the length. */
ssize_t wire_encode(const wire_msg_t *msg, void *buf, size_t cap, char *err, size_t errlen);
/* The same into a malloc'd buffer (caller frees), its length in *len. */
void *wire_encode_alloc(const wire_msg_t *msg, size_t *len, char *err, size_t errlen);

/* Unpacks buf[len] (at most WIRE_MAX_MSG bytes, checked first) and checks every field's bound, that the body is
 * one of `allowed` (WIRE_TO_*), and the cross-field rules (ASSIGN's counts and sums). A message of another
 * protocol version is returned with its envelope checked and its body dropped when that does not pass: call
 * wire_check_peer() before looking at the body. */
wire_msg_t *wire_decode(const void *buf, size_t len, uint64_t allowed, char *err, size_t errlen);
/* Frees a message from wire_decode and sets *msg to NULL; safe on NULL and twice. */
void wire_free(wire_msg_t **msg);

/* The checks of wire_encode: 0, or -1 with a message naming the field and the bound. */
int wire_check(const wire_msg_t *msg, char *err, size_t errlen);
/* Refuses a peer of another protocol version or, when expected_job_id is not NULL, another job, with a message
 * fit for both sides' logs (it names the node when the body says it, and which side to upgrade). 0 if the same. */
int wire_check_peer(const wire_msg_t *msg, uint32_t expected_version, const char *expected_job_id, char *err,
                    size_t errlen);

/* 1 when a checked ASSIGN carries the tables of every node and rank (needed by the two functions below). */
int wire_assign_has_tables(const Plaunch__Assign *assign);
/* PADDLE_TRAINER_ENDPOINTS of a checked ASSIGN: "addr:port,..." in rank order (IPv6 in brackets); caller frees. */
char *wire_assign_endpoints(const Plaunch__Assign *assign, char *err, size_t errlen);
/* The endpoint of global rank `rank` (PADDLE_CURRENT_ENDPOINT) into buf[len]; 0 or -1. */
int wire_assign_endpoint(const Plaunch__Assign *assign, uint32_t rank, char *buf, size_t len, char *err,
                         size_t errlen);

#endif
