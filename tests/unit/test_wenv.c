/* Unit tests for wenv: each worker's environment carries the whole torch/Paddle/CUDA/PLAUNCH contract. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/supervisor/wenv.h"

static struct job s_job;
static struct worker s_workers[2];
static int s_ports[2] = { 30001, 30002 };
static char s_endpoints[] = "10.1.2.3:30001,10.1.2.3:30002";
static char s_visible[] = "4,5";

/* Node 2 of 4, ranks 4 and 5 of 8, generation 3, on GPUs 4 and 5 (or CPU workers when gpu_mode is 0). */
static void s_job_init(int gpu_mode, int nworkers, char **environ_in)
{
    memset(&s_job, 0, sizeof s_job);
    memset(s_workers, 0, sizeof s_workers);
    s_job.node.gpu_mode = gpu_mode;
    s_job.node.nworkers = nworkers;
    s_job.workers = s_workers;
    s_job.gen.world_size = 8;
    s_job.gen.nnodes = 4;
    s_job.gen.node_rank = 2;
    s_job.gen.rank_base = 4;
    snprintf(s_job.node.host_addr, sizeof s_job.node.host_addr, "10.1.2.3");
    snprintf(s_job.gen.master_addr, sizeof s_job.gen.master_addr, "10.1.2.3"); /* one node: this node is rank 0's */
    s_job.gen.master_port = 29500;
    s_job.gen.endpoint_ports = s_ports;
    s_job.gen.endpoints = s_endpoints;
    snprintf(s_job.node.log_dir, sizeof s_job.node.log_dir, "/abs/log");
    snprintf(s_job.node.job_id, sizeof s_job.node.job_id, "job-x");
    s_job.gen.generation = 3;
    ((struct opts *)&s_job.opt)->max_restarts = 5; /* jobsetup_init's one write, by hand */
    s_job.node.visible_devices = gpu_mode ? s_visible : NULL;
    s_job.node.set_device_order = gpu_mode; /* plaunch numbered the GPUs: no inherited list in these cases */
    snprintf(s_job.node.agent_endpoint, sizeof s_job.node.agent_endpoint, "ipc:///run/plaunch/agent");
    for (int i = 0; i < nworkers; i++) {
        s_workers[i].local_rank = i;
        s_workers[i].rank = 4 + i;
        if (gpu_mode)
            snprintf(s_workers[i].gpu, sizeof s_workers[i].gpu, "%d", 4 + i);
    }
    assert_int_equal(wenv_init(&s_job, environ_in), 0);
}

static int s_count(char **envp, const char *name, const char **value)
{
    size_t len = strlen(name);
    int n = 0;
    for (char **e = envp; *e; e++) {
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=') {
            n++;
            *value = *e + len + 1;
        }
    }
    return n;
}

/* name must appear exactly once with value want; want NULL: must not appear at all. */
static void s_expect(char **envp, const char *name, const char *want)
{
    const char *got = NULL;
    int n = s_count(envp, name, &got);
    if (!want && n != 0)
        fail_msg("%s is set to '%s', want it unset", name, got);
    if (want && n != 1)
        fail_msg("%s appears %d times, want once as '%s'", name, n, want);
    if (want && strcmp(got, want) != 0)
        fail_msg("%s='%s', want '%s'", name, got, want);
}

struct kv {
    const char *name, *value;
};

static void s_expect_all(char **envp, const struct kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s_expect(envp, kv[i].name, kv[i].value);
}

