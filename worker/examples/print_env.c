/* print_env: example worker that prints the rank/world environment plaunch gave it and, through libplaunch,
 * the NCCL unique id every rank shares (make run's default job; runs without a GPU). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <plaunch.h>

static const char *s_get(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "(unset)";
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a line reaches the log even if the job is stopped right after */
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    printf("rank %s/%s local %s/%s node %s/%s generation %s on %s pid %d\n", s_get("RANK"), s_get("WORLD_SIZE"),
           s_get("LOCAL_RANK"), s_get("LOCAL_WORLD_SIZE"), s_get("GROUP_RANK"), s_get("GROUP_WORLD_SIZE"),
           s_get("PLAUNCH_GENERATION"), host, (int)getpid());
    printf("  torch : MASTER_ADDR=%s MASTER_PORT=%s TORCHELASTIC_RUN_ID=%s RESTART_COUNT=%s\n",
           s_get("MASTER_ADDR"), s_get("MASTER_PORT"), s_get("TORCHELASTIC_RUN_ID"),
           s_get("TORCHELASTIC_RESTART_COUNT"));
    printf("  paddle: PADDLE_TRAINER_ID=%s PADDLE_CURRENT_ENDPOINT=%s PADDLE_TRAINERS_NUM=%s\n",
           s_get("PADDLE_TRAINER_ID"), s_get("PADDLE_CURRENT_ENDPOINT"), s_get("PADDLE_TRAINERS_NUM"));
    printf("  gpu   : CUDA_VISIBLE_DEVICES=%s FLAGS_selected_gpus=%s PLAUNCH_GPU=%s\n",
           s_get("CUDA_VISIBLE_DEVICES"), s_get("FLAGS_selected_gpus"), s_get("PLAUNCH_GPU"));
    plaunch_t *p = plaunch_open();
    unsigned char id[PLAUNCH_NCCL_ID_BYTES];
    if (!p || plaunch_nccl_id(p, "demo", id) < 0) {
        fprintf(stderr, "rank %s: no NCCL id: %s\n", s_get("RANK"), p ? plaunch_error(p) : "plaunch_open failed");
        plaunch_close(&p);
        return 1;
    }
    printf("  nccl  : unique id for 'demo' (rank 0 called ncclGetUniqueId): ");
    for (int i = 0; i < 16; i++)
        printf("%02x", id[i]);
    printf("... (%d bytes, the same on every rank)\n", PLAUNCH_NCCL_ID_BYTES);
    plaunch_close(&p);
    return 0;
}
