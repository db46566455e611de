/* wire_samples: one valid message of every body type, every field set, for the wire unit tests and fuzz seeds. */
#ifndef PLAUNCH_WIRE_SAMPLES_H
#define PLAUNCH_WIRE_SAMPLES_H

#include <stdio.h>
#include <string.h>

#include "common/wire/wire.h"

#define SAMPLE_JOB "job-1"
#define SAMPLE_GEN 3

/* A message and the storage it borrows; sample_init() points s->msg at the body of the asked type. */
struct sample {
    wire_msg_t msg;
    Plaunch__Hello hello;
    Plaunch__Join join;
    Plaunch__Assign assign;
    Plaunch__Refuse refuse;
    Plaunch__Heartbeat heartbeat;
    Plaunch__WorkerExit worker_exit;
    Plaunch__Stop stop;
    Plaunch__NcclIdPut nccl_id_put;
    Plaunch__NcclIdGet nccl_id_get;
    Plaunch__NcclId nccl_id;
    Plaunch__Barrier barrier;
    Plaunch__BarrierDone barrier_done;
    Plaunch__Report report;
    Plaunch__Progress progress;
    Plaunch__ProgressRank progress_ranks[2];
    Plaunch__ProgressRank *progress_rank_ptrs[2];
    Plaunch__StacksRequest stacks_request;
    Plaunch__Stacks stacks;
    Plaunch__StacksDone stacks_done;
    Plaunch__Health health;
    Plaunch__HealthBlock health_block;
    Plaunch__Summary summary;
    Plaunch__Bye bye;
    Plaunch__RelayStart relay_start;
    Plaunch__RelayReady relay_ready;
    Plaunch__Redirect redirect;
    Plaunch__Relayed relayed;
    Plaunch__StatusRequest status_request;
    Plaunch__StatusAnswer status_answer;
    Plaunch__RelayItem items[3];
    Plaunch__RelayItem *item_ptrs[3];
    uint32_t relay_to[3];
    uint8_t relay_payload[16];
    uint32_t worker_ports[4];
    uint32_t local_world_sizes[2];
    char *node_addrs[2];
    uint32_t endpoint_ports[6];
    uint32_t local_ports[4];
    char *log_tail[2];
    char *error_quote[1];
    char *preflight[1];
    uint32_t done_ranks[2];
    uint8_t id[WIRE_NCCL_ID_BYTES];
    char json[64];
};

static const wire_type_t sample_types[] = {
    WIRE_HELLO, WIRE_JOIN,    WIRE_ASSIGN,  WIRE_REFUSE,       WIRE_HEARTBEAT, WIRE_WORKER_EXIT, WIRE_STOP,
    WIRE_NCCL_ID_PUT, WIRE_NCCL_ID_GET, WIRE_NCCL_ID, WIRE_BARRIER, WIRE_BARRIER_DONE, WIRE_REPORT, WIRE_BYE,
    WIRE_RELAY_START, WIRE_RELAY_READY, WIRE_REDIRECT, WIRE_RELAYED, WIRE_STATUS_REQUEST, WIRE_STATUS_ANSWER,
};
#define SAMPLE_NTYPES (sizeof sample_types / sizeof sample_types[0])
/* Every kind of REPORT (sample_report). */
static const wire_report_t sample_reports[] = {
    WIRE_R_PROGRESS, WIRE_R_STACKS_REQUEST, WIRE_R_STACKS,  WIRE_R_STACKS_DONE,
    WIRE_R_HEALTH,   WIRE_R_HEALTH_BLOCK,   WIRE_R_SUMMARY,
};
#define SAMPLE_NREPORTS (sizeof sample_reports / sizeof sample_reports[0])

