/* status_ask: the live view asked of the coordinator (STATUS_REQUEST / STATUS_ANSWER) with the job's credentials. */
#ifndef PLAUNCH_STATUS_ASK_H
#define PLAUNCH_STATUS_ASK_H

#include <stddef.h>

#include "launcher/opts/opts.h"

/* master "HOST:PORT"; o: only its credentials (token, token_file, tls_dir, insecure) are read. The answer's document
 * (malloc'ed, NUL-terminated, *len bytes), or NULL with a message; never waits longer than timeout_ms. */
char *status_ask(const char *master, const struct opts *o, int timeout_ms, size_t *len, char *err, size_t errlen);

#endif
