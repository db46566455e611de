/* fake_nvml_script: the stand-in NVML's environment and script (FAKE_NVML_*; the format is in fake_nvml.c). */
#define _GNU_SOURCE
#include "tests/bb/fake_nvml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const f_keys[] = { "util", "mem_used", "mem_total", "sm", "sm_max", "power", "power_limit",
                                      "temp", "throttle", "ecc_corr", "ecc_uncorr", "ecc_corr_agg",
                                      "ecc_uncorr_agg", "pcie_tx", "pcie_rx", "retired", "retired_pending",
                                      "remap_corr", "remap_unc", "remap_pending", "remap_failed", "fine_ms",
                                      "lost" };
struct f_gpu f_gpu[F_GPUS];
int f_count = -1, f_driver = -1;
static int f_loaded;
struct f_event f_queue[F_EVENTS];
int f_nqueue;
static char f_hang_fn[128];
static long f_hang_after, f_hang_calls;

/* FAKE_NVML_HANG: the named function never returns from its (K+1)-th call on. */
void f_call(const char *fn)
{
    if (f_hang_fn[0] == '\0' || strcmp(fn, f_hang_fn) != 0)
        return;
    if (f_hang_calls++ >= f_hang_after)
        for (;;)
            pause();
}

static int f_parse_kv(struct f_step *s, char *kv, char *err, size_t cap)
{
    char *eq = strchr(kv, '=');
    if (eq == NULL)
        return snprintf(err, cap, "'%s' is not KEY=VALUE", kv), -1;
    *eq = '\0';
    char *val = eq + 1;
    if (strcmp(kv, "fine") == 0) {
        s->fine_set = 1, s->nfine = 0;
        for (char *t = strtok(val, ","); t && s->nfine < F_FINE; t = strtok(NULL, ","))
            s->fine[s->nfine++] = atof(t);
        return 0;
    }
    if (strcmp(kv, "proc") == 0) {
        s->procs_set = 1, s->nprocs = 0;
        for (char *t = strtok(val, ","); t && strcmp(t, "-") && s->nprocs < F_PROCS; t = strtok(NULL, ",")) {
            char *c = strrchr(t, ':');
            if (c == NULL)
                return snprintf(err, cap, "proc entry '%s' is not WHO:MIB", t), -1;
            *c = '\0';
            snprintf(s->procs[s->nprocs].who, sizeof s->procs[0].who, "%s", t);
            s->procs[s->nprocs++].mib = atof(c + 1);
        }
        return 0;
    }
    if (strcmp(kv, "unsupported") == 0) {
        s->unsup_set = 1;
        snprintf(s->unsup, sizeof s->unsup, ",%s,", strcmp(val, "-") ? val : "");
        return 0;
    }
    if (strcmp(kv, "xid") == 0) {
        s->xid = atoi(val);
        return 0;
    }
    for (int k = 0; k < K_N; k++)
        if (strcmp(kv, f_keys[k]) == 0) {
            s->set[k] = 1;
            s->v[k] = strtod(val, NULL);
            return 0;
        }
    return snprintf(err, cap, "unknown key '%s'", kv), -1;
}

static int f_parse_line(char *line, int *maxgpu, char *err, size_t cap)
{
    char *save = NULL, *w = strtok_r(line, " \t\r\n", &save);
    if (w == NULL || w[0] == '#')
        return 0;
    char *arg = strtok_r(NULL, " \t\r\n", &save);
    if (strcmp(w, "count") == 0 && arg)
        return f_count < 0 ? (f_count = atoi(arg), 0) : 0;
    if (strcmp(w, "driver") == 0 && arg)
        return f_driver = atoi(arg), 0;
    if (strcmp(w, "gpu") != 0 || arg == NULL)
        return snprintf(err, cap, "want 'count N', 'driver V' or 'gpu I [step K] KEY=VALUE...'"), -1;
    int g = atoi(arg), step = 0;
    if (g < 0 || g >= F_GPUS)
        return snprintf(err, cap, "GPU %d out of 0..%d", g, F_GPUS - 1), -1;
    *maxgpu = g > *maxgpu ? g : *maxgpu;
    for (char *kv = strtok_r(NULL, " \t\r\n", &save); kv; kv = strtok_r(NULL, " \t\r\n", &save)) {
        if (strcmp(kv, "step") == 0) {
            char *k = strtok_r(NULL, " \t\r\n", &save);
            step = k ? atoi(k) : -1;
            if (step < 0 || step >= F_STEPS)
                return snprintf(err, cap, "step out of 0..%d", F_STEPS - 1), -1;
            continue;
        }
        if (strncmp(kv, "uuid=", 5) == 0)
            snprintf(f_gpu[g].uuid, sizeof f_gpu[g].uuid, "%s", kv + 5);
        else if (strncmp(kv, "pci=", 4) == 0)
            snprintf(f_gpu[g].pci, sizeof f_gpu[g].pci, "%s", kv + 4);
        else if (f_parse_kv(&f_gpu[g].steps[step], kv, err, cap) < 0)
            return -1;
    }
    return 0;
}

