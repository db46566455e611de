/* Unit tests for the node preflight (launcher/preflight): interface names read as NCCL and Gloo read them, a
 * cuda-compat directory skipped, CUDA_VISIBLE_DEVICES past the driver's GPUs, the memory cgroup, sizes; and the GPU
 * memory wait of a restart driven by a stub of NVML's process query (the real one runs on a GPU machine). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher/preflight/preflight.h"

static char s_dir[256];

static void s_file(const char *rel, const char *text)
{
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/%s", s_dir, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int s_setup(void **state)
{
    (void)state;
    snprintf(s_dir, sizeof s_dir, "/tmp/test_preflight.XXXXXX");
    assert_non_null(mkdtemp(s_dir));
    return 0;
}

static int s_teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* NCCL: prefixes, '=' exact, '^' excludes; Gloo: exact names; down interfaces named. */
static void test_ifname(void **state)
{
    (void)state;
    char net[300], buf[PF_LINE];
    snprintf(net, sizeof net, "%s/net", s_dir);
    s_file("net/eth0/operstate", "up\n");
    s_file("net/ib0/operstate", "down\n");
    s_file("net/lo/operstate", "unknown\n");
    assert_int_equal(preflight_ifname(net, "NCCL_SOCKET_IFNAME", "eth", 1, buf, sizeof buf), 0);
    assert_int_equal(preflight_ifname(net, "NCCL_SOCKET_IFNAME", "=eth", 1, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "NCCL_SOCKET_IFNAME==eth names no interface of this node"));
    assert_int_equal(preflight_ifname(net, "NCCL_SOCKET_IFNAME", "^eth,lo", 1, buf, sizeof buf), 0);
    assert_int_equal(preflight_ifname(net, "NCCL_SOCKET_IFNAME", "ens,ib", 1, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "selects only interfaces that are down (ib0)"));
    assert_int_equal(preflight_ifname(net, "NCCL_SOCKET_IFNAME", "ens,eth0", 1, buf, sizeof buf), 0);
    assert_int_equal(preflight_ifname(net, "GLOO_SOCKET_IFNAME", "eth", 0, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "GLOO_SOCKET_IFNAME=eth names no interface"));
    assert_int_equal(preflight_ifname(net, "GLOO_SOCKET_IFNAME", "eth0", 0, buf, sizeof buf), 0);
}

/* A CUDA 12.4 runtime on a 12.2 driver is named; the same runtime next to a libcuda.so.1 (cuda-compat) is not. */
static void test_cuda_runtime(void **state)
{
    (void)state;
    char ld[700], path[400];
    s_file("cuda/lib/libcudart.so.12.4.127", "");
    snprintf(path, sizeof path, "%s/cuda/lib/libcudart.so.12", s_dir);
    assert_int_equal(symlink("libcudart.so.12.4.127", path), 0);
    s_file("compat/libcudart.so.12.8.90", "");
    s_file("compat/libcuda.so.1", "");
    snprintf(ld, sizeof ld, "%s/compat:%s/cuda/lib", s_dir, s_dir);
    struct pf_input in = { .ld_library_path = ld, .driver_cuda = "12.2", .driver_gpus = -1, .shm_path = "/" };
    struct pf_findings f;
    assert_int_equal(preflight_node(&in, &f), 1);
    assert_non_null(strstr(f.line[0], "/cuda/lib/libcudart.so.12"));
    assert_non_null(strstr(f.line[0], "CUDA 12.4) is newer than the driver supports (CUDA 12.2)"));
    assert_non_null(strstr(f.line[0], "minor-version compatibility"));
    in.driver_cuda = "11.8";
    preflight_node(&in, &f);
    assert_non_null(strstr(f.line[0], "a CUDA 12 runtime cannot run on a CUDA 11 driver"));
    in.driver_cuda = "12.4";
    assert_int_equal(preflight_node(&in, &f), 0);
    snprintf(ld, sizeof ld, "%s/compat", s_dir);
    in.driver_cuda = "11.8";
    assert_int_equal(preflight_node(&in, &f), 0); /* cuda-compat brings its own driver library */
}

static void test_visible_and_sizes(void **state)
{
    (void)state;
    struct pf_input in = { .visible = "0,1,5", .driver_gpus = 4, .shm_path = "/" };
    struct pf_findings f;
    assert_int_equal(preflight_node(&in, &f), 1);
    assert_non_null(strstr(f.line[0], "CUDA_VISIBLE_DEVICES=0,1,5 names GPU 5, but the driver has 4 GPUs (0..3)"));
    in.driver_gpus = -1; /* no driver here: nothing to compare with */
    assert_int_equal(preflight_node(&in, &f), 0);
    uint64_t v;
    assert_int_equal(preflight_parse_size("256M", &v), 0);
    assert_true(v == 256ull << 20);
    assert_int_equal(preflight_parse_size("1G", &v), 0);
    assert_true(v == 1ull << 30);
    assert_int_equal(preflight_parse_size("12x", &v), -1);
    assert_int_equal(preflight_parse_size("-1", &v), -1);
    char buf[32];
    preflight_size(64ull << 20, buf, sizeof buf);
    assert_string_equal(buf, "64 MiB");
    preflight_size(3ull << 29, buf, sizeof buf);
    assert_string_equal(buf, "1.5 GiB");
    /* /dev/shm too small: named with docker's flag */
    in = (struct pf_input){ .cpu_workers = 2, .shm_per_cpu = 1ull << 50, .shm_path = "/", .driver_gpus = -1 };
    assert_int_equal(preflight_node(&in, &f), 1);
    assert_non_null(strstr(f.line[0], "run the container with --shm-size="));
    assert_non_null(strstr(f.line[0], "--ipc=host"));
}