static const struct kv s_common_w1[] = {
    { "RANK", "5" },
    { "LOCAL_RANK", "1" },
    { "WORLD_SIZE", "8" },
    { "LOCAL_WORLD_SIZE", "2" },
    { "GROUP_RANK", "2" },
    { "GROUP_WORLD_SIZE", "4" },
    { "ROLE_NAME", "default" },
    { "ROLE_RANK", "5" },
    { "ROLE_WORLD_SIZE", "8" },
    { "MASTER_ADDR", "10.1.2.3" },
    { "MASTER_PORT", "29500" },
    { "TORCHELASTIC_RESTART_COUNT", "3" },
    { "TORCHELASTIC_MAX_RESTARTS", "5" },
    { "TORCHELASTIC_RUN_ID", "job-x" },
    { "TORCHELASTIC_ERROR_FILE", "/abs/log/error.5.json" },
    { "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1" },
    { "PADDLE_TRAINER_ID", "5" },
    { "PADDLE_TRAINERS_NUM", "8" },
    { "PADDLE_TRAINER_ENDPOINTS", "10.1.2.3:30001,10.1.2.3:30002" },
    { "PADDLE_CURRENT_ENDPOINT", "10.1.2.3:30002" },
    { "PADDLE_MASTER", "10.1.2.3:29500" },
    { "PADDLE_NNODES", "4" },
    { "PADDLE_GLOBAL_SIZE", "8" },
    { "PADDLE_LOCAL_SIZE", "2" },
    { "PADDLE_GLOBAL_RANK", "5" },
    { "PADDLE_LOCAL_RANK", "1" },
    { "PADDLE_RANK_IN_NODE", "1" },
    { "PADDLE_LOG_DIR", "/abs/log" },
    { "PLAUNCH_AGENT", "ipc:///run/plaunch/agent" },
    { "PLAUNCH_JOB_ID", "job-x" },
    { "PLAUNCH_GENERATION", "3" },
    { "PLAUNCH_NODE_RANK", "2" },
    { "PLAUNCH_NNODES", "4" },
};
#define NCOMMON (sizeof s_common_w1 / sizeof *s_common_w1)

static const struct kv s_gpu_w1[] = {
    { "CUDA_VISIBLE_DEVICES", "4,5" },
    { "CUDA_DEVICE_ORDER", "PCI_BUS_ID" },
    { "FLAGS_selected_gpus", "1" },
    { "PLAUNCH_GPU", "5" },
};
#define NGPU (sizeof s_gpu_w1 / sizeof *s_gpu_w1)

static void s_done(char **envp)
{
    free(envp);
    wenv_fini(&s_job);
    assert_null(s_job.node.base_env);
}

/* Builds worker 1's environment (2 workers) and checks the whole contract; GPU variables only in GPU mode. */
static char **s_build_w1(int gpu_mode, char **inherited)
{
    s_job_init(gpu_mode, 2, inherited);
    char **envp = wenv_build(&s_job, &s_workers[1]);
    assert_non_null(envp);
    s_expect_all(envp, s_common_w1, NCOMMON);
    for (size_t i = 0; i < NGPU; i++)
        s_expect(envp, s_gpu_w1[i].name, gpu_mode ? s_gpu_w1[i].value : NULL);
    return envp;
}

static void test_gpu_contract(void **state)
{
    char **envp = s_build_w1(1, (char *[]){ "PATH=/usr/bin", NULL });
    s_expect(envp, "OMP_NUM_THREADS", "1");
    s_expect(envp, "PATH", "/usr/bin");
    s_done(envp);
}

static void test_worker_zero_differs_only_in_rank(void **state)
{
    s_job_init(1, 2, NULL);
    char **envp = wenv_build(&s_job, &s_workers[0]);
    assert_non_null(envp);
    s_expect(envp, "RANK", "4");
    s_expect(envp, "LOCAL_RANK", "0");
    s_expect(envp, "PADDLE_CURRENT_ENDPOINT", "10.1.2.3:30001");
    s_expect(envp, "FLAGS_selected_gpus", "0");
    s_expect(envp, "PLAUNCH_GPU", "4");
    s_expect(envp, "WORLD_SIZE", "8");
    s_done(envp);
}

