/* net: small socket helpers for the launcher: free TCP ports, local host name and addresses. */
#ifndef PLAUNCH_NET_H
#define PLAUNCH_NET_H

#include <stddef.h>

/* Finds n distinct free TCP ports on addr (IPv4/IPv6 literal) by binding port 0; all are held until every
 * port is chosen, so they are distinct. Another process may still take one later: callers that need
 * a port for certain bind it themselves. Returns 0, or -1 with errno. */
int net_free_ports(const char *addr, int *ports, int n);

/* The local address the kernel would use to reach IPv4 address ip; 0, or -1 with errno. */
int net_route_addr(const char *ip, char *out, size_t cap);
/* This host's address for others to reach it when nothing names one: the source address of the default route,
 * else the first IPv4 address of an interface that is up and not loopback, else 127.0.0.1. */
void net_primary_addr(char *out, size_t cap);
/* The interface the kernel would send by to reach IPv4 address ip (for a local address: the interface that holds
 * it) into ifname. 0, or -1 with errno. */
int net_route_ifname(const char *ip, char *ifname, size_t cap);

#endif
