/* pl_hang: launcher/hang's parsing and grouping on real files, for the black-box tests: faulthandler dumps from a
 * log's tail, and `plaunch __stacks` documents carried as the agent and the coordinator would (one bounded JSON
 * document per rank, decoded, grouped, rendered). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher/hang/hang_group.h"
#include "launcher/hang/hang_json.h"
#include "launcher/hang/hang_pytb.h"

static const char s_usage[] =
    "Usage: pl_hang pytb LOG [TAIL_BYTES]\n"
    "         prints the threads and frames of the last faulthandler dump in LOG's last TAIL_BYTES (64 KiB)\n"
    "       pl_hang group STACKS.json [--pytb RANK=LOG]... RANK=PID[:NODE[:GPU]]...\n"
    "         each rank's tree from the __stacks document (plus its faulthandler dump), sent through its bounded\n"
    "         JSON, grouped: prints 'summary: ...', 'odd: RANKS' and the text of hang.0.txt\n";

#define S_MAX_RANKS 64

/* The last tail bytes of path (malloc'ed), or NULL. */
static char *s_tail(const char *path, size_t tail, size_t *len)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        perror(path);
        exit(1);
    }
    off_t from = st.st_size > (off_t)tail ? st.st_size - (off_t)tail : 0;
    char *buf = malloc(tail + 1);
    ssize_t n = pread(fd, buf, tail, from);
    close(fd);
    *len = n > 0 ? (size_t)n : 0;
    return buf;
}

static int s_pytb(const char *path, size_t tail)
{
    char err[256];
    int fd = open(path, O_RDONLY);
    struct hang_trace *t = hang_trace_new();
    int n = fd < 0 ? -1 : hang_pytb_attach_fd(t, 1, fd, tail, err, sizeof err);
    if (fd < 0)
        snprintf(err, sizeof err, "%s: cannot open", path);
    else
        close(fd);
    if (n < 0) {
        fprintf(stderr, "pl_hang: %s\n", err);
        return 1;
    }
    printf("threads %d\n", n);
    for (int k = 0; k < n; k++) {
        const struct hang_thread *th = &t->procs[0].py[k];
        printf("thread %s current=%d frames=%d\n", th->id, th->current, th->nframes);
        for (int f = 0; f < th->nframes; f++)
            printf("  %s %s:%d\n", th->frames[f].fn, th->frames[f].file, th->frames[f].line);
    }
    hang_trace_destroy(&t);
    return 0;
}

static int s_group(int argc, char **argv)
{
    size_t len;
    char err[512], *doc = s_tail(argv[0], HANG_JSON_MAX, &len);
    struct hang_trace *all = hang_json_decode(doc, len, NULL, NULL, err, sizeof err);
    if (!all) {
        fprintf(stderr, "pl_hang: %s: %s\n", argv[0], err);
        return 1;
    }
    static struct hang_json_rank who[S_MAX_RANKS];
    static struct hang_trace *traces[S_MAX_RANKS];
    static struct hang_rank ranks[S_MAX_RANKS];
    const char *logs[S_MAX_RANKS] = { 0 };
    int n = 0;
    for (int i = 1; i < argc; i++) {
        int rank = 0, pid = 0, used = 0;
        if (strcmp(argv[i], "--pytb") == 0 && i + 1 < argc && sscanf(argv[i + 1], "%d=%n", &rank, &used) == 1 &&
            rank >= 0 && rank < S_MAX_RANKS) {
            logs[rank] = argv[++i] + used;
            continue;
        }
        if (n == S_MAX_RANKS || sscanf(argv[i], "%d=%d%n", &rank, &pid, &used) != 2) {
            fputs(s_usage, stderr);
            return 2;
        }
        struct hang_json_rank *w = &who[n];
        w->rank = rank, w->pid = pid;
        sscanf(argv[i] + used, ":%127[^:]:%127s", w->node, w->gpu);
        if (!w->node[0])
            snprintf(w->node, sizeof w->node, "localhost");
        /* The agent's side: this rank's tree, its faulthandler dump, one bounded document. */
        struct hang_trace *mine = hang_trace_root(all, pid);
        if (rank < S_MAX_RANKS && logs[rank]) {
            size_t ll;
            char *tail = s_tail(logs[rank], 64u << 10, &ll);
            if (hang_pytb_attach(mine, pid, tail, ll, err, sizeof err) < 0)
                fprintf(stderr, "pl_hang: rank %d: %s\n", rank, err);
            free(tail);
        }
        char *text = hang_json_encode(mine, w, HANG_JSON_RANK_MAX);
        hang_trace_destroy(&mine);
        /* The coordinator's side. */
        struct hang_json_rank got;
        int has = 0;
        traces[n] = text ? hang_json_decode(text, strlen(text), &got, &has, err, sizeof err) : NULL;
        if (!traces[n] || !has || got.rank != rank) {
            fprintf(stderr, "pl_hang: rank %d's document: %s\n", rank, traces[n] ? "rank keys lost" : err);
            return 1;
        }
        printf("rank %d: %zu bytes\n", rank, strlen(text));
        free(text);
        ranks[n] = (struct hang_rank){ .rank = rank, .node = w->node, .gpu = w->gpu, .pid = pid,
                                       .trace = traces[n]->nprocs ? traces[n] : NULL, .error = NULL };
        n++;
    }
    hang_group_t *g = hang_group_new(ranks, n);
    char *sum = hang_group_summary(g), *text = hang_group_text(g, 0);
    int odd[S_MAX_RANKS], nodd = hang_group_odd(g, odd, S_MAX_RANKS);
    printf("summary: %s\nodd:", sum);
    for (int i = 0; i < nodd; i++)
        printf(" %d", odd[i]);
    printf("\n%s", text);
    free(sum);
    free(text);
    hang_group_destroy(&g);
    for (int i = 0; i < n; i++)
        hang_trace_destroy(&traces[i]);
    hang_trace_destroy(&all);
    free(doc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "pytb") == 0)
        return s_pytb(argv[2], argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 64u << 10);
    if (argc >= 3 && strcmp(argv[1], "group") == 0)
        return s_group(argc - 2, argv + 2);
    fputs(s_usage, stderr);
    return 2;
}
