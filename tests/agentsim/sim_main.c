/* pl_agentsim: N simulated plaunch agents in one process against a real coordinator: each with its own ZeroMQ
 * socket and TLS 1.3 session (PSK handshake), JOIN, ASSIGN, NCCL ids, a barrier and heartbeats, through the real
 * agent's protocol code (common/wire, common/tls). Measures the rendezvous, the coordinator's CPU at steady
 * heartbeats and its peak RSS, and checks what every agent got; scripts/bench-scale.sh and agentsim.t run it. */
#include "tests/agentsim/sim.h"
#include "launcher/job/joblayout.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char s_usage[] =
    "Usage: pl_agentsim --master HOST:PORT --agents N [--nnodes N] [--nproc P] [--threads T] [--window W]\n"
    "                   [--heartbeat S] [--heartbeat-timeout S] [--ranks] [--silent K] [--keys K1,K2]\n"
    "                   [--coord-pid PID] [--settle S] [--hb-window S] [--deadline S] [--addr ADDR] [--procs K]\n"
    "                   [--relay-fanout F] [--relays R] [--elastic] [--relay-port P]\n"
    "PLAUNCH_TOKEN holds the job's token. N agents join the coordinator at HOST:PORT (--nnodes: what every ASSIGN\n"
    "must say, default N + 1: node 0 is a real plaunch), P simulated workers each get the ids of the keys (default\n"
    "world,pipeline) and pass barrier 'done', then heartbeats run for --settle + --hb-window s (the coordinator's\n"
    "CPU is sampled over the window when --coord-pid is given; its exit ends the waits for the job), then every\n"
    "agent ends with status 0. --silent K: the last K agents stop sending once steady; the others must get\n"
    "STOP(NODE_LOST). --window W: at most W\n"
    "agents in a handshake at once (default: all at once, as real nodes starting together). --procs K: the agents\n"
    "are shared by K processes of --threads threads each (default: as many as the descriptor limit needs, five\n"
    "descriptors per agent). --relay-fanout auto|off|K: the coordinator's (default auto); --relays R: agents\n"
    "that can relay, each on a thread of its own running the real agent's link and relay code (default: as many\n"
    "as the coordinator wants, plus 2); they join first. By default the join is ranked (--nnodes N + 1 only):\n"
    "agent i is node rank i + 1, the layout's relays (ranks 1..R, launcher/job/joblayout.h) relay from the start\n"
    "at their address and --relay-port (default: the coordinator's port + 1), the others join their relay directly;\n"
    "--elastic: no ranks known, the coordinator REDIRECTs newcomers to the relays it asked. Prints one line of\n"
    "results and the checks; exit 0 when every check passed, 1 otherwise, 2 for bad usage.\n";

struct sim_cli {
    struct sim_opts o;
    int coord_pid;
    double settle, hb_window, deadline;
};

/* Descriptors agents [0, upto) need: each its own (and a REDIRECT's second socket), a ranked relay its nodes'
 * connections too (relays are agents 0..want-1). */
static long s_cost_upto(const struct sim_opts *o, int upto)
{
    long k = o->want ? o->agents / o->want + 1 : 0, relays = o->ranked ? (upto < o->want ? upto : o->want) : 0;
    return (long)upto * (SIM_FDS_PER_AGENT + 5) + relays * (k + k / 4 + 18);
}