/* Stale values from an outer launch are dropped and replaced; look-alike names and others are kept. */
static void test_stale_values_dropped(void **state)
{
    char *inherited[] = {
        "RANK=99", "LOCAL_RANK=9", "WORLD_SIZE=1", "LOCAL_WORLD_SIZE=1", "GROUP_RANK=7", "GROUP_WORLD_SIZE=9",
        "ROLE_NAME=trainer", "ROLE_RANK=9", "ROLE_WORLD_SIZE=9", "MASTER_ADDR=old", "MASTER_PORT=1",
        "TORCHELASTIC_RESTART_COUNT=9", "TORCHELASTIC_MAX_RESTARTS=9", "TORCHELASTIC_RUN_ID=old",
        "TORCHELASTIC_USE_AGENT_STORE=True", "TORCHELASTIC_ERROR_FILE=/old/error.json", "PADDLE_TRAINER_ID=9", "PADDLE_TRAINERS_NUM=9",
        "PADDLE_TRAINER_ENDPOINTS=old:1", "PADDLE_CURRENT_ENDPOINT=old:1", "PADDLE_MASTER=old:1",
        "PADDLE_NNODES=9", "PADDLE_GLOBAL_SIZE=9", "PADDLE_LOCAL_SIZE=9", "PADDLE_GLOBAL_RANK=9",
        "PADDLE_LOCAL_RANK=9", "PADDLE_RANK_IN_NODE=9", "PADDLE_LOG_DIR=/old", "FLAGS_selected_gpus=9",
        "CUDA_VISIBLE_DEVICES=0,1,2,3", "CUDA_DEVICE_ORDER=FASTEST_FIRST", "PLAUNCH_AGENT=old",
        "PLAUNCH_JOB_ID=old", "PLAUNCH_GENERATION=9", "PLAUNCH_NODE_RANK=9", "PLAUNCH_NNODES=9", "PLAUNCH_GPU=9",
        "PLAUNCH_TOKEN=00112233445566778899aabbccddeeff",
        "HOME=/root", "RANK_X=1", "MY_RANK=3", "RANK", "MASTER_ADDRESS=keep", NULL,
    };
    char **envp = s_build_w1(1, inherited);
    s_expect(envp, "TORCHELASTIC_USE_AGENT_STORE", "False");
    s_expect(envp, "PLAUNCH_TOKEN", NULL); /* the job's credential never reaches a worker */
    s_expect(envp, "HOME", "/root");
    s_expect(envp, "RANK_X", "1");
    s_expect(envp, "MY_RANK", "3");
    s_expect(envp, "MASTER_ADDRESS", "keep");
    int bare = 0;
    for (char **e = envp; *e; e++)
        bare += strcmp(*e, "RANK") == 0;
    assert_int_equal(bare, 1); /* an entry without '=' is not the variable RANK */
    s_done(envp);
}

static void test_omp_num_threads(void **state)
{
    s_job_init(0, 2, (char *[]){ "OMP_NUM_THREADS=8", NULL });
    char **envp = wenv_build(&s_job, &s_workers[0]);
    s_expect(envp, "OMP_NUM_THREADS", "8"); /* the user's value wins */
    s_done(envp);

    s_job_init(0, 1, NULL);
    envp = wenv_build(&s_job, &s_workers[0]);
    s_expect(envp, "OMP_NUM_THREADS", NULL); /* one worker: leave threading alone */
    s_done(envp);

    s_job_init(1, 2, NULL);
    envp = wenv_build(&s_job, &s_workers[0]);
    s_expect(envp, "OMP_NUM_THREADS", "1");
    s_done(envp);
}

