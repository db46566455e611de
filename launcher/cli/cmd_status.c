/* cmd_status: `plaunch status` (the job as it is now, once) and `plaunch top` (the same, refreshed on the terminal
 * until q): from LOG_DIR/status.json, which the coordinator rewrites once a second, or from the coordinator itself
 * (--master HOST:PORT, the job's credentials). Both print through the goodput model's status text. */
#include "launcher/cli/cmd_status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "launcher/goodput/goodput.h"
#include "launcher/opts/opts.h"
#include "launcher/cli/status_ask.h"

static const char S_USAGE[] =
    "usage: plaunch status [LOG_DIR | --master HOST:PORT] [--json] [CREDENTIALS] [--timeout SECONDS]\n"
    "       plaunch top [LOG_DIR | --master HOST:PORT] [--interval SECONDS] [CREDENTIALS]\n"
    "\n"
    "The job as it is now: generation, world, restarts, goodput, the current incident, and per node its ranks,\n"
    "state, step and step rate, last output age, GPU utilisation and memory. From LOG_DIR/status.json (default:\n"
    "$PLAUNCH_LOG_DIR, else ./log; the coordinator rewrites it once a second and leaves the last one at the end),\n"
    "else a node's own LOG_DIR/status.NODE.json (or the file named), or from the coordinator over the job's TLS\n"
    "control plane with --master. `top` refreshes it until q.\n"
    "  --master HOST:PORT   ask the coordinator (the --master the job was started with)\n"
    "  --json               print the status document (docs/goodput.md) instead of the table\n"
    "  --interval SECONDS   top: refresh period (default 1, 0.2..60)\n"
    "  --timeout SECONDS    --master: how long to wait for the answer (default 5)\n"
    "  CREDENTIALS          as the job's nodes have them: --token-file FILE, --tls-dir DIR, --insecure, or\n"
    "                       PLAUNCH_TOKEN / PLAUNCH_TOKEN_FILE / PLAUNCH_TLS_DIR in the environment\n"
    "Exit status: 0 shown; 1 no status could be read or asked; 2 bad usage.\n";

struct st_args {
    const char *log_dir, *master;
    int json, top;
    double interval, timeout;
    struct opts o;             /* the credentials only */
};

static int s_usage_error(const char *cmd, const char *msg, const char *arg)
{
    fprintf(stderr, "plaunch %s: %s%s%s\n(plaunch %s --help)\n", cmd, msg, arg ? " " : "", arg ? arg : "", cmd);
    return 2;
}

static int s_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

static int s_parse(int argc, char **argv, struct st_args *a)
{
    const char *cmd = argv[0];
    static const struct option lo[] = {
        { "master", 1, 0, 'm' }, { "json", 0, 0, 'j' }, { "interval", 1, 0, 'i' }, { "timeout", 1, 0, 't' },
        { "token-file", 1, 0, 'f' }, { "tls-dir", 1, 0, 'd' }, { "insecure", 0, 0, 'k' }, { "help", 0, 0, 'h' },
        { 0, 0, 0, 0 } };
    int c;
    a->interval = 1;
    a->timeout = 5;
    a->top = strcmp(cmd, "top") == 0;
    const char *env;
    if ((env = getenv("PLAUNCH_TOKEN")) && *env)
        snprintf(a->o.token, sizeof a->o.token, "%s", env);
    if ((env = getenv("PLAUNCH_TOKEN_FILE")) && *env)
        snprintf(a->o.token_file, sizeof a->o.token_file, "%s", env);
    if ((env = getenv("PLAUNCH_TLS_DIR")) && *env)
        snprintf(a->o.tls_dir, sizeof a->o.tls_dir, "%s", env);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'm': a->master = optarg; break;
        case 'j': a->json = 1; break;
        case 'i':
            if (s_num(optarg, 0.2, 60, &a->interval) < 0)
                return s_usage_error(cmd, "--interval: expected seconds in 0.2..60, not", optarg);
            break;
        case 't':
            if (s_num(optarg, 0.1, 600, &a->timeout) < 0)
                return s_usage_error(cmd, "--timeout: expected seconds in 0.1..600, not", optarg);
            break;
        case 'f':
            a->o.token[0] = 0;
            snprintf(a->o.token_file, sizeof a->o.token_file, "%s", optarg);
            break;
        case 'd': snprintf(a->o.tls_dir, sizeof a->o.tls_dir, "%s", optarg); break;
        case 'k': a->o.insecure = 1; break;
        case 'h': fputs(S_USAGE, stdout); return 0;
        default: return s_usage_error(cmd, "unknown option", argv[optind - 1]);
        }
    }
    if (optind < argc)
        a->log_dir = argv[optind++];
    if (optind < argc)
        return s_usage_error(cmd, "one LOG_DIR at most; extra argument", argv[optind]);
    if (a->log_dir && a->master)
        return s_usage_error(cmd, "give LOG_DIR or --master, not both", NULL);
    if (a->json && a->top)
        return s_usage_error(cmd, "--json is for plaunch status", NULL);
    if (!a->log_dir && !a->master)
        a->log_dir = (env = getenv("PLAUNCH_LOG_DIR")) && *env ? env : "log";
    return -1;
}