static int s_parse(int argc, char **argv, struct sim_cli *c)
{
    static const struct option longs[] = {
        { "master", 1, 0, 'm' }, { "agents", 1, 0, 'n' }, { "nnodes", 1, 0, 'N' }, { "nproc", 1, 0, 'p' },
        { "threads", 1, 0, 't' }, { "window", 1, 0, 'w' }, { "heartbeat", 1, 0, 'h' },
        { "heartbeat-timeout", 1, 0, 'H' }, { "ranks", 0, 0, 'r' }, { "silent", 1, 0, 's' }, { "keys", 1, 0, 'k' },
        { "coord-pid", 1, 0, 'c' }, { "settle", 1, 0, 'S' }, { "hb-window", 1, 0, 'W' }, { "deadline", 1, 0, 'd' },
        { "addr", 1, 0, 'a' }, { "procs", 1, 0, 'P' }, { "relay-fanout", 1, 0, 'f' }, { "relays", 1, 0, 'R' },
        { "elastic", 0, 0, 'e' }, { "relay-port", 1, 0, 'y' }, { "help", 0, 0, '?' }, { 0, 0, 0, 0 } };
    static char keys[256] = "world,pipeline";
    struct sim_opts *o = &c->o;
    const char *master = NULL;
    int opt;
    *c = (struct sim_cli){ .settle = 2, .hb_window = 10, .deadline = 300 };
    *o = (struct sim_opts){ .nproc = 1, .heartbeat = 0.5, .hb_timeout = 2.5,
                            .nnodes = -1, .threads = -1, .fanout = -1, .relays = -1, .ranked = 1 };
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
        case 'P': o->procs = atoi(optarg); break;
        case 'f': o->fanout = strcmp(optarg, "auto") == 0 ? -1 : strcmp(optarg, "off") == 0 ? 0 : atoi(optarg); break;
        case 'R': o->relays = atoi(optarg); break;
        case 'e': o->ranked = 0; break;
        case 'y': o->relay_port = atoi(optarg); break;
        default: fputs(s_usage, stderr); return -1;
        }
    }
    for (char *save = NULL, *k = strtok_r(keys, ",", &save); k && o->nkeys < SIM_MAX_KEYS;
         k = strtok_r(NULL, ",", &save))
        o->keys[o->nkeys++] = k;
    if (o->nnodes < 0)
        o->nnodes = o->agents + 1;
    struct joblayout l;
    joblayout_plan(&l, o->nnodes, o->fanout);
    o->want = l.nrelays;
    if (o->ranked && o->nnodes != o->agents + 1)
        o->ranked = 0; /* the layout needs every rank: agent i is node i + 1 */
    if (o->ranked) /* the layout's relays are ranks 1..R: agents 0..R-1 */
        o->ranks = 1, o->relays = o->want;
    if (o->relays < 0)
        o->relays = o->want ? o->want + 2 : 0;
    if (o->procs <= 0) { /* as many as the descriptor limit needs: a relay holds its nodes' connections, a REDIRECT
                          * briefly holds two sockets (libzmq aborts a process that runs out) */
        struct rlimit rl;
        long cap = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > 1024
                       ? (long)rl.rlim_max - 512 : 1000000;
        o->procs = (int)((s_cost_upto(o, o->agents) + cap - 1) / cap);
    }
    if (o->threads < 0)
        o->threads = o->procs > 1 ? 1 : 2;
    if (!master || optind != argc || o->agents < 1 || o->nproc < 1 || o->nproc > SIM_MAX_NPROC || o->threads < 1 ||
        o->threads > 64 || o->silent < 0 || o->silent >= o->agents || o->heartbeat <= 0 ||
        o->hb_timeout <= o->heartbeat || o->nkeys < 1 || o->procs < 1 || o->procs > o->agents ||
        o->relays > o->agents || o->fanout == 1 || o->fanout < -1) {
        fputs(s_usage, stderr);
        return -1;
    }
    snprintf(o->endpoint, sizeof o->endpoint, "tcp://%s", master);
    const char *colon = strrchr(master, ':');
    if (!o->relay_port) /* as plaunch's ranked relays: --master's port + 1 */
        o->relay_port = colon ? atoi(colon + 1) + 1 : 0;
    if (o->ranked && (o->relay_port < 1 || o->relay_port + (o->addr ? o->want : 0) > 65535)) {
        fputs(s_usage, stderr);
        return -1;
    }
    return 0;
}