/* As torchrun: TORCH_NCCL_ASYNC_ERROR_HANDLING=1 only when the user set neither it nor its older name. */
static void test_nccl_async_error_handling(void **state)
{
    s_job_init(1, 2, (char *[]){ "TORCH_NCCL_ASYNC_ERROR_HANDLING=0", NULL });
    char **envp = wenv_build(&s_job, &s_workers[0]);
    s_expect(envp, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "0");
    s_done(envp);

    s_job_init(1, 2, (char *[]){ "NCCL_ASYNC_ERROR_HANDLING=3", NULL });
    envp = wenv_build(&s_job, &s_workers[0]);
    s_expect(envp, "TORCH_NCCL_ASYNC_ERROR_HANDLING", NULL);
    s_expect(envp, "NCCL_ASYNC_ERROR_HANDLING", "3");
    s_done(envp);
}

/* CPU workers get no CUDA/GPU variables of plaunch's own; a user's CUDA_VISIBLE_DEVICES passes through. */
static void test_cpu_mode(void **state)
{
    char **envp = s_build_w1(0, (char *[]){ "FLAGS_selected_gpus=3", "PLAUNCH_GPU=3", "TERM=xterm", NULL });
    s_expect(envp, "TERM", "xterm");
    s_done(envp);

    s_job_init(0, 2, (char *[]){ "CUDA_VISIBLE_DEVICES=7", "CUDA_DEVICE_ORDER=FASTEST_FIRST", NULL });
    envp = wenv_build(&s_job, &s_workers[0]);
    s_expect(envp, "CUDA_VISIBLE_DEVICES", "7");
    s_expect(envp, "CUDA_DEVICE_ORDER", "FASTEST_FIRST");
    s_done(envp);
}

/* Every field at its largest still fits the single allocation. */
static void test_largest_values(void **state)
{
    static char endpoints[1024 * 22 + 1], visible[1024 * 4 + 1];
    size_t o = 0;
    for (int i = 0; i < 1024; i++)
        o += (size_t)snprintf(endpoints + o, sizeof endpoints - o, "%s255.255.255.255:65535", i ? "," : "");
    memset(visible, '7', sizeof visible - 1);
    s_job_init(1, 2, (char *[]){ "A=1", NULL });
    s_job.gen.endpoints = endpoints;
    s_job.node.visible_devices = visible;
    memset(s_job.node.host_addr, 'h', sizeof s_job.node.host_addr - 1);
    memset(s_job.gen.master_addr, 'h', sizeof s_job.gen.master_addr - 1);
    memset(s_job.node.job_id, 'j', sizeof s_job.node.job_id - 1);
    memset(s_job.node.log_dir, 'l', sizeof s_job.node.log_dir - 1);
    memset(s_job.node.agent_endpoint, 'a', sizeof s_job.node.agent_endpoint - 1);
    memset(s_workers[1].gpu, 'g', sizeof s_workers[1].gpu - 1);
    char **envp = wenv_build(&s_job, &s_workers[1]);
    assert_non_null(envp);
    s_expect(envp, "PADDLE_TRAINER_ENDPOINTS", endpoints);
    s_expect(envp, "CUDA_VISIBLE_DEVICES", visible);
    s_expect(envp, "PADDLE_LOG_DIR", s_job.node.log_dir);
    char errfile[sizeof s_job.node.log_dir + 32];
    snprintf(errfile, sizeof errfile, "%s/error.5.json", s_job.node.log_dir);
    s_expect(envp, "TORCHELASTIC_ERROR_FILE", errfile);
    s_expect(envp, "PLAUNCH_AGENT", s_job.node.agent_endpoint);
    s_expect(envp, "PLAUNCH_GPU", s_workers[1].gpu);
    s_expect(envp, "MASTER_ADDR", s_job.node.host_addr);
    s_expect(envp, "A", "1");
    s_done(envp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_contract),
        cmocka_unit_test(test_worker_zero_differs_only_in_rank),
        cmocka_unit_test(test_stale_values_dropped),
        cmocka_unit_test(test_omp_num_threads),
        cmocka_unit_test(test_nccl_async_error_handling),
        cmocka_unit_test(test_cpu_mode),
        cmocka_unit_test(test_largest_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
