/* topo_plan: the binding plan of one node's workers from hwloc's topology (the machine's, or HWLOC_XMLFILE /
 * HWLOC_SYNTHETIC): GPU locality by torchrun's modes, an even split of cores where there is none, the user's list;
 * never outside the CPUs the launcher was given. */
#include "launcher/topo/topo.h"

#include <ctype.h>
#include <dirent.h>
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct s_gpu {
    unsigned dom, bus, dev, fn;
    hwloc_obj_t obj;
};

struct s_ctx {
    hwloc_topology_t t;
    hwloc_bitmap_t allowed;
    const struct topo_input *in;
    struct topo_plan *plan;
    struct s_gpu *gpus;
    int ngpus;
    hwloc_obj_t *numa;         /* per worker: its GPU's NUMA node, NULL without locality */
    hwloc_bitmap_t *cpus;      /* per worker: the CPUs chosen */
};

/* NUMA nodes of this machine, from sysfs (no topology load for the common one-node case). */
static int s_sys_numa_nodes(void)
{
    DIR *d = opendir("/sys/devices/system/node");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, "node", 4) == 0 && isdigit((unsigned char)e->d_name[4]);
    if (d)
        closedir(d);
    return n;
}

/* Every worker keeps the launcher's CPUs; why says so. */
static void s_unbound(struct topo_plan *plan, const cpu_set_t *allowed, const char *why)
{
    plan->active = 0;
    snprintf(plan->note, sizeof plan->note, "%s", why);
    for (int i = 0; i < plan->n; i++) {
        struct topo_bind *b = &plan->w[i];
        b->cpus = *allowed;
        b->ncpus = b->ncores = CPU_COUNT(allowed);
        b->apply = 0;
        snprintf(b->why, sizeof b->why, "%s", why);
    }
}

static int s_list(const struct topo_input *in, struct topo_plan *plan, const cpu_set_t *allowed, char *err,
                  size_t errlen)
{
    const char *l = in->list ? in->list : "";
    int count = 1;
    for (const char *p = l; *p; p++)
        count += *p == ':';
    for (int i = 0; i < plan->n; i++) {
        struct topo_bind *b = &plan->w[i];
        const char *p = l;
        for (int k = i % count; k > 0; k--)
            p = strchr(p, ':') + 1;
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        cpu_set_t set;
        if (topo_cpus_parse(p, len, &set) < 0) {
            snprintf(err, errlen, "--cpu-bind list: entry %d is not a CPU list", i % count);
            return -1;
        }
        CPU_AND(&b->cpus, &set, allowed);
        if (CPU_COUNT(&b->cpus) == 0) {
            char have[256];
            topo_cpus_format(allowed, have, sizeof have);
            snprintf(err, errlen, "--cpu-bind list: local rank %d's CPUs %.*s are none of the CPUs plaunch may use "
                     "(%s): plaunch never widens the mask it was given; name CPUs among those", i,
                     len > 100 ? 100 : (int)len, p, have);
            return -1;
        }
        b->ncpus = b->ncores = CPU_COUNT(&b->cpus);
        b->apply = 1;
        snprintf(b->why, sizeof b->why, "user list (--cpu-bind list)");
    }
    plan->active = 1;
    snprintf(plan->note, sizeof plan->note, "each local rank on its entry of --cpu-bind list");
    return 0;
}

static int s_gpu_cmp(const void *a, const void *b)
{
    const struct s_gpu *x = a, *y = b;
    if (x->dom != y->dom)
        return x->dom < y->dom ? -1 : 1;
    if (x->bus != y->bus)
        return x->bus < y->bus ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return (int)x->fn - (int)y->fn;
}

/* NVIDIA display controllers (vendor 0x10de, class 03xx) in PCI bus order: NVML's and CUDA_DEVICE_ORDER=PCI_BUS_ID's
 * numbering, which plaunch uses. */
