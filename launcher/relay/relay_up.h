/* relay_up: what a relay says to the coordinator, batched: its children's messages and news, queued in order and
 * handed to the host as one RELAYED per turn of the loop (or sooner when a batch is full). */
#ifndef PLAUNCH_RELAY_UP_H
#define PLAUNCH_RELAY_UP_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/relay/relay.h"

struct relay_up_item {
    int event;                  /* PLAUNCH__RELAY_ITEM__EVENT__* */
    uint32_t from;
    unsigned char *payload;     /* owned copies */
    size_t len;
    char *addr, *name, *text;
};

struct relay_up {
    struct relay_up_item *items;
    int n, cap;
    size_t bytes;
    relay_up_fn fn;
    void *arg;
    long lost;                  /* items the host could not send */
    int failed;                 /* ... since the owner last looked (the coordinator will never hear of them) */
};

/* Queues one item (strings may be NULL); flushes first when the batch is full. 0, or -1 out of memory. */
int relay_up_queue(struct relay_up *u, int event, uint32_t from, const void *payload, size_t len, const char *addr,
                   const char *name, const char *text);
/* Hands what is queued to the host, in one RELAYED, and empties the queue. */
void relay_up_flush(struct relay_up *u);
void relay_up_free(struct relay_up *u);

#endif
