/* probe_fmt: how the probe's reports spell versions, sizes and rank lists. */
#include "launcher/probe/measure/probe_fmt.h"

#include <stdio.h>
#include <string.h>

void probe_fmt_cuda_version(int v, char *buf, size_t len)
{
    if (v <= 0)
        snprintf(buf, len, "unknown");
    else
        snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

void probe_fmt_nccl_version(int v, char *buf, size_t len)
{
    if (v <= 0)
        snprintf(buf, len, "unknown");
    else if (v >= 20900) /* NCCL 2.9 moved to major*10000 + minor*100 + patch */
        snprintf(buf, len, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
    else
        snprintf(buf, len, "%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
}

void probe_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const bin[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    uint64_t v = bytes;
    while (u < 4 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u > 0 || bytes < 1000) {
        snprintf(buf, len, "%llu %s", (unsigned long long)v, bin[u]);
        return;
    }
    static const char *const dec[] = { "B", "kB", "MB", "GB", "TB" };
    double d = (double)bytes;
    for (u = 0; u < 4 && d >= 1000; u++)
        d /= 1000;
    snprintf(buf, len, "%.1f %s", d, dec[u]);
}

void probe_fmt_float(double v, int width, char *buf, size_t len)
{
    if (snprintf(buf, len, "%*.2f", width, v) <= width || snprintf(buf, len, "%*.1f", width, v) <= width ||
        snprintf(buf, len, "%*.0f", width, v) <= width)
        return;
    if (width >= 7)
        snprintf(buf, len, "%*.1e", width, v);
    else
        snprintf(buf, len, "%*.0e", width, v);
}

void probe_fmt_ranks(const int *ranks, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        char part[48];
        if (j > i + 1)
            snprintf(part, sizeof part, "%s%d-%d", i ? "," : "", ranks[i], ranks[j]);
        else
            snprintf(part, sizeof part, "%s%d", i ? "," : "", ranks[i]);
        if (j == i + 1) /* two in a row read better as "3,4" */
            j = i;
        size_t pl = strlen(part);
        if (used + pl + 4 >= len) {
            snprintf(buf + used, len - used, "...");
            return;
        }
        memcpy(buf + used, part, pl + 1);
        used += pl;
        i = j;
    }
}
