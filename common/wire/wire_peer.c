/* wire_peer: does a message's sender speak this protocol version and run this job? The error names both sides and
 * the one to upgrade, so that the same text reads right in both logs. Calls only wire_names.c's wire_fail. */
#include "common/wire/wire_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#ifndef PLAUNCH_VERSION
#define PLAUNCH_VERSION "unknown"
#endif

/* Who sends a body type; NULL where both sides do. */
static const char *s_sender(wire_type_t type)
{
    switch (type) {
    case WIRE_HELLO:
    case WIRE_ASSIGN:
    case WIRE_STOP:
    case WIRE_NCCL_ID:
    case WIRE_BARRIER_DONE:
        return "coordinator";
    case WIRE_JOIN:
    case WIRE_WORKER_EXIT:
        return "agent";
    default:
        return NULL;
    }
}

/* The node and plaunch release that a body names for its sender (HELLO, JOIN); NULL otherwise. */
static const char *s_sender_node(const wire_msg_t *msg, const char **version)
{
    if (msg->body_case == WIRE_JOIN) {
        *version = msg->join->plaunch_version;
        return msg->join->hostname;
    }
    if (msg->body_case == WIRE_HELLO) {
        *version = msg->hello->plaunch_version;
        return msg->hello->hostname;
    }
    return NULL;
}

int wire_check_peer(const wire_msg_t *msg, uint32_t expected_version, const char *expected_job_id, char *err,
                    size_t errlen)
{
    const char *peer_role = s_sender(msg->body_case);
    const char *self_role = !peer_role ? NULL : strcmp(peer_role, "agent") == 0 ? "coordinator" : "agent";
    const char *version = NULL, *host = s_sender_node(msg, &version);
    char peer[2 * WIRE_MAX_HOST], self[64], older[WIRE_MAX_HOST + 64];
    if (host)
        snprintf(peer, sizeof peer, "%s on node %s (plaunch %s)", peer_role, host, version);
    else
        snprintf(peer, sizeof peer, "%s", peer_role ? peer_role : "peer");
    snprintf(self, sizeof self, "%s (plaunch %s)", self_role ? self_role : "this node", PLAUNCH_VERSION);
    if (msg->protocol_version != expected_version) {
        /* Name the side to upgrade so that the same text reads right in both logs. */
        if (msg->protocol_version < expected_version && host)
            snprintf(older, sizeof older, "node %s", host);
        else if (msg->protocol_version < expected_version)
            snprintf(older, sizeof older, "the %s's node", peer_role ? peer_role : "peer");
        else if (self_role)
            snprintf(older, sizeof older, "the %s's node", self_role);
        else
            snprintf(older, sizeof older, "this node");
        return wire_fail(err, errlen, "%s speaks protocol %" PRIu32 ", %s speaks protocol %" PRIu32
                         ": upgrade plaunch on %s", peer, msg->protocol_version, self, expected_version, older);
    }
    if (expected_job_id && strcmp(msg->job_id ? msg->job_id : "", expected_job_id) != 0)
        return wire_fail(err, errlen, "%s is in job '%s', %s runs job '%s': start every node with the same job id",
                         peer, msg->job_id ? msg->job_id : "", self, expected_job_id);
    return 0;
}