/* The coordinator's CPU time in seconds (every thread) and its peak RSS in KiB, from /proc. */
/* --coord-pid ended (gone, or a zombie its parent has not reaped yet): nothing more will come. */
static int s_coord_pid, s_coord_ended;
static int s_coord_gone(void)
{
    if (s_coord_pid && !s_coord_ended)
        s_coord_ended = sim_proc_ended(s_coord_pid);
    return s_coord_ended;
}

/* poll() until one of fds is ready, the deadline (ns), or (watch) the coordinator's end: poll's result, 0 for the
 * last two. */
static int s_poll(struct pollfd *pfd, nfds_t n, uint64_t deadline, int watch)
{
    for (;;) {
        uint64_t now = sim_now_ns();
        int ms = deadline > now ? (int)((deadline - now) / 1000000) + 1 : 0;
        int r = poll(pfd, n, ms < 200 ? ms : 200);
        if (r != 0 || ms <= 200)
            return r;
        if (watch && s_coord_gone())
            return 0;
    }
}

/* Why a wait ended early: the coordinator's exit, or --deadline. */
static const char *s_until(const struct sim_cli *c)
{
    static char text[96];
    if (s_coord_ended)
        snprintf(text, sizeof text, "before the coordinator (--coord-pid %d) exited", s_coord_pid);
    else
        snprintf(text, sizeof text, "within --deadline %g s", c->deadline);
    return text;
}

static void s_nap_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void s_wait_s(double s)
{
    uint64_t until = sim_now_ns() + (uint64_t)(s * 1e9);
    while (sim_now_ns() < until)
        s_nap_ms(10);
}

static int s_cmp_first(const void *x, const void *y)
{
    const struct sim_result *a = x, *b = y;
    return (a->first_rank > b->first_rank) - (a->first_rank < b->first_rank);
}

/* Distinct node ranks, one contiguous range of nproc ranks each, no two overlapping, all inside one world. */
static int s_check_ranks(const struct sim_opts *o, struct sim_result *all, int n)
{
    unsigned char *seen = calloc((size_t)o->nnodes, 1);
    int bad = !seen;
    qsort(all, (size_t)n, sizeof *all, s_cmp_first);
    for (int i = 0; i < n && !bad; i++) {
        const struct sim_result *a = &all[i];
        if (!a->assigned || a->world != all[0].world || a->nnodes != o->nnodes || a->node_rank < 0 ||
            a->node_rank >= o->nnodes || seen[a->node_rank]++ || a->first_rank + o->nproc > a->world ||
            (i > 0 && all[i - 1].first_rank + o->nproc > a->first_rank)) {
            fprintf(stderr, "pl_agentsim: agent %d: node rank %d, ranks %d-%d of %d (%s)\n", a->idx, a->node_rank,
                    a->first_rank, a->first_rank + o->nproc - 1, a->world, a->assigned ? "overlaps or outside"
                                                                                          : "no ASSIGN");
            bad = 1;
        }
    }
    free(seen);
    return bad ? -1 : 0;
}

/* Seconds from t0 to the latest of one timestamp over every agent; -1 when one of them never got there. */
static double s_span(const struct sim_result *all, int n, size_t off, uint64_t t0)
{
    uint64_t last = 0;
    for (int i = 0; i < n; i++) {
        uint64_t t = *(const uint64_t *)((const char *)&all[i] + off);
        if (!t)
            return -1;
        last = t > last ? t : last;
    }
    return last > t0 ? (double)(last - t0) / 1e9 : -1;
}

struct sim_totals {
    int failed, id_mismatch, finished, logged;
    int have_ref[SIM_MAX_KEYS];
    unsigned char ref[SIM_MAX_KEYS][WIRE_NCCL_ID_BYTES];
};

struct sim_meas {
    double hb_pct, form_cpu;
    long rss_kib;
    uint64_t steady_ns;
};

