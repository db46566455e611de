/* preflight: the node checks in order, and the sizes and the cgroup limit they talk about. */
#include "launcher/preflight/preflight.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/gpus/gpus.h"
#include "common/util.h"

void preflight_add(struct pf_findings *out, const char *fmt, ...)
{
    if (out->n >= PF_FINDINGS_MAX) {
        out->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->line[out->n++], PF_LINE, fmt, ap);
    va_end(ap);
}

void preflight_size(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, cap, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, units[u]);
}

int preflight_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-')
        return -1;
    int shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    case '\0': break;
    default: return -1;
    }
    if (*end && end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB") && strcmp(end + 1, "b"))
        return -1;
    if (v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* /dev/shm: DataLoader workers pass batches through it, NCCL its intra-node buffers; Docker gives 64 MiB. */
static void s_shm(const struct pf_input *in, struct pf_findings *out)
{
    struct statvfs sv;
    uint64_t need = (uint64_t)in->gpu_workers * in->shm_per_gpu + (uint64_t)in->cpu_workers * in->shm_per_cpu;
    const char *path = in->shm_path ? in->shm_path : "/dev/shm";
    if (need == 0)
        return;
    if (statvfs(path, &sv) < 0) {
        preflight_add(out, "%s is missing (%s): PyTorch DataLoader workers and NCCL need shared memory; run the "
                      "container with --ipc=host or --shm-size", path, strerror(errno));
        return;
    }
    uint64_t size = (uint64_t)sv.f_blocks * sv.f_frsize;
    if (size >= need)
        return;
    char have[32], want[32], per[32], flag[32];
    uint64_t mib = (need + (1u << 20) - 1) >> 20; /* docker's spelling: 512m, 2g */
    snprintf(flag, sizeof flag, mib % 1024 ? "%" PRIu64 "m" : "%" PRIu64 "g", mib % 1024 ? mib : mib / 1024);
    preflight_size(size, have, sizeof have);
    preflight_size(need, want, sizeof want);
    preflight_size(in->gpu_workers ? in->shm_per_gpu : in->shm_per_cpu, per, sizeof per);
    preflight_add(out, "%s is %s, less than the %s %d worker%s need (%s per %s worker, --preflight-shm): DataLoader "
                  "workers die with \"bus error\" or \"insufficient shared memory\"; run the container with "
                  "--shm-size=%s (docker run --shm-size, or --ipc=host; Kubernetes: an emptyDir of medium Memory on "
                  "/dev/shm)", path, have, want, in->gpu_workers + in->cpu_workers,
                  in->gpu_workers + in->cpu_workers == 1 ? "" : "s", per, in->gpu_workers ? "GPU" : "CPU", flag);
}

/* RDMA registers (locks) the buffers it sends from: NCCL over InfiniBand/RoCE needs ulimit -l unlimited. */
static void s_memlock(const struct pf_input *in, struct pf_findings *out)
{
    const char *dir = in->ib_dir ? in->ib_dir : "/sys/class/infiniband";
    DIR *d = opendir(dir);
    char first[256] = "";
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && n++ == 0)
            snprintf(first, sizeof first, "%s", e->d_name);
    if (d)
        closedir(d);
    struct rlimit rl;
    if (n == 0 || getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    char have[32];
    preflight_size((uint64_t)rl.rlim_cur, have, sizeof have);
    preflight_add(out, "the locked-memory limit (ulimit -l) is %s and this node has %d InfiniBand/RoCE device%s (%s): "
                  "NCCL cannot register its buffers and falls back to sockets or fails; run the container with "
                  "--ulimit memlock=-1 (or raise memlock in limits.conf / the Slurm or systemd unit)", have, n,
                  n == 1 ? "" : "s", first);
}

static void s_cuda(const struct pf_input *in, struct pf_findings *out)
{
    char where[4200], why[512];
    if (!in->driver_cuda || !in->driver_cuda[0] || !in->ld_library_path)
        return;
    const char *dot = strchr(in->driver_cuda, '.');
    int major = atoi(in->driver_cuda), minor = dot ? atoi(dot + 1) : 0;
    int driver = major * 1000 + minor * 10, runtime = gpus_cudart_version(in->ld_library_path, where, sizeof where);
    if (gpus_cuda_mismatch(driver, runtime, why, sizeof why) == 0)
        return;
    preflight_add(out, "the CUDA runtime the workers would load (%.300s, CUDA %d.%d) is newer than the driver "
                  "supports (CUDA %s): %s; install a newer NVIDIA driver, add the image's cuda-compat directory to "
                  "LD_LIBRARY_PATH, or use a build for CUDA %s", where, runtime / 1000, runtime % 1000 / 10,
                  in->driver_cuda, why, in->driver_cuda);
}

/* CUDA_VISIBLE_DEVICES indexes past the driver's GPUs: CUDA stops at the first bad entry, so later GPUs vanish. */
static void s_visible(const struct pf_input *in, struct pf_findings *out)
{
    static char entries[GPUS_MAX][64];
    char why[256];
    if (!in->visible || in->driver_gpus <= 0 || gpus_visible_none(in->visible))
        return;
    int n = gpus_split_visible(in->visible, entries, GPUS_MAX, why, sizeof why);
    for (int i = 0; i < n; i++) {
        if (strspn(entries[i], "0123456789") != strlen(entries[i]) || atoi(entries[i]) < in->driver_gpus)
            continue;
        preflight_add(out, "CUDA_VISIBLE_DEVICES=%.200s names GPU %s, but the driver has %d GPU%s (0..%d): CUDA "
                      "ignores it and every entry after it; name GPUs that exist (nvidia-smi -L lists them)",
                      in->visible, entries[i], in->driver_gpus, in->driver_gpus == 1 ? "" : "s", in->driver_gpus - 1);
        return;
    }
}

int preflight_node(const struct pf_input *in, struct pf_findings *out)
{
    memset(out, 0, sizeof *out);
    s_shm(in, out);
    s_memlock(in, out);
    s_cuda(in, out);
    s_visible(in, out);
    const char *net = in->net_dir ? in->net_dir : "/sys/class/net";
    char line[PF_LINE];
    if (in->nccl_ifname && preflight_ifname(net, "NCCL_SOCKET_IFNAME", in->nccl_ifname, 1, line, sizeof line))
        preflight_add(out, "%s", line);
    if (in->gloo_ifname && preflight_ifname(net, "GLOO_SOCKET_IFNAME", in->gloo_ifname, 0, line, sizeof line))
        preflight_add(out, "%s", line);
    return out->n + out->dropped;
}

/* A cgroup v2 file's number: memory.max is "max" (no limit: UINT64_MAX) or bytes. -1 unreadable. */
static int s_read_limit(const char *path, uint64_t *v)
{
    char buf[64];
    if (util_read_small(path, buf, sizeof buf) < 0)
        return -1;
    *v = strncmp(buf, "max", 3) == 0 ? UINT64_MAX : strtoull(buf, NULL, 10);
    return 0;
}

void preflight_cgroup(const char *cgroot, const char *self_cgroup, double used_mib, int generation,
                      struct pf_findings *out)
{
    char path[4096 + 64], where[sizeof path + 16] = "";
    uint64_t limit = UINT64_MAX;
    if (used_mib <= 0 || !self_cgroup)
        return;
    snprintf(path, sizeof path, "%s%s", cgroot, self_cgroup);
    for (;;) { /* the cgroup and every ancestor: the lowest limit holds */
        char file[sizeof path + 16];
        uint64_t v;
        snprintf(file, sizeof file, "%s/memory.max", path);
        if (s_read_limit(file, &v) == 0 && v < limit) {
            limit = v;
            snprintf(where, sizeof where, "%s", file);
        }
        char *slash = strrchr(path, '/');
        if (!slash || (size_t)(slash - path) < strlen(cgroot))
            break;
        *slash = '\0';
    }
    uint64_t used = (uint64_t)(used_mib * 1048576.0);
    if (limit == UINT64_MAX || limit >= used)
        return;
    char have[32], want[32];
    preflight_size(limit, have, sizeof have);
    preflight_size(used, want, sizeof want);
    preflight_add(out, "the memory cgroup limit (%.300s) is %s, below the %s the workers used in generation %d: "
                  "the restarted workers will be OOM-killed; raise the container's memory limit (docker --memory, "
                  "Kubernetes resources.limits.memory, Slurm --mem)", where, have, want, generation);
}