static int s_find_gpus(struct s_ctx *c)
{
    int n = 0, cap = 0;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(c->t, NULL); o; o = hwloc_get_next_pcidev(c->t, o)) {
        if (o->attr->pcidev.vendor_id != 0x10de || (o->attr->pcidev.class_id >> 8) != 0x03)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            struct s_gpu *g = realloc(c->gpus, (size_t)cap * sizeof *g);
            if (!g)
                return -1;
            c->gpus = g;
        }
        c->gpus[n++] = (struct s_gpu){ o->attr->pcidev.domain, o->attr->pcidev.bus, o->attr->pcidev.dev,
                                       o->attr->pcidev.func, o };
    }
    if (n)
        qsort(c->gpus, (size_t)n, sizeof *c->gpus, s_gpu_cmp);
    c->ngpus = n;
    return 0;
}

/* The GPU of an entry: an index in PCI order; a UUID (or a number past the last GPU) is not found. -1 then. */
static int s_gpu_index(const struct s_ctx *c, const char *entry)
{
    if (!entry[0] || strspn(entry, "0123456789") != strlen(entry) || strlen(entry) > 6)
        return -1;
    int i = atoi(entry);
    return i < c->ngpus ? i : -1;
}

/* The NUMA node of a GPU: the first node of its locality, or NULL when its locality is the whole machine (one
 * NUMA node, a VM that gives PCI devices no locality). */
static hwloc_obj_t s_gpu_numa(const struct s_ctx *c, int g)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(c->t, c->gpus[g].obj);
    hwloc_obj_t root = hwloc_get_root_obj(c->t);
    if (!anc || !anc->nodeset || hwloc_bitmap_iszero(anc->nodeset) ||
        hwloc_bitmap_isequal(anc->nodeset, root->nodeset))
        return NULL;
    hwloc_obj_t node = NULL;
    while ((node = hwloc_get_next_obj_by_type(c->t, HWLOC_OBJ_NUMANODE, node)))
        if (hwloc_bitmap_intersects(node->nodeset, anc->nodeset))
            return node;
    return NULL;
}

/* Units (cores, or last-level caches) inside within, intersected with the allowed CPUs, in logical order. */
static int s_units(const struct s_ctx *c, hwloc_obj_type_t type, hwloc_const_bitmap_t within, hwloc_bitmap_t *out,
                   int max)
{
    int n = 0;
    hwloc_obj_t o = NULL;
    while (n < max && (o = hwloc_get_next_obj_by_type(c->t, type, o))) {
        hwloc_bitmap_t s = hwloc_bitmap_alloc();
        hwloc_bitmap_and(s, o->cpuset, within);
        hwloc_bitmap_and(s, s, c->allowed);
        if (hwloc_bitmap_iszero(s))
            hwloc_bitmap_free(s);
        else
            out[n++] = s;
    }
    return n;
}

static void s_free_units(hwloc_bitmap_t *u, int n)
{
    for (int i = 0; i < n; i++)
        hwloc_bitmap_free(u[i]);
}

static hwloc_obj_type_t s_core_type(const struct s_ctx *c)
{
    return hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
}

/* Slice k of m over n units, as torchrun's exclusive mode cuts a node's cores: n / m each, the first n % m one
 * more; with fewer units than slices, unit k mod n (shared). */
static void s_slice(hwloc_bitmap_t *u, int n, int k, int m, hwloc_bitmap_t out)
{
    hwloc_bitmap_zero(out);
    if (n <= 0)
        return;
    if (n < m) {
        hwloc_bitmap_copy(out, u[k % n]);
        return;
    }
    int per = n / m, extra = n % m;
    int start = k * per + (k < extra ? k : extra), end = start + per + (k < extra);
    for (int i = start; i < end; i++)
        hwloc_bitmap_or(out, out, u[i]);
}

#define UNITS_MAX 8192

static int s_by_size(const void *a, const void *b)
{
    hwloc_const_bitmap_t x = *(hwloc_bitmap_t const *)a, y = *(hwloc_bitmap_t const *)b;
    int wx = hwloc_bitmap_weight(x), wy = hwloc_bitmap_weight(y);
    if (wx != wy)
        return wy - wx;
    return hwloc_bitmap_first(x) - hwloc_bitmap_first(y);
}