/* Where the view is: LOG_DIR/status.json (the coordinator's), else the one LOG_DIR/status.NODE.json there is (a
 * node's own), or the file named. 0, or -1 with a message naming what is there. */
static int s_where(const char *arg, char *path, size_t cap, char *err, size_t errlen)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(path, cap, "%s", arg);
        return 0;
    }
    snprintf(path, cap, "%s/status.json", arg);
    if (stat(path, &st) == 0 || stat(arg, &st) < 0 || !S_ISDIR(st.st_mode))
        return 0; /* there, or no directory: the read says what is wrong */
    DIR *d = opendir(arg);
    char names[600] = "", one[300] = "";
    int n = 0;
    for (struct dirent *e; d && n < 100 && (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l > 12 && l < sizeof one && strncmp(e->d_name, "status.", 7) == 0 && strcmp(e->d_name + l - 5, ".json") == 0) {
            if (!n++)
                snprintf(one, sizeof one, "%s", e->d_name);
            if (strlen(names) + l + 3 < sizeof names)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", n > 1 ? ", " : "", e->d_name);
        }
    }
    if (d)
        closedir(d);
    if (n == 1)
        snprintf(path, cap, "%s/%s", arg, one);
    else if (n > 1) {
        snprintf(err, errlen, "%s has no status.json (the coordinator's) but the views of %d nodes: %s; name one "
                 "(plaunch status %s/FILE) or ask the coordinator (--master HOST:PORT)", arg, n, names, arg);
        return -1;
    }
    return 0;
}

