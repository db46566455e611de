/* resolve: one host name looked up (IPv4) on a thread of its own, so that a slow or absent DNS answer never
 * stalls the event loop; the answer is announced through a descriptor the loop watches. */
#ifndef PLAUNCH_RESOLVE_H
#define PLAUNCH_RESOLVE_H

#include <stddef.h>

typedef struct resolve resolve_t;

/* Starts looking up host; NULL with errno (ENOMEM, EAGAIN: no thread). */
resolve_t *resolve_start(const char *host);
/* Readable once the answer is there. */
int resolve_fd(const resolve_t *r);
/* After resolve_fd was readable: 0 with the first IPv4 address in ip, or -1 with the resolver's reason in err
 * ("Name or service not known"). */
int resolve_result(resolve_t *r, char *ip, size_t ipcap, char *err, size_t errlen);
/* Frees r and sets it to NULL (safe twice); a lookup still running is abandoned: its thread frees what is left
 * when the resolver returns. */
void resolve_destroy(resolve_t **r);

#endif
