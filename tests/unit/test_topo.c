/* Unit tests for the binding plan (launcher/topo): hwloc's own inputs stand for the machines, synthetic topologies
 * (HWLOC_SYNTHETIC) for CPU workers and the XML fixtures of tests/fixtures/topo/ (GPU servers, a VM), and every
 * rank's line of the plan is checked as plaunch.log and --print-binding show it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/topo/topo.h"

static const char *const s_2s8g_auto[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (default: numa)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (default: numa)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (default: numa)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (default: numa)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (default: numa)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (default: numa)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (default: numa)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (default: numa)",
};
static const char *const s_2s8g_torch_node[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (numa)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (numa)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (numa)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (numa)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (numa)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (numa)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (numa)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (numa)",
};
static const char *const s_2s8g_torch_socket[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (socket)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (socket)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (socket)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (socket)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (socket)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (socket)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (socket)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (socket)",
};
static const char *const s_2s8g_torch_exclusive[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-3, 2 cores: GPU locality (cores)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 4-7, 2 cores: GPU locality (cores)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 0, CPUs 8-11, 2 cores: GPU locality (cores)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 0, CPUs 12-15, 2 cores: GPU locality (cores)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 1, CPUs 16-19, 2 cores: GPU locality (cores)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 1, CPUs 20-23, 2 cores: GPU locality (cores)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 1, CPUs 24-27, 2 cores: GPU locality (cores)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 1, CPUs 28-31, 2 cores: GPU locality (cores)",
};
static const char *const s_2s8g_torch_core_complex[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-1, 1 core: GPU locality (core-complex)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 2-3, 1 core: GPU locality (core-complex)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 0, CPUs 4-5, 1 core: GPU locality (core-complex)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 0, CPUs 6-7, 1 core: GPU locality (core-complex)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 1, CPUs 16-17, 1 core: GPU locality (core-complex)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 1, CPUs 18-19, 1 core: GPU locality (core-complex)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 1, CPUs 20-21, 1 core: GPU locality (core-complex)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 1, CPUs 22-23, 1 core: GPU locality (core-complex)",
};
static const char *const s_1s4g_auto[] = {
    "rank 0: GPU 0, NUMA -, CPUs 0-15 (not bound): one NUMA node: not bound (the default binds only where there are several)",
    "rank 1: GPU 1, NUMA -, CPUs 0-15 (not bound): one NUMA node: not bound (the default binds only where there are several)",
    "rank 2: GPU 2, NUMA -, CPUs 0-15 (not bound): one NUMA node: not bound (the default binds only where there are several)",
    "rank 3: GPU 3, NUMA -, CPUs 0-15 (not bound): one NUMA node: not bound (the default binds only where there are several)",
};
static const char *const s_1s4g_torch_node[] = {
    "rank 0: GPU 0 (0000:17:00.0), NUMA 0, CPUs 0-3, 2 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:31:00.0), NUMA 0, CPUs 4-7, 2 cores: even split: the GPU has no NUMA locality",
    "rank 2: GPU 2 (0000:b1:00.0), NUMA 0, CPUs 8-11, 2 cores: even split: the GPU has no NUMA locality",
    "rank 3: GPU 3 (0000:ca:00.0), NUMA 0, CPUs 12-15, 2 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_1s4g_torch_socket[] = {
    "rank 0: GPU 0 (0000:17:00.0), NUMA 0, CPUs 0-3, 2 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:31:00.0), NUMA 0, CPUs 4-7, 2 cores: even split: the GPU has no NUMA locality",
    "rank 2: GPU 2 (0000:b1:00.0), NUMA 0, CPUs 8-11, 2 cores: even split: the GPU has no NUMA locality",
    "rank 3: GPU 3 (0000:ca:00.0), NUMA 0, CPUs 12-15, 2 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_1s4g_torch_exclusive[] = {
    "rank 0: GPU 0 (0000:17:00.0), NUMA 0, CPUs 0-3, 2 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:31:00.0), NUMA 0, CPUs 4-7, 2 cores: even split: the GPU has no NUMA locality",
    "rank 2: GPU 2 (0000:b1:00.0), NUMA 0, CPUs 8-11, 2 cores: even split: the GPU has no NUMA locality",
    "rank 3: GPU 3 (0000:ca:00.0), NUMA 0, CPUs 12-15, 2 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_1s4g_torch_core_complex[] = {
    "rank 0: GPU 0 (0000:17:00.0), NUMA 0, CPUs 0-3, 2 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:31:00.0), NUMA 0, CPUs 4-7, 2 cores: even split: the GPU has no NUMA locality",
    "rank 2: GPU 2 (0000:b1:00.0), NUMA 0, CPUs 8-11, 2 cores: even split: the GPU has no NUMA locality",
    "rank 3: GPU 3 (0000:ca:00.0), NUMA 0, CPUs 12-15, 2 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_dgx_auto[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (default: numa)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (default: numa)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (default: numa)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (default: numa)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 2, CPUs 32-47, 8 cores: GPU locality (default: numa)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 2, CPUs 32-47, 8 cores: GPU locality (default: numa)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 3, CPUs 48-63, 8 cores: GPU locality (default: numa)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 3, CPUs 48-63, 8 cores: GPU locality (default: numa)",
};
static const char *const s_dgx_torch_node[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (numa)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 0-15, 8 cores: GPU locality (numa)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (numa)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 1, CPUs 16-31, 8 cores: GPU locality (numa)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 2, CPUs 32-47, 8 cores: GPU locality (numa)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 2, CPUs 32-47, 8 cores: GPU locality (numa)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 3, CPUs 48-63, 8 cores: GPU locality (numa)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 3, CPUs 48-63, 8 cores: GPU locality (numa)",
};
static const char *const s_dgx_torch_socket[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0-1, CPUs 0-31, 16 cores: GPU locality (socket)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0-1, CPUs 0-31, 16 cores: GPU locality (socket)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 0-1, CPUs 0-31, 16 cores: GPU locality (socket)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 0-1, CPUs 0-31, 16 cores: GPU locality (socket)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 2-3, CPUs 32-63, 16 cores: GPU locality (socket)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 2-3, CPUs 32-63, 16 cores: GPU locality (socket)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 2-3, CPUs 32-63, 16 cores: GPU locality (socket)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 2-3, CPUs 32-63, 16 cores: GPU locality (socket)",
};
static const char *const s_dgx_torch_exclusive[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-7, 4 cores: GPU locality (cores)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 8-15, 4 cores: GPU locality (cores)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 1, CPUs 16-23, 4 cores: GPU locality (cores)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 1, CPUs 24-31, 4 cores: GPU locality (cores)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 2, CPUs 32-39, 4 cores: GPU locality (cores)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 2, CPUs 40-47, 4 cores: GPU locality (cores)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 3, CPUs 48-55, 4 cores: GPU locality (cores)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 3, CPUs 56-63, 4 cores: GPU locality (cores)",
};
static const char *const s_dgx_torch_core_complex[] = {
    "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-7, 4 cores: GPU locality (core-complex)",
    "rank 1: GPU 1 (0000:0f:00.0), NUMA 0, CPUs 8-15, 4 cores: GPU locality (core-complex)",
    "rank 2: GPU 2 (0000:47:00.0), NUMA 1, CPUs 16-23, 4 cores: GPU locality (core-complex)",
    "rank 3: GPU 3 (0000:4e:00.0), NUMA 1, CPUs 24-31, 4 cores: GPU locality (core-complex)",
    "rank 4: GPU 4 (0000:87:00.0), NUMA 2, CPUs 32-39, 4 cores: GPU locality (core-complex)",
    "rank 5: GPU 5 (0000:90:00.0), NUMA 2, CPUs 40-47, 4 cores: GPU locality (core-complex)",
    "rank 6: GPU 6 (0000:b7:00.0), NUMA 3, CPUs 48-55, 4 cores: GPU locality (core-complex)",
    "rank 7: GPU 7 (0000:bd:00.0), NUMA 3, CPUs 56-63, 4 cores: GPU locality (core-complex)",
};
static const char *const s_vm_auto[] = {
    "rank 0: GPU 0 (0000:00:05.0), NUMA 0, CPUs 0-3, 4 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:00:06.0), NUMA 1, CPUs 4-7, 4 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_vm_torch_node[] = {
    "rank 0: GPU 0 (0000:00:05.0), NUMA 0, CPUs 0-3, 4 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:00:06.0), NUMA 1, CPUs 4-7, 4 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_vm_torch_socket[] = {
    "rank 0: GPU 0 (0000:00:05.0), NUMA 0, CPUs 0-3, 4 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:00:06.0), NUMA 1, CPUs 4-7, 4 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_vm_torch_exclusive[] = {
    "rank 0: GPU 0 (0000:00:05.0), NUMA 0, CPUs 0-3, 4 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:00:06.0), NUMA 1, CPUs 4-7, 4 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_vm_torch_core_complex[] = {
    "rank 0: GPU 0 (0000:00:05.0), NUMA 0, CPUs 0-3, 4 cores: even split: the GPU has no NUMA locality",
    "rank 1: GPU 1 (0000:00:06.0), NUMA 1, CPUs 4-7, 4 cores: even split: the GPU has no NUMA locality",
};
static const char *const s_syn_pack_2_numa_1_core_4_pu_1_auto[] = {
    "rank 0: CPU worker, NUMA 0, CPUs 0-2, 3 cores: even split (CPU worker)",
    "rank 1: CPU worker, NUMA 0-1, CPUs 3-5, 3 cores: even split (CPU worker)",
    "rank 2: CPU worker, NUMA 1, CPUs 6-7, 2 cores: even split (CPU worker)",
};
static const char *const s_syn_pack_2_numa_1_core_4_pu_2_cores[] = {
    "rank 0: CPU worker, NUMA 0, CPUs 0-3, 2 cores: even split (CPU worker)",
    "rank 1: CPU worker, NUMA 0, CPUs 4-7, 2 cores: even split (CPU worker)",
    "rank 2: CPU worker, NUMA 1, CPUs 8-11, 2 cores: even split (CPU worker)",
    "rank 3: CPU worker, NUMA 1, CPUs 12-15, 2 cores: even split (CPU worker)",
};

static const char s_gpus8[8][64] = { "0", "1", "2", "3", "4", "5", "6", "7" };

/* Loads fixture (an XML file of tests/fixtures/topo/, or "syn:DESCRIPTION"), plans n workers (GPU entries, or NULL
 * for CPU workers) by spec (a --cpu-bind value, or "torch:" and a --numa-binding one) and checks each line. */