static void sample_fill_bodies(struct sample *s)
{
    static const uint32_t worker_ports[] = { 6001, 6002, 6003, 6004 };
    static const uint32_t endpoint_ports[] = { 6001, 6002, 7001, 7002, 7003, 7004 };
    for (size_t i = 0; i < sizeof s->id; i++)
        s->id[i] = (uint8_t)(i * 7 + 1);
    memcpy(s->worker_ports, worker_ports, sizeof worker_ports);
    memcpy(s->endpoint_ports, endpoint_ports, sizeof endpoint_ports);
    s->local_world_sizes[0] = 2;
    s->local_world_sizes[1] = 4;
    s->node_addrs[0] = "10.0.0.1";
    s->node_addrs[1] = "fd00::2";
    s->log_tail[0] = "Traceback (most recent call last):";
    s->log_tail[1] = "RuntimeError: CUDA error: out of memory";
    s->error_quote[0] = "RuntimeError: CUDA error: out of memory";
    snprintf(s->json, sizeof s->json, "{\"busbw_gbps\": 81.5}");

    plaunch__hello__init(&s->hello);
    s->hello.hostname = "head-0";
    s->hello.plaunch_version = "0.1.0";

    plaunch__join__init(&s->join);
    s->join.hostname = "gpu-07";
    s->join.addr = "10.0.0.7";
    s->join.pid = 4242;
    s->join.nproc = 4;
    s->join.requested_node_rank = 1;
    s->join.gpus = "0,1,2,3";
    s->join.plaunch_version = "0.1.0";
    s->join.n_worker_ports = 4;
    s->join.worker_ports = s->worker_ports;
    s->join.master_port = 29500;
    s->preflight[0] = "/dev/shm is 64 MiB, less than the 4 GiB 4 workers need";
    s->join.n_preflight = 1;
    s->join.preflight = s->preflight;
    s->join.relay_endpoint = "tcp://10.0.0.2:6171";

    plaunch__assign__init(&s->assign);
    s->assign.node_rank = 1;
    s->assign.nnodes = 2;
    s->assign.first_rank = 2;
    s->assign.world_size = 6;
    s->assign.n_local_world_sizes = 2;
    s->assign.local_world_sizes = s->local_world_sizes;
    s->assign.master_addr = "10.0.0.1";
    s->assign.master_port = 29500;
    s->assign.n_node_addrs = 2;
    s->assign.node_addrs = s->node_addrs;
    s->assign.n_endpoint_ports = 6;
    s->assign.endpoint_ports = s->endpoint_ports;
    s->assign.restart_count = 1;
    s->assign.max_restarts = 3;
    s->assign.heartbeat_interval_ms = 1000;
    s->assign.heartbeat_timeout_ms = 10000;
    s->assign.local_world_size = 4;
    s->assign.n_local_ports = 4;
    memcpy(s->local_ports, s->endpoint_ports + 2, sizeof s->local_ports);
    s->assign.local_ports = s->local_ports;

    plaunch__refuse__init(&s->refuse);
    s->refuse.code = PLAUNCH__REFUSE__CODE__BAD_REQUEST;
    s->refuse.text = "too many barriers open at once";
    s->refuse.request = WIRE_BARRIER;
    s->refuse.key = "init";
    s->refuse.rank = 2;

    plaunch__heartbeat__init(&s->heartbeat);
    s->heartbeat.seq = 9;
    s->heartbeat.mono_ns = 123456789012ULL;

    plaunch__worker_exit__init(&s->worker_exit);
    s->worker_exit.global_rank = 5;
    s->worker_exit.local_rank = 3;
    s->worker_exit.pid = 999;
    s->worker_exit.exit_code = 1;
    s->worker_exit.signal = 9;
    s->worker_exit.runtime_ms = 5000;
    s->worker_exit.exit_time_unix_ms = 1700000000123ULL;
    s->worker_exit.n_log_tail = 2;
    s->worker_exit.log_tail = s->log_tail;
    s->worker_exit.n_error_quote = 1;
    s->worker_exit.error_quote = s->error_quote;
    s->worker_exit.error_file = "/var/log/plaunch/job-1/error.3.json";

    plaunch__stop__init(&s->stop);
    s->stop.reason = PLAUNCH__STOP__REASON__WORKER_FAILED;
    s->stop.signal = 15;
    s->stop.grace_s = 30;
    s->stop.text = "rank 5 on gpu-07 exited with 1";

    plaunch__nccl_id_put__init(&s->nccl_id_put);
    s->nccl_id_put.key = "tp-group";
    s->nccl_id_put.rank = 4;
    s->nccl_id_put.id.len = sizeof s->id;
    s->nccl_id_put.id.data = s->id;

    plaunch__nccl_id_get__init(&s->nccl_id_get);
    s->nccl_id_get.key = "tp-group";
    s->nccl_id_get.rank = 5;

    plaunch__nccl_id__init(&s->nccl_id);
    s->nccl_id.key = "tp-group";
    s->nccl_id.id.len = sizeof s->id;
    s->nccl_id.id.data = s->id;

    plaunch__barrier__init(&s->barrier);
    s->barrier.key = "init";
    s->barrier.rank = 2;
    s->barrier.timeout_ms = 60000;

    plaunch__barrier_done__init(&s->barrier_done);
    s->barrier_done.key = "init";
    s->barrier_done.status = PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT;
    s->done_ranks[0] = 2;
    s->done_ranks[1] = 3;
    s->barrier_done.n_ranks = 2;
    s->barrier_done.ranks = s->done_ranks;

    for (int i = 0; i < 2; i++) {
        plaunch__progress_rank__init(&s->progress_ranks[i]);
        s->progress_rank_ptrs[i] = &s->progress_ranks[i];
        s->progress_ranks[i].rank = (uint32_t)(4 + i);
        s->progress_ranks[i].step = 120 + i;
        s->progress_ranks[i].out_age_ms = 250;
        s->progress_ranks[i].step_age_ms = 900;
    }
    plaunch__progress__init(&s->progress);
    s->progress.n_ranks = 2;
    s->progress.ranks = s->progress_rank_ptrs;
    plaunch__stacks_request__init(&s->stacks_request);
    s->stacks_request.deadline_ms = 6000;
    s->stacks_request.abort = 1;
    plaunch__stacks__init(&s->stacks);
    s->stacks.rank = 3;
    s->stacks.doc.len = strlen(s->json);
    s->stacks.doc.data = (uint8_t *)s->json;
    plaunch__stacks_done__init(&s->stacks_done);
    s->stacks_done.ranks = 4;
    plaunch__health__init(&s->health);
    s->health.summaries.len = strlen(s->json);
    s->health.summaries.data = (uint8_t *)s->json;
    plaunch__health_block__init(&s->health_block);
    s->health_block.text = "plaunch: health: 8 ranks on 2 nodes healthy\n";
    plaunch__summary__init(&s->summary);
    s->summary.exit_status = 130;
    s->summary.block = "plaunch: job job-1 stopped: SIGINT\nplaunch: every node exits with 130\n";
    s->summary.headline = "plaunch: job job-1 stopped: SIGINT";
    plaunch__report__init(&s->report);
    s->report.kind_case = WIRE_R_STACKS;
    s->report.stacks = &s->stacks;

    plaunch__bye__init(&s->bye);
    s->bye.exit_status = 1;

    plaunch__relay_start__init(&s->relay_start);
    s->relay_start.max_children = 130;
    s->relay_start.heartbeat_interval_ms = 500;
    s->relay_start.heartbeat_timeout_ms = 2500;

    plaunch__relay_ready__init(&s->relay_ready);
    s->relay_ready.endpoint = "tcp://10.0.0.7:41234";
    s->relay_ready.text = "ready";

    plaunch__redirect__init(&s->redirect);
    s->redirect.endpoint = "tcp://10.0.0.7:41234";

    /* a relay's batch up: a node opened, sent a message, and another one's session closed */
    for (size_t i = 0; i < sizeof s->relay_payload; i++)
        s->relay_payload[i] = (uint8_t)(0x08 + i);
    for (int i = 0; i < 3; i++) {
        plaunch__relay_item__init(&s->items[i]);
        s->item_ptrs[i] = &s->items[i];
        s->relay_to[i] = (uint32_t)(i + 1);
    }
    s->items[0].event = PLAUNCH__RELAY_ITEM__EVENT__OPENED;
    s->items[0].from = 7;
    s->items[0].peer_addr = "10.0.0.9";
    s->items[0].peer_name = "psk";
    s->items[1].from = 7;
    s->items[1].payload.len = sizeof s->relay_payload;
    s->items[1].payload.data = s->relay_payload;
    s->items[2].event = PLAUNCH__RELAY_ITEM__EVENT__CLOSED;
    s->items[2].from = 5;
    s->items[2].text = "its connection closed";
    plaunch__relayed__init(&s->relayed);
    s->relayed.n_items = 3;
    s->relayed.items = s->item_ptrs;

    plaunch__status_request__init(&s->status_request);
    s->status_request.max_bytes = 65536;
    plaunch__status_answer__init(&s->status_answer);
    s->status_answer.json.data = (uint8_t *)"{\"version\":1}";
    s->status_answer.json.len = 13;
}

