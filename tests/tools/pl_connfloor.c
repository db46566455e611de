/* pl_connfloor: what one ZeroMQ connection costs on this machine, with nothing of plaunch's: N DEALERs in one
 * process connect to a ROUTER on loopback, each sends a frame and gets one back, then all close. Prints the CPU
 * time (both ends, libzmq's I/O thread and reaper included) per connection, the floor under any rendezvous that
 * opens a connection per node; scripts/bench-scale.sh prints it next to its results. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zmq.h>

static double s_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static double s_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, port = argc > 2 ? atoi(argv[2]) : 28999, zero = 0, backlog = 4096;
    char ep[64], id[256], buf[64];
    struct rlimit rl;
    if (n < 1 || n > 100000 || port < 1 || port > 65535) {
        fprintf(stderr, "usage: pl_connfloor [N (1..100000)] [PORT]\n");
        return 2;
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    void *ctx = zmq_ctx_new(), *router = NULL;
    void **dealers = calloc((size_t)n, sizeof *dealers);
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", port);
    if (!ctx || zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 2 * n + 64) < 0 || !(router = zmq_socket(ctx, ZMQ_ROUTER)) ||
        !dealers ||
        zmq_setsockopt(router, ZMQ_BACKLOG, &backlog, sizeof backlog) < 0 || zmq_bind(router, ep) < 0) {
        fprintf(stderr, "pl_connfloor: %s: %s\n", ep, zmq_strerror(errno));
        return 1;
    }
    double c0 = s_cpu(), w0 = s_wall();
    for (int i = 0; i < n; i++) {
        if (!(dealers[i] = zmq_socket(ctx, ZMQ_DEALER)) ||
            zmq_setsockopt(dealers[i], ZMQ_LINGER, &zero, sizeof zero) < 0 || zmq_connect(dealers[i], ep) < 0 ||
            zmq_send(dealers[i], "hello", 5, 0) < 0) {
            fprintf(stderr, "pl_connfloor: connection %d: %s (raise the descriptor limit?)\n", i, zmq_strerror(errno));
            return 1;
        }
    }
    for (int i = 0; i < n; i++) { /* every frame answered on its own connection */
        int len = zmq_recv(router, id, sizeof id, 0);
        if (len < 0 || zmq_recv(router, buf, sizeof buf, 0) < 0 ||
            zmq_send(router, id, (size_t)len, ZMQ_SNDMORE) < 0 || zmq_send(router, "bye", 3, 0) < 0)
            return 1;
    }
    for (int i = 0; i < n; i++)
        if (zmq_recv(dealers[i], buf, sizeof buf, 0) < 0)
            return 1;
    for (int i = 0; i < n; i++)
        zmq_close(dealers[i]);
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(router);
    zmq_ctx_term(ctx);
    double cpu = s_cpu() - c0;
    printf("connfloor n=%d cpu_s=%.3f wall_s=%.3f us_per_conn=%.0f\n", n, cpu, s_wall() - w0, cpu / n * 1e6);
    free(dealers);
    return 0;
}