/* The status document at path, at most GP_STATUS_MAX bytes, only a regular file (never a FIFO someone put there). */
static char *s_read_file(const char *arg, size_t *len, char *err, size_t errlen)
{
    char path[4200];
    struct stat st;
    if (s_where(arg, path, sizeof path, err, errlen) < 0)
        return NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: %s", path,
                 fd < 0 && errno == ENOENT ? "no such file (is LOG_DIR the job's --log-dir, and has its coordinator "
                                             "run on this node? Else ask it: --master HOST:PORT)"
                 : fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = malloc(GP_STATUS_MAX + 1);
    size_t n = 0;
    ssize_t r = 0;
    while (buf && n <= GP_STATUS_MAX && (r = read(fd, buf + n, GP_STATUS_MAX + 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    if (!buf || r < 0 || n > GP_STATUS_MAX) {
        snprintf(err, errlen, "%s: %s", path, !buf ? "out of memory" : r < 0 ? strerror(errno) : "too big");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static uint64_t s_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The status document and its model; NULL with a message. */
static gp_t *s_fetch(const struct st_args *a, char **doc, size_t *len, char *err, size_t errlen)
{
    char *text = a->master ? status_ask(a->master, &a->o, (int)(a->timeout * 1000), len, err, errlen)
                           : s_read_file(a->log_dir, len, err, errlen);
    if (!text)
        return NULL;
    gp_t *g = gp_status_load(text, *len, s_mono_ns(), err, errlen);
    if (doc && g)
        *doc = text;
    else
        free(text);
    return g;
}

static void s_term_size(int *cols, int *rows)
{
    struct winsize ws;
    *cols = 0, *rows = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

static int s_status(const struct st_args *a)
{
    char err[4400], *doc = NULL;
    size_t len;
    gp_t *g = s_fetch(a, &doc, &len, err, sizeof err);
    if (!g) {
        fprintf(stderr, "plaunch status: %s\n", err);
        return 1;
    }
    if (a->json) {
        fwrite(doc, 1, len, stdout);
        if (len && doc[len - 1] != '\n')
            putchar('\n');
    } else {
        static char text[1 << 20];
        int cols = 0, rows = 0;
        if (isatty(STDOUT_FILENO))
            s_term_size(&cols, &rows);
        gp_status_text(g, s_mono_ns(), cols, 0, text, sizeof text);
        fputs(text, stdout);
    }
    free(doc);
    gp_free(&g);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- top -------------------------------------------------------------------------------------------------- */

static volatile sig_atomic_t s_stop, s_resized;
static void s_on_signal(int sig) { s_stop = sig; }
static void s_on_winch(int sig) { (void)sig, s_resized = 1; }

static void s_draw(const char *text, const char *foot)
{
    /* home, every line cleared to its end, then the rest of the screen: no flicker, no scrolling */
    fputs("\033[H", stdout);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fwrite(p, 1, n, stdout);
        fputs("\033[K\r\n", stdout);
        p += n + (nl ? 1 : 0);
    }
    fputs(foot, stdout);
    fputs("\033[K\033[J", stdout);
    fflush(stdout);
}

static int s_top(const struct st_args *a)
{
    static char text[1 << 20];
    struct termios saved, raw;
    int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    struct sigaction sa = { 0 }, sw = { 0 };
    sa.sa_handler = s_on_signal;
    sw.sa_handler = s_on_winch;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGWINCH, &sw, NULL);
    if (tty) {
        raw = saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    fputs("\033[?1049h\033[?25l", stdout); /* the alternate screen, no cursor: the user's screen comes back */
    int cols, rows;
    s_term_size(&cols, &rows);
    while (!s_stop) {
        char err[4400], foot[600];
        size_t len;
        if (s_resized) {
            s_resized = 0;
            s_term_size(&cols, &rows);
        }
        gp_t *g = s_fetch(a, NULL, &len, err, sizeof err);
        time_t now = time(NULL);
        char when[32];
        strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
        if (g) {
            gp_status_text(g, s_mono_ns(), cols, rows > 2 ? rows - 1 : 0, text, sizeof text);
            gp_free(&g);
        } else {
            snprintf(text, sizeof text, "plaunch top: %.*s\n", cols > 14 ? cols - 14 : 200, err);
        }
        snprintf(foot, sizeof foot, "plaunch top %s  every %.1f s  q quits", when, a->interval);
        s_draw(text, foot);
        struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
        uint64_t until = s_mono_ns() + (uint64_t)(a->interval * 1e9);
        for (uint64_t t; !s_stop && !s_resized && (t = s_mono_ns()) < until;) {
            int r = poll(&p, tty ? 1 : 0, (int)((until - t) / 1000000) + 1);
            char c;
            if (r > 0 && (p.revents & POLLIN) && read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
                s_stop = -1;
            else if (r > 0 && (p.revents & (POLLHUP | POLLERR)))
                tty = 0; /* no keyboard any more: refresh until a signal */
        }
    }
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    if (isatty(STDIN_FILENO))
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    return 0;
}

int cmd_status(int argc, char **argv)
{
    struct st_args a = { 0 };
    int rc = s_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    return a.top ? s_top(&a) : s_status(&a);
}