/* The lowest memory.max of the cgroup and its ancestors against what the workers used. */
static void test_cgroup(void **state)
{
    (void)state;
    char root[300];
    snprintf(root, sizeof root, "%s/cg", s_dir);
    s_file("cg/memory.max", "max\n");
    s_file("cg/pod/memory.max", "2147483648\n");
    s_file("cg/pod/ctr/memory.max", "max\n");
    struct pf_findings f;
    memset(&f, 0, sizeof f);
    preflight_cgroup(root, "/pod/ctr", 1024, 3, &f);
    assert_int_equal(f.n, 0);
    preflight_cgroup(root, "/pod/ctr", 3000, 3, &f);
    assert_int_equal(f.n, 1);
    assert_non_null(strstr(f.line[0], "/pod/memory.max) is 2 GiB, below the 2.9 GiB the workers used in generation 3"));
    memset(&f, 0, sizeof f);
    preflight_cgroup(root, "/pod/ctr", 0, 3, &f); /* a first generation: nothing used yet */
    assert_int_equal(f.n, 0);
}

/* ---- the GPU memory wait, with a stub of NVML's process query ------------------------------------------- */

/* The stub: what nvmlDeviceGetComputeRunningProcesses lists at each poll, and which pids still exist. */
struct stub_poll {
    int n;
    struct pf_gpu_proc p[4];
};
static const unsigned s_alive_pids[] = { 777 }; /* someone else's live process */

static int s_alive(unsigned pid)
{
    for (size_t i = 0; i < sizeof s_alive_pids / sizeof *s_alive_pids; i++)
        if (s_alive_pids[i] == pid)
            return 1;
    return 0;
}

static void test_gpuwait_released(void **state)
{
    (void)state;
    const int prev[] = { 4242, 4243 };
    const struct stub_poll polls[] = {
        { 3, { { "0", 4242, 1024 }, { "1", 5000, 512 }, { "1", 777, 100 } } }, /* a worker, a dead child, another */
        { 2, { { "1", 5000, 512 }, { "1", 777, 100 } } },
        { 1, { { "1", 777, 100 } } },                                         /* only someone else's: go */
    };
    struct pf_gpuwait w;
    uint64_t t0 = 1000000000ull;
    pf_gpuwait_begin(&w, 3, prev, 2, t0, 30000000000ull);
    assert_int_equal(pf_gpuwait_feed(&w, polls[0].p, polls[0].n, s_alive, t0), PF_GPUWAIT_WAITING);
    assert_int_equal(w.held, 2);
    assert_true(w.held_mib == 1536);
    assert_non_null(strstr(w.what, "GPU 0: pid 4242 (a worker of the last generation), 1024 MiB"));
    assert_non_null(strstr(w.what, "GPU 1: pid 5000 (exited), 512 MiB"));
    assert_int_equal(pf_gpuwait_feed(&w, polls[1].p, polls[1].n, s_alive, t0 + 200000000ull), PF_GPUWAIT_WAITING);
    assert_int_equal(pf_gpuwait_feed(&w, polls[2].p, polls[2].n, s_alive, t0 + 400000000ull), PF_GPUWAIT_RELEASED);
    assert_int_equal(w.polls, 3);
    assert_int_equal(w.generation, 3);
    assert_true(pf_gpuwait_seconds(&w, t0 + 9000000000ull) > 0.39 && pf_gpuwait_seconds(&w, 0) < 0.41);
    /* a finished wait takes no more answers */
    assert_int_equal(pf_gpuwait_feed(&w, polls[0].p, polls[0].n, s_alive, t0 + 500000000ull), PF_GPUWAIT_RELEASED);
}

static void test_gpuwait_deadline(void **state)
{
    (void)state;
    const int prev[] = { 4242 };
    const struct pf_gpu_proc stuck[] = { { "0", 4242, 2048 } };
    struct pf_gpuwait w;
    pf_gpuwait_begin(&w, 1, prev, 1, 0, 1000000000ull);
    assert_int_equal(pf_gpuwait_feed(&w, stuck, 1, s_alive, 500000000ull), PF_GPUWAIT_WAITING);
    assert_true(pf_gpuwait_seconds(&w, 700000000ull) > 0.69 && pf_gpuwait_seconds(&w, 700000000ull) < 0.71);
    assert_int_equal(pf_gpuwait_feed(&w, stuck, 1, s_alive, 1000000000ull), PF_GPUWAIT_TIMEOUT);
    assert_true(w.held_mib == 2048);
    assert_true(pf_gpuwait_seconds(&w, 5000000000ull) > 0.99 && pf_gpuwait_seconds(&w, 0) < 1.01);
    /* free GPUs at the first look: released at once */
    pf_gpuwait_begin(&w, 2, prev, 1, 0, 1000000000ull);
    assert_int_equal(pf_gpuwait_feed(&w, NULL, 0, s_alive, 1000), PF_GPUWAIT_RELEASED);
    assert_int_equal(w.polls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ifname),
        cmocka_unit_test(test_cuda_runtime),
        cmocka_unit_test(test_visible_and_sizes),
        cmocka_unit_test(test_cgroup),
        cmocka_unit_test(test_gpuwait_released),
        cmocka_unit_test(test_gpuwait_deadline),
    };
    return cmocka_run_group_tests(tests, s_setup, s_teardown);
}
