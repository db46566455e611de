/* probe_preflight: verdicts on the GPUs and links before any bandwidth: versions, P2P, slow pairs, sums. */
#include "launcher/probe/analysis/probe_preflight.h"

#include "common/gpus/gpus.h"
#include "launcher/probe/measure/probe_fmt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_LINES 8 /* per kind: past this, one summary line, so a PCIe box without P2P is not 28 lines */

static const char S_P2P_WHY[] =
    "cudaDeviceCanAccessPeer is 0, so NCCL stages their traffic through host memory at a fraction of "
    "NVLink/PCIe peer speed; check `nvidia-smi topo -m`, the IOMMU/ACS settings, or whether they sit under "
    "different CPU sockets";
static const char S_PAIR_WHY[] =
    "measured by the pairwise send/recv matrix; look for a PCIe hop through the CPU or a degraded NVLink "
    "(`nvidia-smi topo -m`, `nvidia-smi nvlink -s`)";

/* Appends "; "-separated parts to buf, never past len. */
static void s_append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void s_append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 3 >= len)
        return;
    if (used > 0)
        used += (size_t)snprintf(buf + used, len - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

static int s_in(int rank, const int *set, int n)
{
    for (int i = 0; i < n; i++)
        if (set[i] == rank)
            return 1;
    return 0;
}

static const char *s_host(const struct probe_meas *m, int rank)
{
    const struct probe_gpu *g = probe_meas_gpu(m, rank);
    return g ? g->host : NULL;
}

/* ---- versions ------------------------------------------------------------------------------------------ */

static int s_same_setup(const struct probe_gpu *a, const struct probe_gpu *b)
{
    return strcmp(a->host, b->host) == 0 && a->driver_cuda == b->driver_cuda && a->runtime_cuda == b->runtime_cuda;
}

static int s_check_mismatch(const struct probe_meas *m, struct probe_analysis *a, const struct probe_gpu *g)
{
    int ranks[64];
    size_t nr = 0;
    char drv[16], rt[16], list[128], why[512];
    for (size_t j = 0; j < m->ngpus && nr < 64; j++)
        if (s_same_setup(g, &m->gpus[j]))
            ranks[nr++] = m->gpus[j].rank;
    probe_fmt_ranks(ranks, nr, list, sizeof list);
    probe_fmt_cuda_version(g->driver_cuda, drv, sizeof drv);
    probe_fmt_cuda_version(g->runtime_cuda, rt, sizeof rt);
    gpus_cuda_mismatch(g->driver_cuda, g->runtime_cuda, why, sizeof why); /* the node preflight's rule too */
    s_append(why, sizeof why, "fix: install an NVIDIA driver for CUDA %s or newer, or use a build of the "
             "framework for CUDA %s or older", rt, drv);
    return probe_verdict_add(a, PROBE_SEV_FLAG, "versions", why,
                              "CUDA mismatch on host %s (ranks %s): the driver supports CUDA up to %s but the "
                              "program's runtime is CUDA %s", g->host, list, drv, rt);
}

static int s_check_versions(const struct probe_meas *m, struct probe_analysis *a)
{
    int bad = 0, unknown = 0, nccl_other = 0;
    if (m->ngpus == 0)
        return probe_verdict_add(a, PROBE_SEV_NOTE, "versions", NULL, "no per-GPU preflight in the data: "
                                  "driver/runtime versions and P2P not checked");
    for (size_t i = 0; i < m->ngpus; i++) {
        const struct probe_gpu *g = &m->gpus[i];
        unknown += !g->driver_cuda || !g->runtime_cuda;
        if (g->nccl_version && m->gpus[0].nccl_version && g->nccl_version != m->gpus[0].nccl_version)
            nccl_other = (int)i + 1; /* index + 1: 0 means none */
        if (!g->driver_cuda || !g->runtime_cuda || g->driver_cuda >= g->runtime_cuda)
            continue;
        bad++;
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= s_same_setup(g, &m->gpus[j]);
        if (!seen && s_check_mismatch(m, a, g) < 0)
            return -1;
    }
    char v0[16], v1[16], drv[16], rt[16];
    if (nccl_other) {
        probe_fmt_nccl_version(m->gpus[0].nccl_version, v0, sizeof v0);
        const struct probe_gpu *other = &m->gpus[nccl_other - 1];
        probe_fmt_nccl_version(other->nccl_version, v1, sizeof v1);
        bad++;
        if (probe_verdict_add(a, PROBE_SEV_FLAG, "versions", "every rank of a communicator needs the same NCCL; "
                               "mixed versions hang or fail at init; install one NCCL version everywhere",
                               "NCCL versions differ: rank %d has %s, rank %d has %s", m->gpus[0].rank, v0,
                               other->rank, v1) < 0)
            return -1;
    }
    if (unknown && probe_verdict_add(a, PROBE_SEV_NOTE, "versions", NULL, "%d GPU record(s) lack the driver or "
                                      "runtime CUDA version", unknown) < 0)
        return -1;
    if (bad || unknown)
        return 0;
    int uniform = 1;
    for (size_t i = 1; i < m->ngpus; i++)
        uniform &= m->gpus[i].driver_cuda == m->gpus[0].driver_cuda && m->gpus[i].runtime_cuda == m->gpus[0].runtime_cuda;
    probe_fmt_cuda_version(m->gpus[0].driver_cuda, drv, sizeof drv);
    probe_fmt_cuda_version(m->gpus[0].runtime_cuda, rt, sizeof rt);
    probe_fmt_nccl_version(m->gpus[0].nccl_version, v0, sizeof v0);
    if (!uniform)
        drv[0] = rt[0] = '\0';
    return probe_verdict_add(a, PROBE_SEV_OK, "versions", NULL, "CUDA driver %s%s>= runtime %s%son all %zu GPU(s); "
                              "NCCL %s", drv, uniform ? " " : "", rt, uniform ? " " : "", m->ngpus, v0);
}

/* ---- P2P ----------------------------------------------------------------------------------------------- */

static int s_no_p2p(const struct probe_p2p *p, int i, int j)
{
    return !p->can[i * p->n + j] || !p->can[j * p->n + i];
}

static int s_check_p2p(const struct probe_meas *m, struct probe_analysis *a)
{
    int pairs = 0, missing = 0;
    if (m->np2p == 0)
        return m->ngpus > 1 ? probe_verdict_add(a, PROBE_SEV_NOTE, "p2p", NULL, "no P2P matrix in the data") : 0;
    for (size_t h = 0; h < m->np2p; h++) {
        const struct probe_p2p *p = &m->p2p[h];
        int here = 0, lines = 0;
        for (int i = 0; i < p->n; i++)
            for (int j = i + 1; j < p->n; j++)
                here += s_no_p2p(p, i, j);
        pairs += p->n * (p->n - 1) / 2;
        missing += here;
        if (here > 1 && here == p->n * (p->n - 1) / 2) {
            if (probe_verdict_add(a, PROBE_SEV_FLAG, "p2p", S_P2P_WHY, "no P2P between any of the %d GPUs on "
                                   "host %s", p->n, p->host) < 0)
                return -1;
            continue;
        }
        for (int i = 0; i < p->n; i++)
            for (int j = i + 1; j < p->n; j++) {
                if (!s_no_p2p(p, i, j) || ++lines > S_MAX_LINES)
                    continue;
                if (probe_verdict_add(a, PROBE_SEV_FLAG, "p2p", S_P2P_WHY, "no P2P between ranks %d and %d on "
                                       "host %s", p->ranks[i], p->ranks[j], p->host) < 0)
                    return -1;
            }
        if (lines > S_MAX_LINES && probe_verdict_add(a, PROBE_SEV_FLAG, "p2p", S_P2P_WHY, "and %d more GPU "
                                                      "pairs without P2P on host %s", lines - S_MAX_LINES, p->host) < 0)
            return -1;
    }
    if (missing || pairs == 0)
        return 0;
    return probe_verdict_add(a, PROBE_SEV_OK, "p2p", NULL, "P2P: all %d GPU pair(s) on %zu host(s) have peer "
                              "access", pairs, m->np2p);
}

/* ---- pairwise matrix ----------------------------------------------------------------------------------- */

static double s_pair(const struct probe_meas *m, int i, int j)
{
    double v = m->pair_gbps[i * m->pair_n + j];
    return isfinite(v) ? v : m->pair_gbps[j * m->pair_n + i];
}

static int s_pair_inter(const struct probe_meas *m, int i, int j)
{
    const char *a = s_host(m, m->pair_ranks[i]), *b = s_host(m, m->pair_ranks[j]);
    return a && b && strcmp(a, b) != 0;
}

static int s_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double probe_preflight_pair_median(const struct probe_meas *m, int inter)
{
    size_t k = 0;
    double med = NAN, *v = malloc(((size_t)m->pair_n * (size_t)m->pair_n + 1) * sizeof *v);
    if (v == NULL)
        return NAN;
    for (int i = 0; i < m->pair_n; i++)
        for (int j = i + 1; j < m->pair_n; j++)
            if (s_pair_inter(m, i, j) == inter && isfinite(s_pair(m, i, j)))
                v[k++] = s_pair(m, i, j);
    if (k > 0) {
        qsort(v, k, sizeof *v, s_cmp_double);
        med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
    }
    free(v);
    return med;
}

static int s_pair_slow(const struct probe_meas *m, const struct probe_thresholds *t, const double med[2], int i,
                       int j)
{
    double v = s_pair(m, i, j);
    return isfinite(v) && isfinite(med[s_pair_inter(m, i, j)]) &&
           v < t->pair_slow_fraction * med[s_pair_inter(m, i, j)];
}

static int s_check_pairs(const struct probe_meas *m, const struct probe_thresholds *t, struct probe_analysis *a)
{
    if (m->pair_n < 2)
        return m->ngpus > 1 ? probe_verdict_add(a, PROBE_SEV_NOTE, "slow-pair", NULL, "no pairwise bandwidth "
                                                 "matrix in the data: slow pairs not checked") : 0;
    double med[2] = { probe_preflight_pair_median(m, 0), probe_preflight_pair_median(m, 1) };
    int slow = 0;
    for (int i = 0; i < m->pair_n; i++)
        for (int j = i + 1; j < m->pair_n; j++) {
            if (!s_pair_slow(m, t, med, i, j) || ++slow > S_MAX_LINES)
                continue;
            int inter = s_pair_inter(m, i, j);
            const char *hi = s_host(m, m->pair_ranks[i]);
            if (probe_verdict_add(a, PROBE_SEV_FLAG, "slow-pair", S_PAIR_WHY, "slow pair: ranks %d and %d "
                                   "(%s%s) move %.1f GB/s, %.2fx the median %s pair (%.1f GB/s)",
                                   m->pair_ranks[i], m->pair_ranks[j], inter ? "across hosts" : "host ",
                                   inter ? "" : (hi ? hi : "?"), s_pair(m, i, j), s_pair(m, i, j) / med[inter],
                                   inter ? "inter-node" : "intra-node", med[inter]) < 0)
                return -1;
        }
    if (slow > S_MAX_LINES)
        return probe_verdict_add(a, PROBE_SEV_FLAG, "slow-pair", S_PAIR_WHY, "and %d more slow pairs",
                                  slow - S_MAX_LINES);
    if (slow)
        return 0;
    char inter[64] = "";
    if (isfinite(med[1]))
        snprintf(inter, sizeof inter, ", %.1f GB/s inter-node", med[1]);
    return probe_verdict_add(a, PROBE_SEV_OK, "slow-pair", NULL, "pairwise: no pair below %.2fx the median "
                              "(%.1f GB/s intra-node%s)", t->pair_slow_fraction, med[0], inter);
}

void probe_preflight_links(const struct probe_meas *m, const struct probe_thresholds *t, const int *ranks, int n,
                           const int *base, int nbase, char *buf, size_t len)
{
    int items = 0;
    buf[0] = '\0';
    for (size_t h = 0; h < m->np2p; h++) {
        const struct probe_p2p *p = &m->p2p[h];
        for (int i = 0; i < p->n; i++)
            for (int j = i + 1; j < p->n; j++) {
                int a = p->ranks[i], b = p->ranks[j];
                if (!s_no_p2p(p, i, j) || !s_in(a, ranks, n) || !s_in(b, ranks, n) ||
                    (s_in(a, base, nbase) && s_in(b, base, nbase)) || ++items > 4)
                    continue;
                s_append(buf, len, "no P2P between ranks %d and %d on host %s", a, b, p->host);
            }
    }
    double med[2] = { NAN, NAN };
    if (m->pair_n >= 2) {
        med[0] = probe_preflight_pair_median(m, 0);
        med[1] = probe_preflight_pair_median(m, 1);
    }
    for (int i = 0; i < m->pair_n; i++)
        for (int j = i + 1; j < m->pair_n; j++) {
            int a = m->pair_ranks[i], b = m->pair_ranks[j];
            if (!s_pair_slow(m, t, med, i, j) || !s_in(a, ranks, n) || !s_in(b, ranks, n) ||
                (s_in(a, base, nbase) && s_in(b, base, nbase)) || ++items > 4)
                continue;
            s_append(buf, len, "slow pair ranks %d and %d (%.1f GB/s, %.2fx the median)", a, b, s_pair(m, i, j),
                     s_pair(m, i, j) / med[s_pair_inter(m, i, j)]);
        }
    if (items > 4)
        s_append(buf, len, "%d more link problems in this group", items - 4);
}

/* ---- verification -------------------------------------------------------------------------------------- */

static int s_check_verified(const struct probe_meas *m, struct probe_analysis *a)
{
    size_t checked = 0, bad_sweeps = 0;
    for (size_t i = 0; i < m->nsweeps; i++) {
        const struct probe_sweep *s = &m->sweeps[i];
        size_t bad = 0;
        const struct probe_result *first = NULL;
        for (size_t k = 0; k < s->nresults; k++) {
            const struct probe_result *r = &s->results[k];
            int wrong = !r->verified || (r->has_ip && !r->ip.verified);
            checked += 1 + (size_t)r->has_ip;
            if (wrong && bad++ == 0)
                first = r;
        }
        if (bad == 0)
            continue;
        char size[32];
        probe_fmt_bytes(first->nominal, size, sizeof size);
        bad_sweeps++;
        if (probe_verdict_add(a, PROBE_SEV_FLAG, "verification", "the data read back after timing differed from "
                               "the expected values, so these timings cannot be trusted; rerun with NCCL_DEBUG=WARN "
                               "and check the GPUs' memory (`nvidia-smi -q -d ECC`)", "wrong %s result at N=%d (%s): "
                               "%zu of %zu sizes failed the check (%s), the first at %s", probe_op_title(s->op), s->n,
                               s->group == PROBE_GROUP_FIRST_N ? "first-n" : "one-per-node", bad, s->nresults,
                               !first->verified ? "out of place" : "in place", size) < 0)
            return -1;
    }
    if (bad_sweeps || checked == 0)
        return 0;
    return probe_verdict_add(a, PROBE_SEV_OK, "verification", NULL, "verification: all %zu results were checked "
                              "after timing and are correct", checked);
}

int probe_preflight_check(const struct probe_meas *m, const struct probe_thresholds *t, struct probe_analysis *a)
{
    if (s_check_versions(m, a) < 0 || s_check_p2p(m, a) < 0 || s_check_pairs(m, t, a) < 0 ||
        s_check_verified(m, a) < 0)
        return -1;
    return 0;
}