/* The deepest cache level present (torchrun's "max level cache": data or unified). */
static hwloc_obj_type_t s_llc_type(const struct s_ctx *c)
{
    static const hwloc_obj_type_t order[] = { HWLOC_OBJ_L5CACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L3CACHE,
                                              HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L1CACHE };
    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        if (hwloc_get_nbobjs_by_type(c->t, order[i]) > 0)
            return order[i];
    return s_core_type(c);
}

/* The workers' CPUs by mode: those whose GPU has a NUMA node follow it; the rest share an even split. */
static void s_choose(struct s_ctx *c, int mode, const char *how)
{
    struct topo_plan *p = c->plan;
    static hwloc_bitmap_t units[UNITS_MAX];
    int nfree = 0, kfree = 0;
    for (int i = 0; i < p->n; i++)
        nfree += c->numa[i] == NULL;
    for (int i = 0; i < p->n; i++) {
        struct topo_bind *b = &p->w[i];
        hwloc_obj_t node = c->numa[i];
        if (!node) { /* even split of every allowed core among these workers */
            int n = s_units(c, s_core_type(c), c->allowed, units, UNITS_MAX);
            s_slice(units, n, kfree++, nfree, c->cpus[i]);
            s_free_units(units, n);
            snprintf(b->why, sizeof b->why, "even split%s", !b->gpu[0] ? " (CPU worker)"
                     : b->busid[0] ? ": the GPU has no NUMA locality"
                                   : ": the GPU is not in the topology (a UUID, or no such PCI device)");
            continue;
        }
        snprintf(b->why, sizeof b->why, "GPU locality (%s)", how);
        if (mode == TOPO_NODE) {
            hwloc_bitmap_and(c->cpus[i], node->cpuset, c->allowed);
        } else if (mode == TOPO_SOCKET) {
            hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(c->t, HWLOC_OBJ_PACKAGE, node);
            hwloc_bitmap_and(c->cpus[i], pkg ? pkg->cpuset : node->cpuset, c->allowed);
        } else { /* exclusive, core-complex: this GPU's place among the node's GPUs (by GPU index) */
            int k = 0, m = 0, me = s_gpu_index(c, b->gpu);
            for (int j = 0; j < p->n; j++)
                if (c->numa[j] == node) {
                    m++;
                    k += s_gpu_index(c, p->w[j].gpu) < me;
                }
            int n = s_units(c, mode == TOPO_EXCLUSIVE ? s_core_type(c) : s_llc_type(c), node->cpuset, units, UNITS_MAX);
            if (mode == TOPO_EXCLUSIVE) {
                s_slice(units, n, k, m, c->cpus[i]);
                if (n < m)
                    snprintf(b->why, sizeof b->why, "GPU locality (%s; %d cores for %d GPUs: shared)", how, n, m);
            } else if (n > 0) {
                qsort(units, (size_t)n, sizeof *units, s_by_size);
                hwloc_bitmap_copy(c->cpus[i], units[k % n]);
            }
            s_free_units(units, n);
        }
    }
}

/* Fills each worker's line fields from its CPUs. */
static void s_finish(struct s_ctx *c)
{
    struct topo_plan *p = c->plan;
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    hwloc_obj_type_t ct = s_core_type(c);
    p->active = 0;
    for (int i = 0; i < p->n; i++) {
        struct topo_bind *b = &p->w[i];
        if (hwloc_bitmap_iszero(c->cpus[i])) { /* the node's CPUs are all outside the launcher's mask */
            hwloc_bitmap_copy(c->cpus[i], c->allowed);
            snprintf(b->why, sizeof b->why, "user mask: none of its NUMA node's CPUs is allowed; left as given");
            b->apply = 0;
        } else {
            b->apply = 1;
            p->active = 1;
        }
        hwloc_cpuset_to_glibc_sched_affinity(c->t, c->cpus[i], &b->cpus, sizeof b->cpus);
        b->ncpus = CPU_COUNT(&b->cpus);
        b->ncores = 0;
        for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type(c->t, ct, o));)
            b->ncores += hwloc_bitmap_intersects(o->cpuset, c->cpus[i]);
        hwloc_cpuset_to_nodeset(c->t, c->cpus[i], nodes);
        memset(b->nodes, 0, sizeof b->nodes);
        unsigned id;
        hwloc_bitmap_foreach_begin(id, nodes)
            if (id < TOPO_NODE_WORDS * 8 * sizeof(unsigned long))
                b->nodes[id / (8 * sizeof(unsigned long))] |= 1UL << (id % (8 * sizeof(unsigned long)));
        hwloc_bitmap_foreach_end();
        if (hwloc_bitmap_iszero(nodes))
            snprintf(b->numa, sizeof b->numa, "-");
        else
            hwloc_bitmap_list_snprintf(b->numa, sizeof b->numa, nodes);
        if (!b->apply)
            memset(b->nodes, 0, sizeof b->nodes);
    }
    hwloc_bitmap_free(nodes);
}

