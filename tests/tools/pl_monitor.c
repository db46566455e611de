/* pl_monitor: drives the agent side of the monitor's sampler (mon_sampler.h) without the rest of plaunch, for
 * tests/bb/monitor_sampler.t: starts `EXE __monitor`, asks for a preflight and rounds of samples with a deadline,
 * prints what comes back as key=value lines, and checks that the stopped sampler left no zombie. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "launcher/monitor/sampling/mon_sampler.h"

static const char S_USAGE[] =
    "Usage: pl_monitor --exe PLAUNCH [--no-nvml] [--preflight GPU,GPU...] [--samples N] [--interval MS]\n"
    "                  [--deadline MS] [--worker GPU CMD]... [RANK:PID[:GPU]]...\n"
    "Starts PLAUNCH __monitor; asks for the preflight of the GPU list, then N rounds (default 1) of one sample of\n"
    "each target, MS apart (default 200), each answer within the deadline (default 5000 ms). A --worker is\n"
    "`sh -c CMD` started here with RANK and LOCAL_RANK set to its place among the targets (GPU '-' for none),\n"
    "killed at the end. Prints 'worker:', 'note:', 'preflight:', 'finding:', 'sample:' and 'answer:' lines, then\n"
    "'stopped:'. Exit 0, 1 when an answer missed its deadline, 3 when the sampler failed, 2 for bad usage.\n";

static double s_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Waits for one whole answer: 1, 0 past the deadline, -1 the sampler failed. */
static int s_wait(mon_sampler_t *m, struct mon_sample *out, int max, int *n, double deadline_ms)
{
    char err[512];
    for (;;) {
        double left = deadline_ms - s_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = { .fd = mon_sampler_fd(m), .events = POLLIN };
        int r = poll(&p, 1, (int)left + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue; /* the deadline is checked above */
        r = mon_sampler_read(m, out, max, n, err, sizeof err);
        if (r < 0) {
            printf("error: %s\n", err);
            return -1;
        }
        if (r == 1)
            return 1;
    }
}

static void s_print(const struct mon_sample *s)
{
    printf("sample: rank=%d local_rank=%d generation=%d gpu=%s pci=%s gpu_util=%g gpu_idle_frac=%g gpu_idle_ms=%g "
           "gpu_mem_proc_mib=%g gpu_mem_used_mib=%g gpu_mem_total_mib=%g sm_clock_mhz=%g sm_clock_max_mhz=%g "
           "power_w=%g power_limit_w=%g temp_c=%g throttle=%lld ecc_corrected=%lld ecc_uncorrected=%lld "
           "pcie_tx_mibs=%g pcie_rx_mibs=%g xid=%d rss_mib=%.1f cpu_pct=%.1f threads=%d procs=%d "
           "host_avail_frac=%.3f t_ms=%lld\n",
           s->rank, s->local_rank, s->generation, s->gpu[0] ? s->gpu : "-", s->pci[0] ? s->pci : "-", s->gpu_util,
           s->gpu_idle_frac, s->gpu_idle_ms, s->gpu_mem_proc_mib, s->gpu_mem_used_mib, s->gpu_mem_total_mib,
           s->sm_clock_mhz, s->sm_clock_max_mhz, s->power_w, s->power_limit_w, s->temp_c, (long long)s->throttle,
           (long long)s->ecc_corrected, (long long)s->ecc_uncorrected, s->pcie_tx_mibs, s->pcie_rx_mibs, s->xid,
           s->rss_mib, s->cpu_pct, s->threads, s->procs, s->host_avail_frac, (long long)s->t_ms);
}

static int s_parse_target(const char *arg, struct mon_target *t)
{
    char gpu[MON_GPU_MAX] = "";
    int rank, pid, k = 0;
    if (sscanf(arg, "%d:%d%n", &rank, &pid, &k) < 2 || rank < 0 || pid <= 0)
        return -1;
    if (arg[k] == ':')
        snprintf(gpu, sizeof gpu, "%s", arg + k + 1);
    else if (arg[k] != '\0')
        return -1;
    memset(t, 0, sizeof *t);
    t->rank = t->local_rank = rank;
    t->pid = pid;
    snprintf(t->gpu, sizeof t->gpu, "%s", gpu);
    return 0;
}

/* sh -c cmd with RANK and LOCAL_RANK = rank, in a process group of its own. */
static pid_t s_worker(const char *cmd, int rank)
{
    static char vars[MON_TARGETS_MAX][2][32];
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    if (env == NULL)
        return -1;
    memcpy(env, environ, n * sizeof *env);
    snprintf(vars[rank][0], sizeof vars[rank][0], "RANK=%d", rank);
    snprintf(vars[rank][1], sizeof vars[rank][1], "LOCAL_RANK=%d", rank);
    env[n] = vars[rank][0], env[n + 1] = vars[rank][1];
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    char *argv[] = { "sh", "-c", (char *)cmd, NULL };
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", NULL, &at, argv, env);
    posix_spawnattr_destroy(&at);
    free(env);
    return rc == 0 ? pid : -1;
}

/* Stops the sampler and says whether its pid is gone (no zombie left). */
static void s_stop(mon_sampler_t **m)
{
    pid_t pid = mon_sampler_pid(*m);
    double t0 = s_ms();
    mon_sampler_stop(m);
    mon_sampler_stop(m); /* safe twice */
    char path[64], st[512] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (fgets(st, sizeof st, f) == NULL)
            st[0] = '\0';
        fclose(f);
        char *c = strrchr(st, ')');
        printf("stopped: pid %d still there (state %c) after %.1f ms\n", (int)pid, c && c[1] ? c[2] : '?',
               s_ms() - t0);
    } else {
        printf("stopped: pid %d reaped, no zombie, in %.1f ms\n", (int)pid, s_ms() - t0);
    }
}

