/* creds: the control plane's credentials and addresses for a multi-node job: which TLS mode (job CA, token,
 * or --insecure), whether this node owns the --master address, and the address it advertises. */
#ifndef PLAUNCH_CREDS_H
#define PLAUNCH_CREDS_H

#include <stddef.h>

#include "launcher/opts/opts.h"
#include "common/tls/tls_chan.h"

/* Splits --master's HOST:PORT (checked by the option layer); 0, or -1 with a message (IPv6). */
int creds_split_master(const char *master, char *host, size_t hostcap, int *port, char *err, size_t errlen);
/* 0 when o names credentials (token, token file, a job CA in --tls-dir or ~/.plaunch/tls, --insecure); -1 with
 * the message a scheduler's node gets, naming the ways to give them (no node can make a token for the others). */
int creds_check_given(const struct opts *o, char *err, size_t errlen);
/* 1 when ip belongs to an interface of this machine (network namespace). */
int creds_is_local_addr(const char *ip);
/* 1 when nobody listens on ip:port yet (this process may host the coordinator there). */
int creds_port_free(const char *ip, int port);
/* TLS credentials by precedence: --insecure (NULL, *insecure = 1), token (--token, PLAUNCH_TOKEN, --token-file),
 * the job CA in --tls-dir (default ~/.plaunch/tls); a coordinator with none creates a token and prints
 * "PLAUNCH_TOKEN=... retry_hint" for the other nodes. NULL with a message when none can be had. */
tls_ctx_t *creds_tls(const struct opts *o, const char *node_addr, const char *hostname, int is_server,
                     const char *retry_hint, int *insecure, char *err, size_t errlen);

#endif
