/* net: small socket helpers for the launcher: free TCP ports, local host name and addresses. */
#ifndef PLAUNCH_NET_H
#define PLAUNCH_NET_H

#include <stddef.h>

/* Finds n distinct free TCP ports on addr (IPv4/IPv6 literal) by binding port 0; all are held until every
 * port is chosen, so they are distinct. Another process may still take one later: callers that need
 * a port for certain bind it themselves. Returns 0, or -1 with errno. */
int net_free_ports(const char *addr, int *ports, int n);

#endif