static void s_expect_in(const char *fixture, const char *spec, int n, const char (*gpus)[64], const char *allowed,
                        const char *const *want)
{
    char path[4096], err[512] = "", line[1024];
    const char *src = getenv("PLAUNCH_SRC");
    unsetenv("HWLOC_XMLFILE");
    unsetenv("HWLOC_SYNTHETIC");
    if (strncmp(fixture, "syn:", 4) == 0) {
        setenv("HWLOC_SYNTHETIC", fixture + 4, 1);
    } else {
        snprintf(path, sizeof path, "%s/tests/fixtures/topo/%s", src ? src : ".", fixture);
        setenv("HWLOC_XMLFILE", path, 1);
    }
    setenv("HWLOC_THISSYSTEM", "0", 1);
    int torch = strncmp(spec, "torch:", 6) == 0, mode;
    const char *val = torch ? spec + 6 : spec;
    if (topo_mode_parse(val, torch, &mode, err, sizeof err) < 0)
        fail_msg("%s: %s", spec, err);
    cpu_set_t mask;
    if (allowed)
        assert_int_equal(topo_cpus_parse(allowed, strlen(allowed), &mask), 0);
    struct topo_input in = { .mode = mode, .list = strncmp(val, "list:", 5) == 0 ? val + 5 : NULL, .n = n,
                             .gpus = gpus, .allowed = allowed ? &mask : NULL };
    struct topo_plan plan;
    if (topo_plan_build(&in, &plan, err, sizeof err) < 0)
        fail_msg("%s %s: %s", fixture, spec, err);
    for (int i = 0; i < n; i++) {
        topo_plan_line(&plan, i, i, line, sizeof line);
        if (strcmp(line, want[i]) != 0)
            fail_msg("%s %s rank %d:\n got  '%s'\n want '%s'", fixture, spec, i, line, want[i]);
    }
    topo_plan_free(&plan);
    unsetenv("HWLOC_XMLFILE");
    unsetenv("HWLOC_SYNTHETIC");
}

