/* Unit tests for the scheduler layer through opts_load: a Slurm step's and a Kubernetes pod's environment as
 * option values below every explicit source, the srun mode of a batch script, and what is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "launcher/opts/opts.h"
#include "launcher/sched/sched_detect.h"

static struct opts s_o;
static char s_err[2048];

#define ARGV(...) ((char *[]){ "plaunch", __VA_ARGS__, NULL })
#define ENVP(...) ((char *[]){ __VA_ARGS__, NULL })
/* A step of `srun -N3 --ntasks-per-node=1` in job 4567, on its second node. */
#define SLURM_STEP "SLURM_JOB_ID=4567", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=3", "SLURM_NNODES=3", \
                   "SLURM_NODEID=1", "SLURM_PROCID=1", "SLURM_LOCALID=0", "SLURM_STEP_NODELIST=gpu[007-009]", \
                   "SLURM_STEP_TASKS_PER_NODE=1(x3)", "SLURMD_NODENAME=gpu008"

static int s_load(char **argv, char **envp)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    s_err[0] = '\0';
    return opts_load(&s_o, argc, argv, envp, s_err, sizeof s_err);
}

static void s_ok(char **argv, char **envp)
{
    if (s_load(argv, envp) != 0)
        fail_msg("opts_load failed: %s", s_err);
}

/* Expects -1 and a message with every NULL-terminated needle. */
static void s_fails(char **argv, char **envp, ...)
{
    if (s_load(argv, envp) != -1)
        fail_msg("opts_load accepted it");
    va_list ap;
    va_start(ap, envp);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        if (!strstr(s_err, needle))
            fail_msg("message '%s' does not contain '%s'", s_err, needle);
    va_end(ap);
}

/* The value of option name as --print-config shows it, and its source. */
static void s_print(char *out, size_t cap)
{
    FILE *f = fmemopen(out, cap, "w");
    assert_non_null(f);
    opts_print_config(&s_o, f);
    fclose(f);
}

static void test_slurm_step(void **state)
{
    s_ok(ARGV("prog"), ENVP(SLURM_STEP));
    assert_int_equal(s_o.sched_kind, SCHED_SLURM);
    assert_int_equal(s_o.nnodes, 3);
    assert_int_equal(s_o.nnodes_min, 3);
    assert_int_equal(s_o.node_rank, 1);
    /* the first host of the list, at 10000 + (4567 mod 2000) x 10 + 0 */
    assert_string_equal(s_o.master, "gpu007:15670");
    assert_string_equal(s_o.node_hosts, "gpu[007-009]"); /* every node's host by SLURM_NODEID: the ranked join */
    assert_string_equal(s_o.job_id, "slurm-4567.0");
    assert_string_equal(s_o.node_name, "gpu008");
    assert_int_equal(s_o.sched_node0, 0);
    assert_string_equal(s_o.gpus, ""); /* no GPUs in the step: CPU workers, as without Slurm */

    s_ok(ARGV("prog"), ENVP("SLURM_JOB_ID=4567", "SLURM_STEP_ID=3", "SLURM_STEP_NUM_NODES=3", "SLURM_NODEID=0",
                            "SLURM_STEP_NODELIST=gpu[007-009]", "SLURM_STEP_TASKS_PER_NODE=1(x3)"));
    assert_string_equal(s_o.master, "gpu007:15673"); /* another step of the job, another port */
    assert_int_equal(s_o.sched_node0, 1);            /* the first node hosts the coordinator */

    /* One node: a one-node job, its coordinator in process */
    s_ok(ARGV("prog"), ENVP("SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=1", "SLURM_NODEID=0",
                            "SLURM_STEP_NODELIST=n1", "SLURM_STEP_TASKS_PER_NODE=1"));
    assert_int_equal(s_o.nnodes, 1);
    assert_string_equal(s_o.master, "");
}

