/* pl_worker: a libplaunch worker for black-box tests: runs a list of steps (NCCL ids for many keys, barriers with
 * timeouts, marker files to order ranks without sleeping) and prints each outcome with the time it took. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker/plaunch.h"

#define PW_AFTER_DEADLINE_MS 60000 /* a marker the test waits for that never comes fails the step, not the test run */

static const char s_usage[] =
    "Usage: pl_worker STEP...   (started by plaunch, one per rank)\n"
    "  ids:N             NCCL ids for keys id-0 .. id-(N-1); prints how many were refused and the first reason\n"
    "  barrier:KEY:MS    plaunch_barrier(KEY, MS); prints OK, TIMEOUT, ABORTED or the error, and the time taken\n"
    "  mark:FILE         creates FILE\n"
    "  after:FILE        waits (polling, at most 60 s) until FILE exists\n"
    "Exit status: 0 when every step succeeded, 1 when one failed (the others still run), 2 for bad usage.\n";

static double s_ms_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

static int s_ids(plaunch_t *p, long n)
{
    unsigned char id[PLAUNCH_NCCL_ID_BYTES];
    char key[32];
    long refused = 0;
    double slowest = 0;
    for (long i = 0; i < n; i++) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        snprintf(key, sizeof key, "id-%ld", i);
        if (plaunch_nccl_id(p, key, id) == 0)
            continue;
        double ms = s_ms_since(&t0);
        if (ms > slowest)
            slowest = ms;
        if (refused++ == 0)
            printf("rank %d key %s failed after %.0f ms: %s\n", plaunch_rank(p), key, ms, plaunch_error(p));
    }
    printf("rank %d ids: %ld of %ld failed, the slowest failure took %.0f ms\n", plaunch_rank(p), refused, n,
           slowest);
    return refused ? 1 : 0;
}

static int s_barrier(plaunch_t *p, const char *arg)
{
    char key[200];
    const char *colon = strrchr(arg, ':');
    if (!colon || (size_t)(colon - arg) >= sizeof key) {
        fprintf(stderr, "pl_worker: barrier:KEY:MS expected, got 'barrier:%s'\n", arg);
        return 2;
    }
    snprintf(key, sizeof key, "%.*s", (int)(colon - arg), arg);
    int ms = atoi(colon + 1);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = plaunch_barrier(p, key, ms);
    int e = errno;
    double took = s_ms_since(&t0);
    if (rc == 0)
        printf("rank %d barrier %s: OK after %.0f ms\n", plaunch_rank(p), key, took);
    else
        printf("rank %d barrier %s: %s after %.0f ms: %s\n", plaunch_rank(p), key,
               e == ETIMEDOUT ? "TIMEOUT" : e == ECANCELED ? "ABORTED" : "ERROR", took, plaunch_error(p));
    return rc == 0 ? 0 : 1;
}

static int s_after(const char *path)
{
    struct timespec t0, tick = { 0, 10 * 1000 * 1000 };
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (access(path, F_OK) != 0) {
        if (s_ms_since(&t0) > PW_AFTER_DEADLINE_MS) {
            printf("after:%s: not there within %d ms\n", path, PW_AFTER_DEADLINE_MS);
            return 1;
        }
        nanosleep(&tick, NULL);
    }
    return 0;
}

static int s_mark(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f || fclose(f) != 0) {
        printf("mark:%s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int status = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fputs(s_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    plaunch_t *p = plaunch_open();
    if (!p)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (strncmp(a, "ids:", 4) == 0)
            rc = s_ids(p, atol(a + 4));
        else if (strncmp(a, "barrier:", 8) == 0)
            rc = s_barrier(p, a + 8);
        else if (strncmp(a, "mark:", 5) == 0)
            rc = s_mark(a + 5);
        else if (strncmp(a, "after:", 6) == 0)
            rc = s_after(a + 6);
        else
            rc = (fprintf(stderr, "pl_worker: unknown step '%s'\n%s", a, s_usage), 2);
        if (rc == 2) {
            plaunch_close(&p);
            return 2;
        }
        status |= rc;
    }
    plaunch_close(&p);
    return status;
}
