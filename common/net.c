/* net: small socket helpers for the launcher: free TCP ports, local host name and addresses. */
#include "common/net.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Binds a TCP socket to addr:0 and returns it with its port in *port; -1 + errno on failure. */
static int s_bind_any(const char *addr, int *port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        len = sizeof *in4;
    } else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        len = sizeof *in6;
    } else {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
    return fd;
}

int net_free_ports(const char *addr, int *ports, int n)
{
    int *fds = calloc((size_t)(n > 0 ? n : 1), sizeof *fds);
    int rc = 0, i;
    if (!fds)
        return -1;
    for (i = 0; i < n; i++) {
        fds[i] = s_bind_any(addr, &ports[i]);
        if (fds[i] < 0) {
            rc = -1;
            break;
        }
    }
    int e = errno;
    while (i-- > 0)
        close(fds[i]);
    free(fds);
    errno = e;
    return rc;
}

/* The source address the kernel picks to reach dst (a UDP connect sends nothing); 0 or -1. */
static int s_source_for(struct in_addr dst, struct in_addr *src)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr = dst };
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0
                 ? 0 : -1;
    int e = errno;
    close(fd);
    errno = e;
    if (rc == 0)
        *src = sa.sin_addr;
    return rc;
}

int net_route_addr(const char *ip, char *out, size_t cap)
{
    struct in_addr dst, src;
    if (inet_pton(AF_INET, ip, &dst) != 1) {
        errno = EINVAL;
        return -1;
    }
    if (s_source_for(dst, &src) < 0)
        return -1;
    inet_ntop(AF_INET, &src, out, (socklen_t)cap);
    return 0;
}

void net_primary_addr(char *out, size_t cap)
{
    struct in_addr test_net, src;
    struct ifaddrs *all = NULL;
    inet_pton(AF_INET, "192.0.2.1", &test_net); /* TEST-NET-1: only a default route leads there */
    if (s_source_for(test_net, &src) == 0 && inet_ntop(AF_INET, &src, out, (socklen_t)cap))
        return;
    snprintf(out, cap, "127.0.0.1");
    if (getifaddrs(&all) < 0)
        return;
    for (struct ifaddrs *i = all; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK)) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, out, (socklen_t)cap);
            break;
        }
    freeifaddrs(all);
}

int net_route_ifname(const char *ip, char *ifname, size_t cap)
{
    struct in_addr dst, src;
    struct ifaddrs *all = NULL;
    int found = 0;
    if (inet_pton(AF_INET, ip, &dst) != 1) {
        errno = EINVAL;
        return -1;
    }
    if (s_source_for(dst, &src) < 0 || getifaddrs(&all) < 0)
        return -1;
    for (struct ifaddrs *i = all; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr == src.s_addr) {
            snprintf(ifname, cap, "%s", i->ifa_name);
            found = 1;
        }
    freeifaddrs(all);
    if (!found)
        errno = ENODEV;
    return found ? 0 : -1;
}