static void test_explicit_sources_win(void **state)
{
    s_ok(ARGV("--master", "login1:7000", "--job-id", "mine", "prog"), ENVP(SLURM_STEP, "PLAUNCH_NODE_RANK=2"));
    assert_string_equal(s_o.master, "login1:7000");
    assert_string_equal(s_o.job_id, "mine");
    assert_int_equal(s_o.node_rank, 2);
    assert_int_equal(s_o.nnodes, 3); /* what no source gave still comes from Slurm */
    assert_int_equal(s_o.sched_node0, 0); /* the user named the coordinator */

    /* --master-port moves the derived port only */
    s_ok(ARGV("--master-port", "7001", "prog"), ENVP(SLURM_STEP));
    assert_string_equal(s_o.master, "gpu007:7001");

    /* an elastic --nnodes: ranks follow the nodes present, so Slurm's node id is not a requested rank */
    s_ok(ARGV("--nnodes", "2:3", "prog"), ENVP(SLURM_STEP));
    assert_int_equal(s_o.nnodes_min, 2);
    assert_int_equal(s_o.node_rank, -1);

    /* --scheduler none: the environment is ignored */
    s_ok(ARGV("--scheduler", "none", "prog"), ENVP(SLURM_STEP));
    assert_int_equal(s_o.sched_kind, SCHED_NONE);
    assert_int_equal(s_o.nnodes, 1);
    assert_string_equal(s_o.master, "");
}

static void test_slurm_gpus(void **state)
{
    s_ok(ARGV("prog"), ENVP(SLURM_STEP, "CUDA_VISIBLE_DEVICES=2,3", "SLURM_STEP_GPUS=2,3"));
    assert_string_equal(s_o.gpus, "all");
    assert_string_equal(s_o.gpu_scope, ""); /* CUDA_VISIBLE_DEVICES itself is the scope */

    s_ok(ARGV("prog"), ENVP(SLURM_STEP, "SLURM_STEP_GPUS=4,5"));
    assert_string_equal(s_o.gpus, "all");
    assert_string_equal(s_o.gpu_scope, "4,5"); /* ids index the step's GPUs: never one outside them */

    s_ok(ARGV("--gpus", "1", "prog"), ENVP(SLURM_STEP, "SLURM_STEP_GPUS=4,5"));
    assert_string_equal(s_o.gpus, "1");
    assert_string_equal(s_o.gpu_scope, "4,5");

    s_ok(ARGV("--nproc-per-node", "2", "prog"), ENVP(SLURM_STEP, "CUDA_VISIBLE_DEVICES=0,1"));
    assert_string_equal(s_o.gpus, ""); /* an explicit worker count without --gpus: CPU workers, as elsewhere */
}

static void test_slurm_refusals(void **state)
{
    s_fails(ARGV("prog"), ENVP("SLURM_JOB_ID=5", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=3", "SLURM_NODEID=0",
                               "SLURM_LOCALID=1", "SLURM_STEP_NODELIST=n[1-3]", "SLURM_STEP_TASKS_PER_NODE=2(x3)"),
            "runs 2 tasks on a node", "SLURM_STEP_TASKS_PER_NODE=2(x3)",
            "srun --nodes=3 --ntasks-per-node=1 plaunch --nproc-per-node 2", NULL);
    s_fails(ARGV("prog"), ENVP("SLURM_JOB_ID=5", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=2", "SLURM_NODEID=0",
                               "SLURM_STEP_NODELIST=n[1-3]", "SLURM_STEP_TASKS_PER_NODE=1(x2)"),
            "names 3 hosts", NULL);
    s_fails(ARGV("prog"), ENVP("SLURM_JOB_ID=5", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=2", "SLURM_NODEID=0",
                               "SLURM_STEP_NODELIST=n[3-1]", "SLURM_STEP_TASKS_PER_NODE=1(x2)"),
            "SLURM_STEP_NODELIST", "goes down", NULL);
    s_fails(ARGV("prog"), ENVP("SLURM_JOB_ID=5", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=2", "SLURM_NODEID=7",
                               "SLURM_STEP_NODELIST=n[1-2]"),
            "SLURM_NODEID='7'", NULL);
    s_fails(ARGV("--scheduler", "slurm", "prog"), ENVP("HOME=/root"), "not a Slurm job", "sbatch", NULL);
    s_fails(ARGV("--scheduler", "lsf", "prog"), ENVP("HOME=/root"), "auto, none, slurm or k8s", NULL);
}