static void s_expect(const char *fixture, const char *spec, int n, const char (*gpus)[64], const char *const *want)
{
    s_expect_in(fixture, spec, n, gpus, NULL, want);
}

/* 2 sockets, 4 GPUs each: a GPU's worker on its socket's CPUs (one NUMA node per socket, so node = socket). */
static void test_two_socket_8gpu(void **state)
{
    (void)state;
    s_expect("2s8g.xml", "auto", 8, s_gpus8, s_2s8g_auto);
    s_expect("2s8g.xml", "torch:node", 8, s_gpus8, s_2s8g_torch_node);
    s_expect("2s8g.xml", "numa", 8, s_gpus8, s_2s8g_torch_node);
    s_expect("2s8g.xml", "torch:socket", 8, s_gpus8, s_2s8g_torch_socket);
    s_expect("2s8g.xml", "torch:exclusive", 8, s_gpus8, s_2s8g_torch_exclusive);
    s_expect("2s8g.xml", "cores", 8, s_gpus8, s_2s8g_torch_exclusive);
    /* no cache in the topology: each core is its own complex */
    s_expect("2s8g.xml", "torch:core-complex", 8, s_gpus8, s_2s8g_torch_core_complex);
}

/* One socket, one NUMA node: no locality to choose; the default leaves the workers alone, a mode splits evenly. */
static void test_one_socket_4gpu(void **state)
{
    (void)state;
    s_expect_in("1s4g.xml", "auto", 4, s_gpus8, "0-15", s_1s4g_auto);
    s_expect("1s4g.xml", "torch:node", 4, s_gpus8, s_1s4g_torch_node);
    s_expect("1s4g.xml", "torch:socket", 4, s_gpus8, s_1s4g_torch_socket);
    s_expect("1s4g.xml", "torch:exclusive", 4, s_gpus8, s_1s4g_torch_exclusive);
    s_expect("1s4g.xml", "torch:core-complex", 4, s_gpus8, s_1s4g_torch_core_complex);
}

