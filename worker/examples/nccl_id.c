/* nccl_id: example libplaunch worker: gets the job's NCCL unique ids for two keys and prints them as
 * "rank R/W key HEX"; runs without a GPU (ncclGetUniqueId needs none). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <plaunch.h>

static void s_print(plaunch_t *p, const char *key, const unsigned char *id)
{
    char hex[2 * PLAUNCH_NCCL_ID_BYTES + 1];
    for (int i = 0; i < PLAUNCH_NCCL_ID_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    printf("rank %d/%d %s %s\n", plaunch_rank(p), plaunch_world_size(p), key, hex);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a line reaches the log even if the job is stopped right after */
    plaunch_t *p = plaunch_open();
    if (!p)
        return 1;
    unsigned char id[PLAUNCH_NCCL_ID_BYTES];
    const char *keys[] = { argc > 1 ? argv[1] : "world", argc > 2 ? argv[2] : "pipeline" };
    for (int k = 0; k < 2; k++) {
        if (plaunch_nccl_id(p, keys[k], id) < 0) {
            fprintf(stderr, "rank %d: nccl id '%s': %s\n", plaunch_rank(p), keys[k], plaunch_error(p));
            plaunch_close(&p);
            return 1;
        }
        s_print(p, keys[k], id);
    }
    if (getenv("NCCL_ID_STAMP")) { /* for scripts/bench-rendezvous.sh: when this rank held every id */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        printf("rank %d held ids at %lld.%09ld\n", plaunch_rank(p), (long long)ts.tv_sec, ts.tv_nsec);
    }
    if (getenv("NCCL_ID_NO_BARRIER")) {
        plaunch_close(&p);
        return 0;
    }
    if (plaunch_barrier(p, "done", 60000) < 0) {
        fprintf(stderr, "rank %d: barrier: %s\n", plaunch_rank(p), plaunch_error(p));
        plaunch_close(&p);
        return 1;
    }
    plaunch_close(&p);
    return 0;
}
