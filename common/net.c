/* net: small socket helpers for the launcher: free TCP ports, local host name and addresses. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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