/* DGX-like: 2 sockets of 2 NUMA nodes, 2 GPUs per NUMA node, 2 L3 complexes per NUMA node. */
static void test_dgx(void **state)
{
    (void)state;
    s_expect("dgx.xml", "auto", 8, s_gpus8, s_dgx_auto);
    s_expect("dgx.xml", "torch:node", 8, s_gpus8, s_dgx_torch_node);
    s_expect("dgx.xml", "torch:socket", 8, s_gpus8, s_dgx_torch_socket);
    s_expect("dgx.xml", "torch:exclusive", 8, s_gpus8, s_dgx_torch_exclusive);
    s_expect("dgx.xml", "torch:core-complex", 8, s_gpus8, s_dgx_torch_core_complex);
}

/* A VM: two NUMA nodes, GPUs without PCI locality: the even split, and the plan says why. */
static void test_vm_without_locality(void **state)
{
    (void)state;
    s_expect("vm.xml", "auto", 2, s_gpus8, s_vm_auto);
    s_expect("vm.xml", "torch:node", 2, s_gpus8, s_vm_torch_node);
    s_expect("vm.xml", "torch:socket", 2, s_gpus8, s_vm_torch_socket);
    s_expect("vm.xml", "torch:exclusive", 2, s_gpus8, s_vm_torch_exclusive);
    s_expect("vm.xml", "torch:core-complex", 2, s_gpus8, s_vm_torch_core_complex);
}

/* CPU workers on synthetic machines: the cores split evenly, the first ranks get the extra core. */
static void test_cpu_workers_even_split(void **state)
{
    (void)state;
    s_expect("syn:pack:2 numa:1 core:4 pu:1", "auto", 3, NULL, s_syn_pack_2_numa_1_core_4_pu_1_auto);
    s_expect("syn:pack:2 numa:1 core:4 pu:2", "cores", 4, NULL, s_syn_pack_2_numa_1_core_4_pu_2_cores);
}