static int s_with_hwloc(struct s_ctx *c, cpu_set_t *allowed, int synthetic, char *err, size_t errlen)
{
    struct topo_plan *p = c->plan;
    int mode = c->in->mode;
    hwloc_obj_t root = hwloc_get_root_obj(c->t);
    p->numa_nodes = hwloc_get_nbobjs_by_type(c->t, HWLOC_OBJ_NUMANODE);
    if (hwloc_bitmap_last(root->cpuset) >= CPU_SETSIZE) {
        s_unbound(p, allowed, "more than 1024 CPUs: not bound");
        return 0;
    }
    if (c->in->allowed || hwloc_topology_is_thissystem(c->t))
        hwloc_cpuset_from_glibc_sched_affinity(c->t, c->allowed, allowed, sizeof *allowed);
    else
        hwloc_bitmap_copy(c->allowed, root->cpuset);
    hwloc_bitmap_and(c->allowed, c->allowed, root->cpuset);
    hwloc_cpuset_to_glibc_sched_affinity(c->t, c->allowed, allowed, sizeof *allowed);
    if (mode == TOPO_AUTO && p->numa_nodes <= 1) {
        s_unbound(p, allowed, "one NUMA node: not bound (the default binds only where there are several)");
        return 0;
    }
    if (mode == TOPO_AUTO && (c->in->mem_bound || (synthetic && !hwloc_bitmap_isequal(c->allowed, root->cpuset)))) {
        s_unbound(p, allowed, "user mask: plaunch was started bound (taskset, numactl, Slurm --cpu-bind, a cpuset); "
                  "left as given");
        return 0;
    }
    if (s_find_gpus(c) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < p->n; i++) {
        int g = s_gpu_index(c, p->w[i].gpu);
        if (g >= 0)
            snprintf(p->w[i].busid, sizeof p->w[i].busid, "%04x:%02x:%02x.%x", c->gpus[g].dom, c->gpus[g].bus,
                     c->gpus[g].dev, c->gpus[g].fn);
        c->numa[i] = g >= 0 ? s_gpu_numa(c, g) : NULL;
        c->cpus[i] = hwloc_bitmap_alloc();
    }
    s_choose(c, mode == TOPO_AUTO ? TOPO_NODE : mode, mode == TOPO_AUTO ? "default: numa" : topo_mode_name(mode));
    s_finish(c);
    snprintf(p->note, sizeof p->note, "%d NUMA node%s, %d GPU%s in the topology; --cpu-bind %s", p->numa_nodes,
             p->numa_nodes == 1 ? "" : "s", c->ngpus, c->ngpus == 1 ? "" : "s", topo_mode_name(mode));
    return 0;
}

