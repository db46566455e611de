/* pl_agentsim: N simulated plaunch agents in one process against a real coordinator: each with its own ZeroMQ
 * socket and TLS 1.3 session (PSK handshake), JOIN, ASSIGN, NCCL ids, a barrier and heartbeats, through the real
 * agent's protocol code (common/wire, common/tls). Measures the rendezvous, the coordinator's CPU at steady
 * heartbeats and its peak RSS, and checks what every agent got; scripts/bench-scale.sh and agentsim.t run it. */
#include "sim.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static const char s_usage[] =
    "Usage: pl_agentsim --master HOST:PORT --agents N [--nnodes N] [--nproc P] [--threads T] [--window W]\n"
    "                   [--heartbeat S] [--heartbeat-timeout S] [--ranks] [--silent K] [--keys K1,K2]\n"
    "                   [--coord-pid PID] [--settle S] [--hb-window S] [--deadline S] [--addr ADDR]\n"
    "PLAUNCH_TOKEN holds the job's token. N agents join the coordinator at HOST:PORT (--nnodes: what every ASSIGN\n"
    "must say, default N + 1: node 0 is a real plaunch), P simulated workers each get the ids of the keys (default\n"
    "world,pipeline) and pass barrier 'done', then heartbeats run for --settle + --hb-window s (the coordinator's\n"
    "CPU is sampled over the window when --coord-pid is given), then every agent ends with status 0. --silent K:\n"
    "the last K agents stop sending once steady; the others must get STOP(NODE_LOST). --window W: at most W\n"
    "agents in a handshake at once (default: all at once, as real nodes starting together). Prints one line of\n"
    "results and the checks; exit 0 when every check passed, 1 otherwise, 2 for bad usage.\n";

struct sim_cli {
    struct sim_opts o;
    int coord_pid;
    double settle, hb_window, deadline;
};

static int s_parse(int argc, char **argv, struct sim_cli *c)
{
    static const struct option longs[] = {
        { "master", 1, 0, 'm' }, { "agents", 1, 0, 'n' }, { "nnodes", 1, 0, 'N' }, { "nproc", 1, 0, 'p' },
        { "threads", 1, 0, 't' }, { "window", 1, 0, 'w' }, { "heartbeat", 1, 0, 'h' },
        { "heartbeat-timeout", 1, 0, 'H' }, { "ranks", 0, 0, 'r' }, { "silent", 1, 0, 's' }, { "keys", 1, 0, 'k' },
        { "coord-pid", 1, 0, 'c' }, { "settle", 1, 0, 'S' }, { "hb-window", 1, 0, 'W' }, { "deadline", 1, 0, 'd' },
        { "addr", 1, 0, 'a' }, { "help", 0, 0, '?' }, { 0, 0, 0, 0 } };
    static char keys[256] = "world,pipeline";
    struct sim_opts *o = &c->o;
    const char *master = NULL;
    int opt;
    *c = (struct sim_cli){ .settle = 2, .hb_window = 10, .deadline = 300 };
    *o = (struct sim_opts){ .addr = "127.0.0.1", .nproc = 1, .threads = 2, .heartbeat = 0.5, .hb_timeout = 2.5,
                            .nnodes = -1 };
    while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (opt) {
        case 'm': master = optarg; break;
        case 'n': o->agents = atoi(optarg); break;
        case 'N': o->nnodes = atoi(optarg); break;
        case 'p': o->nproc = atoi(optarg); break;
        case 't': o->threads = atoi(optarg); break;
        case 'w': o->window = atoi(optarg); break;
        case 'h': o->heartbeat = atof(optarg); break;
        case 'H': o->hb_timeout = atof(optarg); break;
        case 'r': o->ranks = 1; break;
        case 's': o->silent = atoi(optarg); break;
        case 'k': snprintf(keys, sizeof keys, "%s", optarg); break;
        case 'c': c->coord_pid = atoi(optarg); break;
        case 'S': c->settle = atof(optarg); break;
        case 'W': c->hb_window = atof(optarg); break;
        case 'd': c->deadline = atof(optarg); break;
        case 'a': o->addr = optarg; break;
        default: fputs(s_usage, stderr); return -1;
        }
    }
    for (char *save = NULL, *k = strtok_r(keys, ",", &save); k && o->nkeys < SIM_MAX_KEYS;
         k = strtok_r(NULL, ",", &save))
        o->keys[o->nkeys++] = k;
    if (o->nnodes < 0)
        o->nnodes = o->agents + 1;
    if (!master || optind != argc || o->agents < 1 || o->nproc < 1 || o->nproc > SIM_MAX_NPROC || o->threads < 1 ||
        o->threads > 64 || o->silent < 0 || o->silent >= o->agents || o->heartbeat <= 0 ||
        o->hb_timeout <= o->heartbeat || o->nkeys < 1) {
        fputs(s_usage, stderr);
        return -1;
    }
    snprintf(o->endpoint, sizeof o->endpoint, "tcp://%s", master);
    return 0;
}