/* The launcher's mask is the user's: the default leaves it alone, a mode binds inside it, never outside. */
static void test_user_mask_never_widened(void **state)
{
    (void)state;
    static const char *const masked_auto[] = {
        "rank 0: GPU 0, NUMA -, CPUs 0-7 (not bound): user mask: plaunch was started bound (taskset, numactl, Slurm "
        "--cpu-bind, a cpuset); left as given",
        "rank 1: GPU 4, NUMA -, CPUs 0-7 (not bound): user mask: plaunch was started bound (taskset, numactl, Slurm "
        "--cpu-bind, a cpuset); left as given",
    };
    static const char gpus[2][64] = { "0", "4" };
    s_expect_in("2s8g.xml", "auto", 2, gpus, "0-7", masked_auto);
    static const char *const masked_node[] = {
        "rank 0: GPU 0 (0000:07:00.0), NUMA 0, CPUs 0-7, 4 cores: GPU locality (numa)",
        "rank 1: GPU 4 (0000:87:00.0), NUMA 0, CPUs 0-7 (not bound): user mask: none of its NUMA node's CPUs is "
        "allowed; left as given",
    };
    s_expect_in("2s8g.xml", "numa", 2, gpus, "0-7", masked_node);
    static const char *const none[] = {
        "rank 0: GPU 0, NUMA -, CPUs 3 (not bound): --cpu-bind none: the launcher's CPUs",
        "rank 1: GPU 4, NUMA -, CPUs 3 (not bound): --cpu-bind none: the launcher's CPUs",
    };
    s_expect_in("2s8g.xml", "none", 2, gpus, "3", none);
    /* a memory policy of its own (numactl --membind): placed by the user too */
    char path[4096], err[256], line[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/topo/2s8g.xml", getenv("PLAUNCH_SRC") ? getenv("PLAUNCH_SRC") : ".");
    setenv("HWLOC_XMLFILE", path, 1);
    struct topo_input in = { .mode = TOPO_AUTO, .n = 2, .gpus = gpus, .mem_bound = 1 };
    struct topo_plan plan;
    assert_int_equal(topo_plan_build(&in, &plan, err, sizeof err), 0);
    topo_plan_line(&plan, 1, -1, line, sizeof line);
    assert_non_null(strstr(line, "local rank 1: GPU 4, NUMA -, CPUs "));
    assert_non_null(strstr(line, "(not bound): user mask: plaunch was started bound"));
    topo_plan_free(&plan);
    unsetenv("HWLOC_XMLFILE");
}

/* --cpu-bind list: one CPU list per local rank, cut to the launcher's mask; a list outside it is refused. */
static void test_list(void **state)
{
    (void)state;
    static const char *const want[] = {
        "rank 0: CPU worker, NUMA -, CPUs 0-1, 2 cores: user list (--cpu-bind list)",
        "rank 1: CPU worker, NUMA -, CPUs 4, 1 core: user list (--cpu-bind list)",
        "rank 2: CPU worker, NUMA -, CPUs 0-1, 2 cores: user list (--cpu-bind list)",
    };
    s_expect_in("2s8g.xml", "list:0-1:4,40", 3, NULL, "0-7", want);
    int mode;
    char err[512];
    cpu_set_t mask;
    topo_cpus_parse("0-7", 3, &mask);
    struct topo_input in = { .mode = TOPO_LIST, .list = "8-9", .n = 1, .allowed = &mask };
    struct topo_plan plan;
    assert_int_equal(topo_plan_build(&in, &plan, err, sizeof err), -1);
    assert_non_null(strstr(err, "never widens"));
    assert_int_equal(topo_mode_parse("list:0-1:x", 0, &mode, err, sizeof err), -1);
    assert_non_null(strstr(err, "'x' is not a CPU list"));
}

static void test_spellings(void **state)
{
    (void)state;
    int mode;
    char err[256];
    assert_int_equal(topo_mode_parse("exclusive", 1, &mode, err, sizeof err), 0);
    assert_int_equal(mode, TOPO_EXCLUSIVE);
    assert_int_equal(topo_mode_parse("cores", 0, &mode, err, sizeof err), 0);
    assert_int_equal(mode, TOPO_EXCLUSIVE);
    assert_int_equal(topo_mode_parse("cores", 1, &mode, err, sizeof err), -1); /* not torchrun's word */
    assert_non_null(strstr(err, "torchrun's node, socket, exclusive or core-complex"));
    assert_int_equal(topo_mode_parse("numa", 0, &mode, err, sizeof err), 0);
    assert_int_equal(mode, TOPO_NODE);
    assert_int_equal(topo_mode_parse("bogus", 0, &mode, err, sizeof err), -1);
    cpu_set_t s;
    char buf[64];
    assert_int_equal(topo_cpus_parse("0-3,8,10-11", 11, &s), 0);
    topo_cpus_format(&s, buf, sizeof buf);
    assert_string_equal(buf, "0-3,8,10-11");
    assert_int_equal(topo_cpus_parse("3-1", 3, &s), -1);
    assert_int_equal(topo_cpus_parse("1,", 2, &s), -1);
    assert_int_equal(topo_cpus_parse("99999", 5, &s), -1);
    assert_int_equal(topo_cpus_parse("", 0, &s), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_socket_8gpu),
        cmocka_unit_test(test_one_socket_4gpu),
        cmocka_unit_test(test_dgx),
        cmocka_unit_test(test_vm_without_locality),
        cmocka_unit_test(test_cpu_workers_even_split),
        cmocka_unit_test(test_user_mask_never_widened),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_spellings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