static void test_slurm_batch_script(void **state)
{
    char *batch[] = { "SLURM_JOB_ID=77", "SLURM_NNODES=4", "SLURM_JOB_NODELIST=n[1-4]", NULL };
    s_ok(ARGV("prog"), batch);
    assert_int_equal(s_o.sched_kind, SCHED_NONE); /* auto: no step, so this node alone, with a note */
    assert_non_null(strstr(s_o.sched_note, "--scheduler slurm"));
    s_ok(ARGV("--scheduler", "slurm", "prog"), batch);
    assert_int_equal(s_o.sched_srun, 1);
    assert_int_equal(s_o.nnodes, 4);
    s_ok(ARGV("--scheduler", "slurm", "--nnodes", "2", "prog"), batch);
    assert_int_equal(s_o.nnodes, 2);
}

static void test_kubernetes(void **state)
{
    s_ok(ARGV("--nnodes", "4", "--master", "train-0.train:6170", "prog"),
         ENVP("KUBERNETES_SERVICE_HOST=10.96.0.1", "JOB_COMPLETION_INDEX=2", "HOSTNAME=train-2"));
    assert_int_equal(s_o.sched_kind, SCHED_K8S);
    assert_int_equal(s_o.node_rank, 2);
    assert_int_equal(s_o.sched_node0, 0);

    s_ok(ARGV("--nnodes", "4", "--master", "train-0.train:6170", "prog"),
         ENVP("KUBERNETES_SERVICE_HOST=10.96.0.1", "JOB_COMPLETION_INDEX=0"));
    assert_int_equal(s_o.sched_node0, 1);

    /* a PyTorchJob: the operator's variables */
    s_ok(ARGV("prog"), ENVP("KUBERNETES_SERVICE_HOST=10.96.0.1", "PET_NNODES=3", "PET_NODE_RANK=1", "RANK=1",
                            "MASTER_ADDR=pt-master-0", "MASTER_PORT=23456", "PET_MAX_RESTARTS=2", "WORLD_SIZE=3"));
    assert_int_equal(s_o.nnodes, 3);
    assert_int_equal(s_o.node_rank, 1);
    assert_string_equal(s_o.master, "pt-master-0:23456");
    assert_int_equal(s_o.max_restarts, 2);

    /* RANK alone is any torch launcher's: not a pod of ours, unless forced */
    s_ok(ARGV("prog"), ENVP("KUBERNETES_SERVICE_HOST=10.96.0.1", "RANK=3"));
    assert_int_equal(s_o.sched_kind, SCHED_NONE);
    s_fails(ARGV("--scheduler", "k8s", "prog"), ENVP("HOSTNAME=x"), "JOB_COMPLETION_INDEX", "PET_NODE_RANK", NULL);
    s_fails(ARGV("prog"), ENVP("KUBERNETES_SERVICE_HOST=1", "JOB_COMPLETION_INDEX=x"), "not a node rank", NULL);
}

