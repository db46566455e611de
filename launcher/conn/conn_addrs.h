/* conn_addrs: conn_guard's connections grouped by remote address: how many come from one address and which they
 * are, oldest first, at a cost that does not grow with the number of connections (a 16,384-node rendezvous has
 * that many unauthenticated connections at once). Knows nothing but descriptors and addresses. */
#ifndef PLAUNCH_CONN_ADDRS_H
#define PLAUNCH_CONN_ADDRS_H

#include <sys/socket.h>

typedef struct conn_addrs conn_addrs_t;

conn_addrs_t *conn_addrs_new(void);
void conn_addrs_destroy(conn_addrs_t **a);
/* fd's connection, from ip (family AF_INET or AF_INET6, 16 bytes, IPv4 in the first 4), joins its address's
 * group, at the end. 0, or -1 out of memory (fd is then in no group). fd must be in none. */
int conn_addrs_add(conn_addrs_t *a, int fd, sa_family_t family, const unsigned char ip[16]);
/* fd leaves its group (nothing when it is in none). */
void conn_addrs_remove(conn_addrs_t *a, int fd);
/* Connections in the group of that address. */
int conn_addrs_count(const conn_addrs_t *a, sa_family_t family, const unsigned char ip[16]);
/* The oldest connection of the group, then the next one after fd; -1 ends. */
int conn_addrs_first(const conn_addrs_t *a, sa_family_t family, const unsigned char ip[16]);
int conn_addrs_next(const conn_addrs_t *a, int fd);

#endif