/* Three descriptors per agent (its connection, its socket's and its monitor's mailboxes), and some room. */
static int s_raise_fds(int agents)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)agents * 4 + 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
        return 0;
    rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
    if (rl.rlim_cur < need)
        rl.rlim_cur = rl.rlim_max = need; /* root may raise the hard limit up to fs.nr_open */
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        return 0;
    fprintf(stderr, "pl_agentsim: %d agents need %lu descriptors and the limit cannot be raised: %s (run as root, or "
            "raise ulimit -Hn)\n", agents, (unsigned long)need, strerror(errno));
    return -1;
}

/* The coordinator's CPU time in seconds (every thread) and its peak RSS in KiB, from /proc. */
static double s_proc_cpu(int pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long s_proc_hwm_kib(int pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static void s_nap_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Waits (polling the counters every 10 ms) until *count + *also reaches want, or until deadline (ns). */
static int s_wait_count(atomic_int *count, atomic_int *also, int want, uint64_t deadline)
{
    while (atomic_load(count) + (also ? atomic_load(also) : 0) < want) {
        if (sim_now_ns() >= deadline)
            return -1;
        s_nap_ms(10);
    }
    return 0;
}

static void s_wait_s(double s)
{
    uint64_t until = sim_now_ns() + (uint64_t)(s * 1e9);
    while (sim_now_ns() < until)
        s_nap_ms(10);
}

static int s_cmp_first(const void *x, const void *y)
{
    const struct sim_agent *a = *(struct sim_agent *const *)x, *b = *(struct sim_agent *const *)y;
    return (a->first_rank > b->first_rank) - (a->first_rank < b->first_rank);
}

/* Distinct node ranks, one contiguous range of nproc ranks each, no two overlapping, all inside one world. */
static int s_check_ranks(struct sim_run *run, struct sim_agent **all, int n)
{
    const struct sim_opts *o = run->o;
    unsigned char *seen = calloc((size_t)o->nnodes, 1);
    int bad = !seen;
    qsort(all, (size_t)n, sizeof *all, s_cmp_first);
    for (int i = 0; i < n && !bad; i++) {
        const struct sim_agent *a = all[i];
        if (!a->assigned || a->world != all[0]->world || a->nnodes != o->nnodes || a->node_rank < 0 ||
            a->node_rank >= o->nnodes || seen[a->node_rank]++ || a->first_rank + o->nproc > a->world ||
            (i > 0 && all[i - 1]->first_rank + o->nproc > a->first_rank)) {
            fprintf(stderr, "pl_agentsim: agent %d: node rank %d, ranks %d-%d of %d (%s)\n", a->idx, a->node_rank,
                    a->first_rank, a->first_rank + o->nproc - 1, a->world, a->assigned ? "overlaps or outside"
                                                                                          : "no ASSIGN");
            bad = 1;
        }
    }
    free(seen);
    return bad ? -1 : 0;
}

static double s_span(struct sim_agent **all, int n, size_t off_end, uint64_t t0)
{
    uint64_t last = 0;
    for (int i = 0; i < n; i++) {
        uint64_t t = *(const uint64_t *)((const char *)all[i] + off_end);
        if (t > last)
            last = t;
    }
    return last > t0 ? (double)(last - t0) / 1e9 : -1;
}

/* The results line and the checks; 0 when every check passed. */
static int s_report(struct sim_run *run, const struct sim_cli *c, double hb_pct, long rss_kib, uint64_t steady_ns)
{
    const struct sim_opts *o = run->o;
    int n = o->agents, live = n - o->silent, errors = 0, sessions = 0, ids = 0, passed = 0, lost_ok = 0;
    struct sim_agent **all = malloc((size_t)n * sizeof *all);
    uint64_t t0 = UINT64_MAX, lost_last = 0;
    if (!all)
        return 1;
    for (int t = 0, k = 0; t < o->threads; t++)
        for (int i = 0; i < run->threads[t].n; i++)
            all[k++] = &run->threads[t].agents[i];
    for (int i = 0; i < n; i++) {
        const struct sim_agent *a = all[i];
        if (a->joined_once && a->join_ns < t0)
            t0 = a->join_ns;
        errors += a->errors;
        sessions += a->sessions;
        ids += a->have_ids;
        passed += a->passed;
        if (a->idx < live && a->stop_reason == PLAUNCH__STOP__REASON__NODE_LOST) {
            lost_ok++;
            lost_last = a->stop_ns > lost_last ? a->stop_ns : lost_last;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double sim_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
    printf("agentsim agents=%d nnodes=%d nproc=%d threads=%d formed_s=%.3f ids_s=%.3f barrier_s=%.3f "
           "hb_cpu_pct=%.1f coord_rss_mib=%.1f sim_cpu_s=%.2f sessions=%d", n, o->nnodes, o->nproc, o->threads,
           s_span(all, n, offsetof(struct sim_agent, assign_ns), t0),
           s_span(all, n, offsetof(struct sim_agent, ids_ns), t0),
           s_span(all, n, offsetof(struct sim_agent, barrier_ns), t0), hb_pct,
           rss_kib >= 0 ? (double)rss_kib / 1024 : -1.0, sim_cpu, sessions);
    if (o->silent)
        printf(" lost_detect_s=%.3f", lost_last > steady_ns ? (double)(lost_last - steady_ns) / 1e9 : -1.0);
    printf("\n");
    int rc = 0;
#define SIM_CHECK(cond, ...) do { int ok_ = (cond); printf("check %s: ", ok_ ? "ok" : "FAILED"); printf(__VA_ARGS__); \
        printf("\n"); rc |= !ok_; } while (0)
    SIM_CHECK(atomic_load(&run->assigned) == n && s_check_ranks(run, all, n) == 0,
              "%d of %d agents assigned, each a distinct node rank and its own contiguous range of %d ranks",
              atomic_load(&run->assigned), n, o->nproc);
    SIM_CHECK(ids == n && atomic_load(&run->id_mismatch) == 0,
              "%d of %d agents hold every id, %d copies differ from the first", ids, n,
              atomic_load(&run->id_mismatch));
    SIM_CHECK(passed == n, "%d of %d agents passed barrier '%s'", passed, n, SIM_BARRIER);
    SIM_CHECK(errors == 0 && atomic_load(&run->failed) == 0, "%d protocol errors, %d agents failed", errors,
              atomic_load(&run->failed));
    if (o->silent)
        SIM_CHECK(lost_ok == live, "%d of %d live agents got STOP(NODE_LOST) after %d went silent", lost_ok, live,
                  o->silent);
    else
        SIM_CHECK(atomic_load(&run->finished) == n, "%d of %d agents got the coordinator's BYE",
                  atomic_load(&run->finished), n);
    (void)c;
    free(all);
    return rc;
}

static int s_setup(struct sim_run *run, const struct sim_opts *o)
{
    char err[512];
    unsigned char key[TLS_TOKEN_MAX_BYTES];
    size_t keylen;
    const char *tok = getenv("PLAUNCH_TOKEN");
    if (!tok || tls_token_parse_hex(tok, key, sizeof key, &keylen, err, sizeof err) < 0 ||
        !(run->tls = tls_ctx_new_psk(0, key, keylen, err, sizeof err))) {
        fprintf(stderr, "pl_agentsim: PLAUNCH_TOKEN: %s\n", tok ? err : "not set (the job's token, hex)");
        return -1;
    }
    if (s_raise_fds(o->agents) < 0 || !(run->zctx = zmq_ctx_new()) ||
        zmq_ctx_set(run->zctx, ZMQ_IO_THREADS, o->threads) < 0 ||
        zmq_ctx_set(run->zctx, ZMQ_MAX_SOCKETS, 4 * o->agents + 1024) < 0) {
        fprintf(stderr, "pl_agentsim: ZeroMQ context: %s\n", zmq_strerror(errno));
        return -1;
    }
    run->threads = calloc((size_t)o->threads, sizeof *run->threads);
    if (!run->threads)
        return -1;
    for (int t = 0; t < o->threads; t++) {
        struct sim_thread *th = &run->threads[t];
        th->run = run;
        th->id = t;
        th->first = (int)((long)o->agents * t / o->threads);
        th->n = (int)((long)o->agents * (t + 1) / o->threads) - th->first;
        th->agents = calloc((size_t)th->n, sizeof *th->agents);
        if (!th->agents || (th->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
            return -1;
        for (int i = 0; i < th->n; i++)
            th->agents[i] = (struct sim_agent){ .idx = th->first + i, .th = th, .st = SA_WAIT, .node_rank = -1 };
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct sim_cli c;
    struct sim_run run = { 0 };
    if (s_parse(argc, argv, &c) < 0)
        return 2;
    const struct sim_opts *o = &c.o;
    run.o = o;
    pthread_mutex_init(&run.ref_lock, NULL);
    if (s_setup(&run, o) < 0)
        return 1;
    uint64_t deadline = sim_now_ns() + (uint64_t)(c.deadline * 1e9);
    for (int t = 0; t < o->threads; t++)
        pthread_create(&run.threads[t].tid, NULL, sim_net_thread, &run.threads[t]);
    if (s_wait_count(&run.barriers_done, &run.failed, o->agents, deadline) < 0)
        fprintf(stderr, "pl_agentsim: deadline: %d assigned, %d hold the ids, %d passed the barrier of %d\n",
                atomic_load(&run.assigned), atomic_load(&run.ids_done), atomic_load(&run.barriers_done), o->agents);
    uint64_t steady_ns = sim_now_ns();
    atomic_store(&run.phase, SIM_STEADY);
    double hb_pct = -1;
    long rss = -1;
    if (o->silent) { /* the coordinator must notice within its heartbeat timeout (plus a tick) */
        uint64_t lost_by = sim_now_ns() + (uint64_t)((o->hb_timeout * 2 + 5) * 1e9);
        s_wait_count(&run.stopped, NULL, o->agents - o->silent, lost_by < deadline ? lost_by : deadline);
    } else if (c.settle + c.hb_window > 0) {
        s_wait_s(c.settle);
        double cpu0 = c.coord_pid ? s_proc_cpu(c.coord_pid) : -1;
        uint64_t w0 = sim_now_ns();
        s_wait_s(c.hb_window);
        double cpu1 = c.coord_pid ? s_proc_cpu(c.coord_pid) : -1;
        if (cpu0 >= 0 && cpu1 >= 0)
            hb_pct = 100 * (cpu1 - cpu0) / ((double)(sim_now_ns() - w0) / 1e9);
    }
    if (c.coord_pid)
        rss = s_proc_hwm_kib(c.coord_pid);
    atomic_store(&run.phase, SIM_END);
    uint64_t end_by = sim_now_ns() + 60000000000ull;
    s_wait_count(&run.finished, &run.failed, o->agents - o->silent, end_by < deadline ? end_by : deadline);
    atomic_store(&run.phase, SIM_QUIT);
    for (int t = 0; t < o->threads; t++)
        pthread_join(run.threads[t].tid, NULL);
    int rc = s_report(&run, &c, hb_pct, rss, steady_ns);
    if (atomic_load(&run.logged) > 20)
        fprintf(stderr, "pl_agentsim: %d more error lines not shown\n", atomic_load(&run.logged) - 20);
    for (int t = 0; t < o->threads; t++) {
        free(run.threads[t].agents);
        close(run.threads[t].epfd);
    }
    free(run.threads);
    zmq_ctx_term(run.zctx);
    tls_ctx_destroy(&run.tls);
    return rc;
}
