/* resolve: one host name looked up (IPv4) on a detached thread; an eventfd says when the answer is there. The
 * owner and the thread each hold a reference, so either may finish first. */
#include "common/resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct resolve {
    atomic_int refs;
    int efd;
    char host[256];
    int rc;                 /* getaddrinfo's answer */
    int sys_errno;          /* errno of the thread, for EAI_SYSTEM */
    char ip[INET_ADDRSTRLEN];
};

static void s_unref(struct resolve *r)
{
    if (atomic_fetch_sub(&r->refs, 1) == 1) {
        close(r->efd);
        free(r);
    }
}

static void *s_lookup(void *arg)
{
    struct resolve *r = arg;
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res = NULL;
    uint64_t one = 1;
    r->rc = getaddrinfo(r->host, NULL, &hints, &res);
    r->sys_errno = errno;
    if (r->rc == 0 && res)
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr, r->ip, sizeof r->ip);
    else if (r->rc == 0)
        r->rc = EAI_NONAME;
    if (res)
        freeaddrinfo(res);
    if (write(r->efd, &one, sizeof one) < 0) { /* an eventfd write of 1 cannot fail short of a bug */
    }
    s_unref(r);
    return NULL;
}

resolve_t *resolve_start(const char *host)
{
    struct resolve *r = calloc(1, sizeof *r);
    pthread_attr_t attr;
    pthread_t tid;
    sigset_t all, old;
    if (!r)
        return NULL;
    snprintf(r->host, sizeof r->host, "%s", host);
    atomic_init(&r->refs, 2);
    r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->efd < 0) {
        free(r);
        return NULL;
    }
    /* The thread takes no signal: they belong to the loop's signalfd. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&tid, &attr, s_lookup, r);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(r->efd);
        free(r);
        errno = rc;
        return NULL;
    }
    return r;
}

int resolve_fd(const resolve_t *r)
{
    return r->efd;
}

int resolve_result(resolve_t *r, char *ip, size_t ipcap, char *err, size_t errlen)
{
    uint64_t n;
    if (read(r->efd, &n, sizeof n) != (ssize_t)sizeof n) {
        snprintf(err, errlen, "the lookup of '%s' has not finished", r->host);
        return -1;
    }
    if (r->rc != 0) {
        snprintf(err, errlen, "%s", r->rc == EAI_SYSTEM ? strerror(r->sys_errno) : gai_strerror(r->rc));
        return -1;
    }
    snprintf(ip, ipcap, "%s", r->ip);
    return 0;
}

void resolve_destroy(resolve_t **r)
{
    if (!r || !*r)
        return;
    s_unref(*r);
    *r = NULL;
}