int f_load(void)
{
    if (f_loaded)
        return 0;
    f_loaded = 1;
    const char *c = getenv("FAKE_NVML_COUNT"), *h = getenv("FAKE_NVML_HANG"), *path = getenv("FAKE_NVML_SCRIPT");
    if (c)
        f_count = atoi(c);
    if (h) {
        snprintf(f_hang_fn, sizeof f_hang_fn, "%s", h);
        char *at = strchr(f_hang_fn, '@');
        if (at)
            *at = '\0', f_hang_after = atol(at + 1);
    }
    for (int g = 0; g < F_GPUS; g++) {
        snprintf(f_gpu[g].uuid, sizeof f_gpu[g].uuid, "GPU-00000000-0000-0000-0000-0000000000%02d", g);
        snprintf(f_gpu[g].pci, sizeof f_gpu[g].pci, "00000000:%02X:00.0", 0x10 + g);
        f_gpu[g].clock_us = 1700000000000000ull;
    }
    int maxgpu = -1;
    if (path) {
        FILE *f = fopen(path, "re");
        if (f == NULL) {
            fprintf(stderr, "fake_nvml: cannot open FAKE_NVML_SCRIPT %s\n", path);
            return -1;
        }
        char line[4096], err[256];
        for (int n = 1; fgets(line, sizeof line, f); n++)
            if (f_parse_line(line, &maxgpu, err, sizeof err) < 0) {
                fprintf(stderr, "fake_nvml: %s:%d: %s\n", path, n, err);
                fclose(f);
                return -1;
            }
        fclose(f);
    }
    if (f_count < 0)
        f_count = maxgpu >= 0 ? maxgpu + 1 : 1;
    if (f_count > F_GPUS)
        f_count = F_GPUS;
    return 0;
}

/* The value of key k at GPU g's current step: 1 when some step up to it set the key. */
int f_get(const struct f_gpu *g, int k, double *v)
{
    for (int s = g->cur; s >= 0; s--)
        if (g->steps[s].set[k])
            return *v = g->steps[s].v[k], 1;
    return 0;
}

const struct f_step *f_held(const struct f_gpu *g, size_t flag_offset)
{
    for (int s = g->cur; s >= 0; s--)
        if (*(const int *)((const char *)&g->steps[s] + flag_offset))
            return &g->steps[s];
    return NULL;
}

/* The k-th (1-based) child of pid's main thread, 0 when there is none. */
static unsigned f_child(unsigned pid, int k)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%u/task/%u/children", pid, pid);
    FILE *f = fopen(path, "re");
    unsigned c = 0;
    for (int i = 0; f && i < k; i++)
        if (fscanf(f, "%u", &c) != 1)
            c = 0, i = k;
    if (f)
        fclose(f);
    return c;
}

unsigned f_local(const char *who)
{
    static char buf[1 << 18];
    char path[96], want[32];
    int n = atoi(who), k = strchr(who, '.') ? atoi(strchr(who, '.') + 1) : 0;
    snprintf(want, sizeof want, "LOCAL_RANK=%d", n);
    unsigned found = 0;
    for (int i = 1; !found; i++) {
        unsigned pid = f_child((unsigned)getppid(), i);
        if (pid == 0)
            break;
        snprintf(path, sizeof path, "/proc/%u/environ", pid);
        FILE *e = fopen(path, "re");
        size_t len = e ? fread(buf, 1, sizeof buf - 1, e) : 0;
        if (e)
            fclose(e);
        buf[len] = '\0';
        for (size_t j = 0; j < len; j += strlen(buf + j) + 1)
            if (strcmp(buf + j, want) == 0)
                found = pid;
    }
    return found && k > 0 ? f_child(found, k) : found;
}