/* Kubernetes: every pod's host by rank, where the controller's naming gives it; the user's --node-hosts wins. */
static void test_kubernetes_hosts(void **state)
{
    char out[8192], host[256];
    (void)state;
#define POD(h, ...) ENVP("KUBERNETES_SERVICE_HOST=10.96.0.1", "HOSTNAME=" h, __VA_ARGS__)
    s_ok(ARGV("--nnodes", "3", "--master", "train-0.train:6170", "prog"), POD("train-2", "JOB_COMPLETION_INDEX=2"));
    assert_string_equal(s_o.node_hosts, "train-[0-2]");
    assert_string_equal(s_o.node_hosts_suffix, ".train");
    assert_int_equal(opts_node_host(&s_o, 1, host, sizeof host, s_err, sizeof s_err), 0);
    assert_string_equal(host, "train-1.train");
    s_print(out, sizeof out);
    assert_non_null(strstr(out, "Kubernetes: HOSTNAME=train-2 and the coordinator's host, each name + '.train'"));
    assert_non_null(strstr(out, "ranked join: the pods' hosts train-0.train .. train-2.train"));
    /* a JobSet's pod, its FQDN as host name (setHostnameAsFQDN), the coordinator's full name */
    s_ok(ARGV("--nnodes", "12", "--master", "js-node-0-0.js.ns.svc.cluster.local:6170", "prog"),
         POD("js-node-0-11.js.ns.svc.cluster.local", "JOB_COMPLETION_INDEX=11"));
    assert_string_equal(s_o.node_hosts, "js-node-0-[0-11]");
    assert_int_equal(opts_node_host(&s_o, 11, host, sizeof host, s_err, sizeof s_err), 0);
    assert_string_equal(host, "js-node-0-11.js.ns.svc.cluster.local");
    /* a PyTorchJob: <job>-master-0, then <job>-worker-<rank - 1>; no suffix */
    s_ok(ARGV("prog"), POD("pt-worker-1", "PET_NODE_RANK=2", "PET_NNODES=4", "MASTER_ADDR=pt-master-0",
                           "MASTER_PORT=23456"));
    assert_string_equal(s_o.node_hosts, "pt-master-0,pt-worker-[0-2]");
    assert_string_equal(s_o.node_hosts_suffix, "");
    /* the user's list wins, and is said to */
    s_ok(ARGV("--nnodes", "3", "--master", "train-0.train:6170", "--node-hosts", "a,b,c", "--print-config"),
         POD("train-2", "JOB_COMPLETION_INDEX=2"));
    assert_string_equal(s_o.node_hosts, "a,b,c");
    assert_string_equal(s_o.node_hosts_suffix, "");
    s_print(out, sizeof out);
    assert_non_null(strstr(out, "ranked join: the hosts given by --node-hosts; nothing derived"));
    /* not derived: a name without the index, a coordinator that is not rank 0's name, an elastic size */
    s_ok(ARGV("--nnodes", "3", "--master", "train-0.train:6170", "--print-config"),
         POD("trainer", "JOB_COMPLETION_INDEX=2"));
    assert_string_equal(s_o.node_hosts, "");
    s_print(out, sizeof out);
    assert_non_null(strstr(out, "ranked join: not used: the pod's host name 'trainer' does not end in -2"));
    s_ok(ARGV("--nnodes", "3", "--master", "10.0.0.1:6170", "prog"), POD("train-2", "JOB_COMPLETION_INDEX=2"));
    assert_string_equal(s_o.node_hosts, "");
    assert_non_null(strstr(s_o.node_hosts_note, "not used: the coordinator's host '10.0.0.1' is not rank 0's name"));
    s_ok(ARGV("--nnodes", "3", "--master", "train-01.train:6170", "prog"), POD("train-2", "JOB_COMPLETION_INDEX=2"));
    assert_string_equal(s_o.node_hosts, "");
    s_ok(ARGV("--nnodes", "2:3", "--master", "train-0.train:6170", "prog"), POD("train-2", "JOB_COMPLETION_INDEX=2"));
    assert_string_equal(s_o.node_hosts, "");
    assert_non_null(strstr(s_o.node_hosts_note, "not used: an elastic --nnodes 2:3"));
    s_ok(ARGV("--nnodes", "3", "--master", "pt-master-0:1", "prog"), POD("pt-worker-0", "PET_NODE_RANK=2"));
    assert_string_equal(s_o.node_hosts, ""); /* worker 0 is rank 1, not 2 */
#undef POD
}

static void test_print_config(void **state)
{
    char out[8192];
    s_ok(ARGV("--print-config", "--grace", "5"), ENVP(SLURM_STEP, "PLAUNCH_TOKEN=00112233445566778899aabbccddeeff"));
    s_print(out, sizeof out);
    assert_non_null(strstr(out, "Slurm job 4567, step 0"));
    assert_non_null(strstr(out, "Slurm: SLURM_NODEID=1"));
    assert_non_null(strstr(out, "Slurm: SLURM_STEP_NUM_NODES=3"));
    assert_non_null(strstr(out, "--grace"));
    assert_non_null(strstr(out, "environment PLAUNCH_TOKEN"));
    assert_null(strstr(out, "00112233445566778899aabbccddeeff")); /* a secret is never printed */
    assert_non_null(strstr(out, "coordinator: gpu007:15670"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slurm_step),          cmocka_unit_test(test_explicit_sources_win),
        cmocka_unit_test(test_slurm_gpus),          cmocka_unit_test(test_slurm_refusals),
        cmocka_unit_test(test_slurm_batch_script),  cmocka_unit_test(test_kubernetes),
        cmocka_unit_test(test_kubernetes_hosts),    cmocka_unit_test(test_print_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