int main(int argc, char **argv)
{
    const char *exe = NULL, *preflight = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int use_nvml = 1, rounds = 1, interval = 200, deadline = 5000, n = 0;
    static struct mon_target t[MON_TARGETS_MAX];
    static struct mon_sample out[MON_TARGETS_MAX];
    static const char *cmd[MON_TARGETS_MAX];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--exe") == 0 && v)
            exe = v, i++;
        else if (strcmp(a, "--no-nvml") == 0)
            use_nvml = 0;
        else if (strcmp(a, "--preflight") == 0 && v)
            preflight = v, i++;
        else if (strcmp(a, "--samples") == 0 && v)
            rounds = atoi(v), i++;
        else if (strcmp(a, "--interval") == 0 && v)
            interval = atoi(v), i++;
        else if (strcmp(a, "--deadline") == 0 && v)
            deadline = atoi(v), i++;
        else if (strcmp(a, "--worker") == 0 && v && i + 2 < argc && n < MON_TARGETS_MAX) {
            memset(&t[n], 0, sizeof t[n]);
            t[n].rank = t[n].local_rank = n;
            snprintf(t[n].gpu, sizeof t[n].gpu, "%s", strcmp(v, "-") ? v : "");
            cmd[n++] = argv[i + 2]; /* started once every argument is known to be good */
            i += 2;
        } else if (a[0] != '-' && n < MON_TARGETS_MAX && s_parse_target(a, &t[n]) == 0)
            n++;
        else {
            fprintf(stderr, "pl_monitor: bad argument '%s'\n%s", a, S_USAGE);
            return 2;
        }
    }
    if (exe == NULL) {
        fprintf(stderr, "%s", S_USAGE);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* as plaunch does */
    int code = 0, got = 0;
    char err[512];
    for (int i = 0; i < n; i++)
        if (cmd[i]) {
            if ((t[i].pid = s_worker(cmd[i], i)) < 0) {
                fprintf(stderr, "pl_monitor: cannot start worker '%s'\n", cmd[i]);
                code = 2;
                goto out;
            }
            printf("worker: rank %d pid %d\n", i, (int)t[i].pid);
        }
    double t0 = s_ms();
    mon_sampler_t *m = mon_sampler_start(exe, use_nvml, err, sizeof err);
    if (m == NULL) {
        printf("error: %s\n", err);
        code = 3;
        goto out;
    }
    printf("started: pid %d in %.2f ms\n", (int)mon_sampler_pid(m), s_ms() - t0);
    if (preflight) {
        char *list = strdup(preflight), *save = NULL;
        const char *gpus[MON_TARGETS_MAX];
        int ng = 0;
        for (char *g = strtok_r(list, ",", &save); g && ng < MON_TARGETS_MAX; g = strtok_r(NULL, ",", &save))
            gpus[ng++] = g;
        double a = s_ms();
        int r = mon_sampler_request_preflight(m, gpus, ng) < 0 ? -1 : s_wait(m, out, 0, &got, a + deadline);
        free(list);
        if (r == 1) {
            char cuda[16];
            int lines, ok;
            const char *text = mon_sampler_preflight(m, &lines, cuda, sizeof cuda, &ok);
            printf("answer: preflight in %.2f ms\n", s_ms() - a);
            printf("note: %s\n", mon_sampler_note(m));
            printf("preflight: nvml_ok=%d cuda=%s lines=%d\n", ok, cuda[0] ? cuda : "-", lines);
            for (int i = 0; i < lines; i++, text += strlen(text) + 1)
                printf("finding: %s\n", text);
        } else {
            if (r == 0)
                printf("timeout: no preflight answer within %d ms\n", deadline);
            code = r == 0 ? 1 : 3;
        }
    }
    for (int k = 0; k < rounds && n > 0 && code == 0; k++) {
        if (k > 0)
            poll(NULL, 0, interval); /* the sampling period, not a synchronisation */
        double a = s_ms();
        if (mon_sampler_request(m, t, n) < 0) {
            printf("error: request: %s\n", strerror(errno));
            code = 3;
            break;
        }
        /* A second request while one is outstanding is refused at once. */
        if (mon_sampler_request(m, t, n) == 0 || errno != EBUSY)
            printf("error: a second outstanding request was not refused with EBUSY\n");
        int r = s_wait(m, out, MON_TARGETS_MAX, &got, a + deadline);
        if (r != 1) {
            if (r == 0)
                printf("timeout: no answer to round %d within %d ms\n", k + 1, deadline);
            code = r == 0 ? 1 : 3;
            break;
        }
        printf("answer: round %d, %d samples in %.2f ms\n", k + 1, got, s_ms() - a);
        if (k == 0)
            printf("note: %s\n", mon_sampler_note(m));
        for (int i = 0; i < got; i++)
            s_print(&out[i]);
        fflush(stdout);
    }
    s_stop(&m);
out:
    for (int i = 0; i < n; i++)
        if (cmd[i] && t[i].pid > 0) {
            kill(-t[i].pid, SIGKILL);
            waitpid(t[i].pid, NULL, 0);
        }
    return code;
}