int topo_plan_build(const struct topo_input *in, struct topo_plan *plan, char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    plan->mode = in->mode;
    plan->n = in->n;
    plan->numa_nodes = 1;
    plan->w = calloc((size_t)(in->n > 0 ? in->n : 1), sizeof *plan->w);
    if (!plan->w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < in->n; i++) {
        plan->w[i].local_rank = i;
        snprintf(plan->w[i].gpu, sizeof plan->w[i].gpu, "%s", in->gpus ? in->gpus[i] : "");
        snprintf(plan->w[i].numa, sizeof plan->w[i].numa, "-");
    }
    cpu_set_t allowed;
    if (in->allowed)
        allowed = *in->allowed;
    else if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
        CPU_ZERO(&allowed);
    const char *xml = getenv("HWLOC_XMLFILE"), *syn = getenv("HWLOC_SYNTHETIC");
    int synthetic = (xml && *xml) || (syn && *syn);
    if (in->mode == TOPO_NONE) {
        s_unbound(plan, &allowed, "--cpu-bind none: the launcher's CPUs");
        return 0;
    }
    if (in->mode == TOPO_LIST) {
        if (s_list(in, plan, &allowed, err, errlen) == 0)
            return 0;
        topo_plan_free(plan);
        return -1;
    }
    if (in->mode == TOPO_AUTO && !synthetic) {
        cpu_set_t online;
        int nn = s_sys_numa_nodes();
        plan->numa_nodes = nn < 1 ? 1 : nn;
        if (nn <= 1) {
            s_unbound(plan, &allowed, "one NUMA node: not bound (the default binds only where there are several)");
            return 0;
        }
        if (in->mem_bound || (topo_cpus_read("/sys/devices/system/cpu/online", &online) == 0 &&
                              !CPU_EQUAL(&online, &allowed))) {
            s_unbound(plan, &allowed, "user mask: plaunch was started bound (taskset, numactl, Slurm --cpu-bind, a "
                      "cpuset); left as given");
            return 0;
        }
    }
    struct s_ctx c = { .in = in, .plan = plan };
    c.numa = calloc((size_t)(in->n > 0 ? in->n : 1), sizeof *c.numa);
    c.cpus = calloc((size_t)(in->n > 0 ? in->n : 1), sizeof *c.cpus);
    c.allowed = hwloc_bitmap_alloc();
    int rc = -1;
    if (!c.numa || !c.cpus || !c.allowed) {
        snprintf(err, errlen, "out of memory");
    } else if (hwloc_topology_init(&c.t) < 0) {
        snprintf(err, errlen, "hwloc cannot start");
        c.t = NULL;
    } else if (hwloc_topology_set_io_types_filter(c.t, in->gpus ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT
                                                                 : HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
               hwloc_topology_load(c.t) < 0) {
        snprintf(err, errlen, "hwloc cannot read the topology%s%s; give --cpu-bind none to run unbound",
                 xml && *xml ? " of HWLOC_XMLFILE=" : "", xml && *xml ? xml : "");
        if (in->mode == TOPO_AUTO) { /* the default never stops a job: it binds nothing, and says why */
            s_unbound(plan, &allowed, "hwloc cannot read the topology: not bound");
            rc = 0;
        }
    } else {
        rc = s_with_hwloc(&c, &allowed, synthetic, err, errlen);
    }
    for (int i = 0; c.cpus && i < in->n; i++)
        if (c.cpus[i])
            hwloc_bitmap_free(c.cpus[i]);
    free(c.cpus);
    free(c.numa);
    free(c.gpus);
    hwloc_bitmap_free(c.allowed);
    if (c.t)
        hwloc_topology_destroy(c.t);
    if (rc < 0)
        topo_plan_free(plan);
    return rc;
}

void topo_plan_free(struct topo_plan *plan)
{
    free(plan->w);
    plan->w = NULL;
    plan->n = 0;
}

void topo_plan_line(const struct topo_plan *plan, int i, int rank, char *buf, size_t cap)
{
    const struct topo_bind *b = &plan->w[i];
    char cpus[512], gpu[160], omp[40] = "";
    topo_cpus_format(&b->cpus, cpus, sizeof cpus);
    if (b->gpu[0] && b->busid[0])
        snprintf(gpu, sizeof gpu, "GPU %s (%s)", b->gpu, b->busid);
    else if (b->gpu[0])
        snprintf(gpu, sizeof gpu, "GPU %s", b->gpu);
    else
        snprintf(gpu, sizeof gpu, "CPU worker");
    if (b->apply)
        snprintf(omp, sizeof omp, ", %d core%s", b->ncores, b->ncores == 1 ? "" : "s");
    char who[32];
    snprintf(who, sizeof who, rank < 0 ? "local rank %d" : "rank %d", rank < 0 ? b->local_rank : rank);
    snprintf(buf, cap, "%s: %s, NUMA %s, CPUs %s%s%s: %s", who, gpu, b->numa, cpus, omp, b->apply ? "" : " (not bound)",
             b->why);
}
