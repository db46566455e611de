/* coord_admit: ClientHellos that wait for a TLS handshake slot (conn_guard's max_pending). A burst of thousands of
 * nodes is taken in turn instead of being closed and coming back after a back-off (4,096 nodes starting together
 * opened 44,951 sessions and formed in 17.8 s; docs/design.md). Bounded: at most one waiting frame per
 * unauthenticated connection (its conn_guard tag says it waits), each of at most CS_ADMIT_FRAME bytes, and each
 * connection's deadline still runs. */
#include "launcher/coord/coord_priv.h"

#include <stdlib.h>
#include <string.h>

/* Drops the frames of connections that are over (or went on without them). A connection waits with one frame at
 * most, so once there are as many frames as unauthenticated connections some of them are stale: this runs only
 * then, and frees at least one. */
static void s_compact(coord_server_t *cs)
{
    struct admit *keep = NULL, *tail = NULL, *a;
    const char *addr;
    int n = 0;
    while ((a = coord_admit_pop(cs)) != NULL) {
        if (conn_guard_serial(cs->tr.guard, a->fd) != a->serial ||
            conn_guard_lookup(cs->tr.guard, a->fd, 0, &addr) != CONN_NEW) {
            free(a);
            continue;
        }
        if (tail)
            tail->next = a;
        else
            keep = a;
        tail = a;
        n++;
    }
    cs->tr.admit_head = keep;
    cs->tr.admit_tail = tail;
    cs->tr.nadmit = n;
}

int coord_admit_push(coord_server_t *cs, int fd, const unsigned char *rid, size_t rid_len, const void *frame,
                     size_t len)
{
    if (len > CS_ADMIT_FRAME || conn_guard_tag(cs->tr.guard, fd) == CS_TAG_ADMIT) /* one waiting frame per connection */
        return -1;
    if (cs->tr.nadmit >= conn_guard_count(cs->tr.guard, CONN_NEW))
        s_compact(cs); /* a burst whose waiting connections closed: their frames made room look taken */
    if (cs->tr.nadmit >= conn_guard_count(cs->tr.guard, CONN_NEW))
        return -1;
    struct admit *a = malloc(sizeof *a + rid_len + len);
    if (!a)
        return -1;
    *a = (struct admit){ .fd = fd, .serial = conn_guard_serial(cs->tr.guard, fd), .rid_len = rid_len, .len = len };
    memcpy(a->data, rid, rid_len);
    memcpy(a->data + rid_len, frame, len);
    if (cs->tr.admit_tail)
        cs->tr.admit_tail->next = a;
    else
        cs->tr.admit_head = a;
    cs->tr.admit_tail = a;
    cs->tr.nadmit++;
    conn_guard_set_tag(cs->tr.guard, fd, CS_TAG_ADMIT);
    return 0;
}

struct admit *coord_admit_pop(coord_server_t *cs)
{
    struct admit *a = cs->tr.admit_head;
    if (!a)
        return NULL;
    cs->tr.admit_head = a->next;
    if (!cs->tr.admit_head)
        cs->tr.admit_tail = NULL;
    cs->tr.nadmit--;
    a->next = NULL;
    return a;
}

int coord_admit_current(coord_server_t *cs, const struct admit *a)
{
    const char *addr;
    if (conn_guard_serial(cs->tr.guard, a->fd) != a->serial || conn_guard_lookup(cs->tr.guard, a->fd, 0, &addr) != CONN_NEW)
        return 0;
    if (conn_guard_tag(cs->tr.guard, a->fd) == CS_TAG_ADMIT)
        conn_guard_set_tag(cs->tr.guard, a->fd, -1); /* its frame leaves the queue: the connection may wait again */
    return 1;
}

void coord_admit_free(coord_server_t *cs)
{
    struct admit *a;
    while ((a = coord_admit_pop(cs)) != NULL)
        free(a);
}
