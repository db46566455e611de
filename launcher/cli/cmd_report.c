/* cmd_report: `plaunch report LOGDIR`: reads a finished or running job's monitor files and logs, prints the per-rank
 * table, the findings and the root cause, and writes the JSON (schema: mon_report_out.h) and HTML reports. */
#include "launcher/cli/cmd_report.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/monitor/report/mon_html.h"
#include "launcher/monitor/report/mon_report.h"
#include "launcher/monitor/report/mon_report_out.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"
#include "common/ownfile.h"

static const char S_USAGE[] =
    "usage: plaunch report LOGDIR [--json FILE] [--html FILE] [--monitor-config FILE]\n"
    "\n"
    "The health of a finished or running job from its log directory: every node's monitor.NODE.csv (written with\n"
    "--monitor) and the root cause in plaunch.log / plaunch.NODE.log. Prints a per-rank table, the findings (the\n"
    "Health block) and the root cause.\n"
    "  --json FILE            write the report as JSON (- = stdout, instead of the table)\n"
    "  --html FILE            write a self-contained HTML page with the time-series charts (- = stdout)\n"
    "  --monitor-config FILE  the diagnosis thresholds ([monitor] section, conf/monitor.ini; default: built in,\n"
    "                         or PLAUNCH_MONITOR_CONFIG)\n"
    "Exit status: 0 read and judged; 1 a file or line was refused (the report is made from the rest);\n"
    "2 bad usage, thresholds or output path, or no monitor file in LOGDIR.\n";

static int s_usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "plaunch report: %s%s%s\n%.*s(plaunch report --help)\n", msg, arg ? " " : "", arg ? arg : "",
            (int)(strchr(S_USAGE, '\n') - S_USAGE + 1), S_USAGE);
    return 2;
}

/* A stream for path: stdout for "-", else a new file (common/ownfile.h: never a planted link), renamed over path
 * by s_commit once complete. */
static FILE *s_open(const char *path, struct ownfile_new *n)
{
    char err[4200];
    if (strcmp(path, "-") == 0)
        return stdout;
    FILE *f = ownfile_new_open(n, path, 0644, 0, err, sizeof err) < 0 ? NULL : ownfile_new_stream(n);
    if (!f && n->fd >= 0) {
        snprintf(err, sizeof err, "%s: cannot write: %s", path, strerror(errno));
        ownfile_new_abort(n);
    }
    if (!f)
        fprintf(stderr, "plaunch report: %s\n", err);
    return f;
}

static int s_commit(FILE *f, struct ownfile_new *n, int ok)
{
    char err[4200];
    if (f == stdout)
        return fflush(stdout) == 0 && ok ? 0 : -1;
    if (ownfile_new_commit(n, ok, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "plaunch report: %s\n", ok ? err : "out of memory while writing the report");
    return -1;
}

static int s_write_json(const char *path, const struct mon_report *r)
{
    struct ownfile_new n;
    char *text = mon_report_out_json(r);
    FILE *f = s_open(path, &n);
    if (f && text)
        fprintf(f, "%s\n", text);
    free(text);
    return f ? s_commit(f, &n, text != NULL) : -1;
}

static int s_write_html(const char *path, const struct mon_report *r)
{
    struct ownfile_new n;
    FILE *f = s_open(path, &n);
    return f ? s_commit(f, &n, mon_html_page(f, r) == 0) : -1;
}

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "json", required_argument, NULL, 'j' },
        { "html", required_argument, NULL, 'H' },
        { "monitor-config", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *json = NULL, *html = NULL, *config = getenv("PLAUNCH_MONITOR_CONFIG");
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = optarg; break;
        case 'H': html = optarg; break;
        case 'c': config = optarg; break;
        case 'h': fputs(S_USAGE, stdout); return 0;
        case ':': return s_usage_error("missing value for", argv[optind - 1]);
        default: return s_usage_error("unknown option", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return s_usage_error(optind == argc ? "which log directory?" : "one log directory only; extra:",
                             optind == argc ? NULL : argv[optind + 1]);
    struct mon_thresh th;
    char err[PATH_MAX + 512];
    mon_thresh_default(&th);
    if (config && config[0] && mon_thresh_read(config, &th, err, sizeof err) < 0) {
        fprintf(stderr, "plaunch report: %s\n", err);
        return 2;
    }
    static struct mon_report r;
    int rc = mon_report_read(argv[optind], &th, &r, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "plaunch report: %s\n", err);
        mon_report_free(&r);
        return rc == -2 ? 2 : 1;
    }
    if (mon_report_judge(&r, &th) < 0) {
        fprintf(stderr, "plaunch report: out of memory judging %d ranks\n", r.nranks);
        mon_report_free(&r);
        return 1;
    }
    for (int i = 0; i < r.nnotes; i++)
        fprintf(stderr, "plaunch report: warning: %s\n", r.notes[i]);
    if (r.notes_dropped)
        fprintf(stderr, "plaunch report: warning: and %d more refused lines or files\n", r.notes_dropped);
    int to_stdout = (json && strcmp(json, "-") == 0) || (html && strcmp(html, "-") == 0);
    if (!to_stdout)
        mon_report_out_text(stdout, &r);
    int bad_out = (json && s_write_json(json, &r) < 0) | (html && s_write_html(html, &r) < 0);
    if (!to_stdout && fflush(stdout) != 0)
        bad_out = 1;
    int code = bad_out ? 2 : r.errors ? 1 : 0;
    mon_report_free(&r);
    return code;
}
