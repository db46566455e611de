/* gpus: GPU list parsing ("0,1,2,3", "0-3", "all") and GPU discovery through the CUDA libraries at run time. */
#include "common/gpus/gpus.h"
#include "common/idlist.h"
#include "common/proc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gpus_parse(const char *spec, int *ids, int max, int *all, char *err, size_t errlen)
{
    char why[400];
    *all = 0;
    if (spec && strcmp(spec, "all") == 0) {
        *all = 1;
        return 0;
    }
    int n = idlist_parse(spec, "GPU", GPUS_MAX - 1, ids, max, why, sizeof why);
    if (n < 0)
        snprintf(err, errlen, "%s; expected GPU ids like 0,1,2,3, a range like 0-3, or 'all'", why);
    return n;
}

int gpus_visible_none(const char *value)
{
    return value[0] == '\0' || value[0] == ',' || value[0] == '-' || strcmp(value, "NoDevFiles") == 0;
}

int gpus_split_visible(const char *value, char entries[][64], int max, char *err, size_t errlen)
{
    int n = 0;
    const char *p = value;
    if (*p == '\0')
        return 0; /* set but empty: no device visible */
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || len >= 64) {
            snprintf(err, errlen, "CUDA_VISIBLE_DEVICES='%s' has an empty or overlong entry", value);
            return -1;
        }
        if (n >= max) {
            snprintf(err, errlen, "CUDA_VISIBLE_DEVICES lists more than %d devices", max);
            return -1;
        }
        memcpy(entries[n], p, len);
        entries[n][len] = '\0';
        n++;
        if (!end)
            break;
        p = end + 1;
    }
    return n;
}

/* Child side: loads a CUDA library, counts devices, writes "count status message" to fd. Never returns. */
static void s_count_child(int fd)
{
    static const char *const rt_names[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                            "libcudart.so.11.0" };
    char msg[512] = "";
    int count = -1;
    for (size_t i = 0; i < sizeof rt_names / sizeof *rt_names && count < 0; i++) {
        void *h = dlopen(rt_names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        int (*get_count)(int *) = (int (*)(int *))dlsym(h, "cudaGetDeviceCount");
        const char *(*get_str)(int) = (const char *(*)(int))dlsym(h, "cudaGetErrorString");
        int c = 0, rc = get_count ? get_count(&c) : -1;
        if (rc == 0)
            count = c;
        else if (rc == 100) /* cudaErrorNoDevice */
            count = 0;
        else
            snprintf(msg, sizeof msg, "%s: cudaGetDeviceCount failed: %s", rt_names[i],
                     get_str && rc > 0 ? get_str(rc) : "symbol missing");
    }
    if (count < 0) {
        /* The driver library exists wherever an NVIDIA driver does, even without the runtime. */
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h) {
            int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
            int (*cu_count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
            int c = 0, rc = cu_init ? cu_init(0) : -1;
            if (rc == 0 && cu_count && cu_count(&c) == 0)
                count = c;
            else if (rc == 100)
                count = 0;
            else if (!msg[0])
                snprintf(msg, sizeof msg, "libcuda.so.1: cuInit failed with CUDA error %d", rc);
        } else if (!msg[0]) {
            snprintf(msg, sizeof msg, "no CUDA library found (neither libcudart.so nor the driver's "
                                      "libcuda.so.1): no NVIDIA driver is installed on this machine");
        }
    }
    dprintf(fd, "%d %s", count, msg);
    _exit(0);
}

int gpus_count_cuda(int timeout_ms, char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        s_count_child(fds[1]);
    }
    close(fds[1]);
    static char owner; /* the helper's owner in the child registry */
    if (proc_add(pid, 0, NULL, &owner) < 0) {
        snprintf(err, errlen, "GPU discovery: %s", strerror(errno));
        kill(pid, SIGKILL); /* our child this instant; whoever reaps next takes it as nobody's */
        close(fds[0]);
        return -1;
    }
    char buf[600];
    size_t got = 0;
    int rc = -1;
    struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
    for (;;) {
        int pr = poll(&pfd, 1, timeout_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            snprintf(err, errlen, "GPU discovery did not answer within %d ms (CUDA driver hung?)",
                     timeout_ms);
            proc_signal(pid, &owner, SIGKILL);
            goto out;
        }
        ssize_t r = read(fds[0], buf + got, sizeof buf - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    char *rest = NULL;
    long count = strtol(buf, &rest, 10);
    if (got == 0 || rest == buf) {
        snprintf(err, errlen, "GPU discovery helper crashed (CUDA library failed to load)");
    } else if (count < 0 && access("/proc/driver/nvidia", F_OK) != 0) {
        snprintf(err, errlen, "no NVIDIA driver is loaded (/proc/driver/nvidia is missing)");
    } else if (count < 0) {
        snprintf(err, errlen, "%s", *rest ? rest + 1 : "GPU discovery failed");
    } else {
        rc = (int)count;
    }
out:
    close(fds[0]);
    proc_wait(pid, &owner, -1, NULL); /* it has answered, or was killed */
    return rc;
}