/* Fills *s with a valid message of body type t. */
static void sample_init(struct sample *s, wire_type_t t)
{
    void *bodies[] = {
        [WIRE_HELLO] = &s->hello,
        [WIRE_JOIN] = &s->join,
        [WIRE_ASSIGN] = &s->assign,
        [WIRE_REFUSE] = &s->refuse,
        [WIRE_HEARTBEAT] = &s->heartbeat,
        [WIRE_WORKER_EXIT] = &s->worker_exit,
        [WIRE_STOP] = &s->stop,
        [WIRE_NCCL_ID_PUT] = &s->nccl_id_put,
        [WIRE_NCCL_ID_GET] = &s->nccl_id_get,
        [WIRE_NCCL_ID] = &s->nccl_id,
        [WIRE_BARRIER] = &s->barrier,
        [WIRE_BARRIER_DONE] = &s->barrier_done,
        [WIRE_REPORT] = &s->report,
        [WIRE_BYE] = &s->bye,
        [WIRE_RELAY_START] = &s->relay_start,
        [WIRE_RELAY_READY] = &s->relay_ready,
        [WIRE_REDIRECT] = &s->redirect,
        [WIRE_RELAYED] = &s->relayed,
        [WIRE_STATUS_REQUEST] = &s->status_request,
        [WIRE_STATUS_ANSWER] = &s->status_answer,
    };
    memset(s, 0, sizeof *s);
    sample_fill_bodies(s);
    wire_init(&s->msg, SAMPLE_JOB, SAMPLE_GEN, t, bodies[t]);
}

/* Points s's REPORT (sample_init(s, WIRE_REPORT) first) at its sample of kind k. */
static void sample_report(struct sample *s, wire_report_t k)
{
    void *kinds[] = {
        [WIRE_R_PROGRESS] = &s->progress,
        [WIRE_R_STACKS_REQUEST] = &s->stacks_request,
        [WIRE_R_STACKS] = &s->stacks,
        [WIRE_R_STACKS_DONE] = &s->stacks_done,
        [WIRE_R_HEALTH] = &s->health,
        [WIRE_R_HEALTH_BLOCK] = &s->health_block,
        [WIRE_R_SUMMARY] = &s->summary,
    };
    wire_report_init(&s->msg, &s->report, SAMPLE_JOB, SAMPLE_GEN, k, kinds[k]);
}

#endif