/* The results line and the checks; 0 when every check passed. */
static int s_report(const struct sim_opts *o, struct sim_result *all, const struct sim_totals *t,
                    const struct sim_meas *m)
{
    int n = o->agents, live = n - o->silent, errors = 0, sessions = 0, ids = 0, passed = 0, lost_ok = 0, got = 0;
    int relaying = 0, redirected = 0;
    uint64_t t0 = UINT64_MAX, lost_last = 0;
    for (int i = 0; i < n; i++) {
        const struct sim_result *a = &all[i];
        if (a->joined && a->join_ns < t0)
            t0 = a->join_ns;
        errors += a->errors;
        sessions += a->sessions;
        ids += a->have_ids;
        passed += a->passed;
        got += a->assigned;
        relaying += a->relaying;
        redirected += a->redirected;
        if (a->idx < live && a->stop_reason == PLAUNCH__STOP__REASON__NODE_LOST) {
            lost_ok++;
            lost_last = a->stop_ns > lost_last ? a->stop_ns : lost_last;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double sim_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
    printf("agentsim agents=%d nnodes=%d nproc=%d procs=%d threads=%d formed_s=%.3f ids_s=%.3f barrier_s=%.3f "
           "hb_cpu_pct=%.1f coord_rss_mib=%.1f coord_form_cpu_s=%.2f sim_cpu_s=%.2f sessions=%d", n, o->nnodes,
           o->nproc, o->procs, o->threads, s_span(all, n, offsetof(struct sim_result, assign_ns), t0),
           s_span(all, n, offsetof(struct sim_result, ids_ns), t0),
           s_span(all, n, offsetof(struct sim_result, barrier_ns), t0), m->hb_pct,
           m->rss_kib >= 0 ? (double)m->rss_kib / 1024 : -1.0, m->form_cpu, sim_cpu, sessions);
    if (o->silent)
        printf(" lost_detect_s=%.3f", lost_last > m->steady_ns ? (double)(lost_last - m->steady_ns) / 1e9 : -1.0);
    printf(" relays=%d via_relays=%d world=%d\n", relaying, redirected, n ? all[0].world : -1);
    for (int j = 0; j < o->nkeys; j++) { /* the ids every agent holds, for a comparison with the real nodes' */
        printf("agentsim id %s ", o->keys[j]);
        for (int b = 0; b < WIRE_NCCL_ID_BYTES; b++)
            printf("%02x", t->have_ref[j] ? t->ref[j][b] : 0);
        printf("\n");
    }
    int rc = 0;
#define SIM_CHECK(cond, ...) do { int ok_ = (cond); printf("check %s: ", ok_ ? "ok" : "FAILED"); printf(__VA_ARGS__); \
        printf("\n"); rc |= !ok_; } while (0)
    SIM_CHECK(got == n && s_check_ranks(o, all, n) == 0,
              "%d of %d agents assigned, each a distinct node rank and its own contiguous range of %d ranks", got, n,
              o->nproc);
    SIM_CHECK(ids == n && t->id_mismatch == 0, "%d of %d agents hold every id, %d copies differ from the first", ids,
              n, t->id_mismatch);
    SIM_CHECK(passed == n, "%d of %d agents passed barrier '%s'", passed, n, SIM_BARRIER);
    SIM_CHECK(errors == 0 && t->failed == 0, "%d protocol errors, %d agents failed", errors, t->failed);
    if (o->silent)
        SIM_CHECK(lost_ok == live, "%d of %d live agents got STOP(NODE_LOST) after %d went silent", lost_ok, live,
                  o->silent);
    else
        SIM_CHECK(t->finished == n, "%d of %d agents got the coordinator's BYE", t->finished, n);
    return rc;
}

struct sim_child {
    pid_t pid;
    int up, down, first, n;
};

static int s_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

/* Waits until every child sent byte `want` (or the deadline, ns); 0, or -1. */
static int s_wait_children(struct sim_child *ch, int k, char want, uint64_t deadline, int watch)
{
    for (int i = 0; i < k; i++) {
        for (;;) {
            struct pollfd pfd = { .fd = ch[i].up, .events = POLLIN };
            char c;
            if (s_poll(&pfd, 1, deadline, watch) <= 0)
                return -1;
            if (read(ch[i].up, &c, 1) != 1)
                return -1;
            if (c == want)
                break;
        }
    }
    return 0;
}

/* Every process says its agents that can relay joined ('J'), and as many relays as the coordinator asks answered
 * ('R', 'N'); then the others may start. 0, or -1 at the deadline (ns). */
static int s_wait_hosts(const struct sim_opts *o, struct sim_child *ch, uint64_t deadline)
{
    int joined = 0, answered = 0, want = o->want < o->relays ? o->want : o->relays;
    struct pollfd *pfd = calloc((size_t)(o->procs > 0 ? o->procs : 1), sizeof *pfd);
    if (!pfd)
        return -1;
    for (int i = 0; i < o->procs; i++)
        pfd[i] = (struct pollfd){ .fd = ch[i].up, .events = POLLIN };
    while (joined < o->procs || answered < want) {
        if (s_poll(pfd, (nfds_t)o->procs, deadline, 1) <= 0)
            break;
        for (int i = 0; i < o->procs; i++) {
            char c;
            if (!(pfd[i].revents & POLLIN))
                continue;
            if (read(ch[i].up, &c, 1) != 1) {
                pfd[i].fd = -1;
                continue;
            }
            joined += c == SIM_UP_JOINED;
            answered += c == SIM_UP_RELAY || c == SIM_UP_NORELAY;
        }
    }
    free(pfd);
    return joined < o->procs || answered < want ? -1 : 0;
}

static void s_tell(struct sim_child *ch, int k, char c)
{
    for (int i = 0; i < k; i++)
        if (write(ch[i].down, &c, 1) != 1)
            fprintf(stderr, "pl_agentsim: process %d is gone\n", (int)ch[i].pid);
}

static int s_fork(const struct sim_opts *o, struct sim_child *ch, int i)
{
    int up[2], down[2];
    /* shares of equal descriptor cost: the ranked layout's relays (the first agents) take room for their nodes */
    long total = s_cost_upto(o, o->agents);
    int a = 0, b;
    while (a < o->agents && s_cost_upto(o, a) < total * i / o->procs)
        a++;
    for (b = a; b < o->agents && s_cost_upto(o, b) < total * (i + 1) / o->procs;)
        b++;
    ch->first = a;
    ch->n = (i == o->procs - 1 ? o->agents : b) - a;
    if (pipe(up) < 0 || pipe(down) < 0)
        return -1;
    fflush(NULL);
    ch->pid = fork();
    if (ch->pid < 0)
        return -1;
    if (ch->pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(sim_part_run(o, ch->first, ch->n, up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    ch->up = up[0];
    ch->down = down[1];
    return 0;
}

/* Every child's report and results; ids compared across processes. */
static int s_collect(const struct sim_opts *o, struct sim_child *ch, struct sim_result *all, struct sim_totals *t)
{
    int k = 0;
    for (int i = 0; i < o->procs; i++) {
        struct sim_part_report rep;
        if (s_wait_children(&ch[i], 1, SIM_UP_DONE, sim_now_ns() + 120000000000ull, 0) < 0 ||
            s_read_all(ch[i].up, &rep, sizeof rep) < 0 || rep.n != ch[i].n ||
            s_read_all(ch[i].up, all + k, (size_t)rep.n * sizeof *all) < 0) {
            fprintf(stderr, "pl_agentsim: no results from process %d\n", (int)ch[i].pid);
            return -1;
        }
        k += rep.n;
        t->failed += rep.failed;
        t->id_mismatch += rep.id_mismatch;
        t->finished += rep.finished;
        t->logged += rep.logged;
        for (int j = 0; j < SIM_MAX_KEYS; j++) {
            if (!rep.have_ref[j])
                continue;
            if (!t->have_ref[j])
                memcpy(t->ref[j], rep.ref[j], WIRE_NCCL_ID_BYTES);
            else if (memcmp(t->ref[j], rep.ref[j], WIRE_NCCL_ID_BYTES) != 0)
                t->id_mismatch++;
            t->have_ref[j] = 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct sim_cli c;
    if (s_parse(argc, argv, &c) < 0)
        return 2;
    struct sim_opts *o = &c.o;
    struct sim_child *ch = calloc((size_t)o->procs, sizeof *ch);
    struct sim_result *all = calloc((size_t)o->agents, sizeof *all);
    struct sim_totals t = { 0 };
    struct sim_meas m = { .hb_pct = -1, .form_cpu = -1, .rss_kib = -1 };
    if (!ch || !all)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    uint64_t deadline = sim_now_ns() + (uint64_t)(c.deadline * 1e9);
    s_coord_pid = c.coord_pid;
    double cpu_start = c.coord_pid ? sim_proc_cpu(c.coord_pid) : -1;
    for (int i = 0; i < o->procs; i++)
        if (s_fork(o, &ch[i], i) < 0) {
            fprintf(stderr, "pl_agentsim: cannot start process %d: %s\n", i, strerror(errno));
            return 1;
        }
    if (s_wait_hosts(o, ch, deadline) < 0)
        fprintf(stderr, "pl_agentsim: the agents that can relay did not join (and relay) %s\n", s_until(&c));
    s_tell(ch, o->procs, SIM_DOWN_GO);
    if (s_wait_children(ch, o->procs, SIM_UP_FORMED, deadline, 1) < 0)
        fprintf(stderr, "pl_agentsim: the job did not form %s\n", s_until(&c));
    m.steady_ns = sim_now_ns();
    m.form_cpu = cpu_start >= 0 ? sim_proc_cpu(c.coord_pid) - cpu_start : -1;
    s_tell(ch, o->procs, SIM_DOWN_STEADY);
    if (o->silent) { /* the coordinator must notice within its heartbeat timeout (plus a tick) */
        uint64_t lost_by = sim_now_ns() + (uint64_t)((o->hb_timeout * 2 + 5) * 1e9);
        if (s_wait_children(ch, o->procs, SIM_UP_STOPPED, lost_by < deadline ? lost_by : deadline, 1) < 0)
            fprintf(stderr, "pl_agentsim: not every live agent got STOP within %.1f s\n", o->hb_timeout * 2 + 5);
    } else if (c.settle + c.hb_window > 0) {
        s_wait_s(c.settle);
        double cpu0 = c.coord_pid ? sim_proc_cpu(c.coord_pid) : -1;
        uint64_t w0 = sim_now_ns();
        s_wait_s(c.hb_window);
        double cpu1 = c.coord_pid ? sim_proc_cpu(c.coord_pid) : -1;
        if (cpu0 >= 0 && cpu1 >= 0)
            m.hb_pct = 100 * (cpu1 - cpu0) / ((double)(sim_now_ns() - w0) / 1e9);
    }
    if (c.coord_pid)
        m.rss_kib = sim_proc_hwm_kib(c.coord_pid);
    s_tell(ch, o->procs, SIM_DOWN_END);
    int rc = s_collect(o, ch, all, &t);
    for (int i = 0; i < o->procs; i++) {
        int st;
        waitpid(ch[i].pid, &st, 0);
        rc |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    if (rc == 0)
        rc = s_report(o, all, &t, &m);
    if (t.logged > 20 * o->procs)
        fprintf(stderr, "pl_agentsim: %d more error lines not shown\n", t.logged - 20 * o->procs);
    free(all);
    free(ch);
    return rc ? 1 : 0;
}
