/* probe_table: one sweep as nccl-tests prints it (*_perf's columns, units and number format, Avg bus bandwidth). */
#include "launcher/probe/report/probe_table.h"

#include "launcher/probe/measure/probe_fmt.h"

#include <math.h>

void probe_table_title(const struct probe_sweep *s, char *buf, size_t len)
{
    char ranks[96];
    probe_fmt_ranks(s->ranks, (size_t)s->n, ranks, sizeof ranks);
    snprintf(buf, len, "%s (%s), N=%d, %s, ranks %s, %d node%s", probe_op_title(s->op), probe_op_perf(s->op), s->n,
             s->group == PROBE_GROUP_FIRST_N ? "first-n" : "one GPU per node", ranks, s->nodes,
             s->nodes == 1 ? "" : "s");
}

const char *probe_table_redop(enum probe_op op)
{
    return probe_op_reduces(op) ? "sum" : "none";
}

int probe_table_root(enum probe_op op)
{
    return op == PROBE_OP_BROADCAST ? 0 : -1;
}

uint64_t probe_table_count(const struct probe_meas *m, const struct probe_sweep *s, const struct probe_result *r)
{
    return r->count ? r->count : probe_op_layout(s->op, r->nominal, s->n, m->config.dtype).count;
}

/* "  time  algbw  busbw  #wrong" of one placement, widths 7, 6, 6, 6 as nccl-tests. */
static void s_body(FILE *out, double time_us, double algbw, double busbw, double wrong)
{
    char t[32], a[32], b[32];
    probe_fmt_float(time_us, 7, t, sizeof t);
    probe_fmt_float(algbw, 6, a, sizeof a);
    probe_fmt_float(busbw, 6, b, sizeof b);
    if (isfinite(wrong))
        fprintf(out, "  %7s  %6s  %6s  %6g", t, a, b, wrong);
    else
        fprintf(out, "  %7s  %6s  %6s    N/A", t, a, b);
}

void probe_table_sweep(FILE *out, const struct probe_meas *m, const struct probe_sweep *s)
{
    char title[256];
    probe_table_title(s, title, sizeof title);
    fprintf(out, "# %s\n# %s, redop %s, root %d; -n %d -w %d; timing: %s\n#\n", title,
            probe_dtype_name(m->config.dtype), probe_table_redop(s->op), probe_table_root(s->op), m->config.iters,
            m->config.warmup_iters, probe_timing_label(m->config.timing));
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
            "", "", "", "");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
            "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "",
            "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    for (size_t k = 0; k < s->nresults; k++) {
        const struct probe_result *r = &s->results[k];
        fprintf(out, "%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)r->bytes,
                (unsigned long long)probe_table_count(m, s, r), probe_dtype_name(m->config.dtype),
                probe_table_redop(s->op), probe_table_root(s->op));
        s_body(out, r->time_us, r->algbw, r->busbw, r->wrong);
        if (r->has_ip)
            s_body(out, r->ip.time_us, r->ip.algbw, r->ip.busbw, r->ip.wrong);
        else
            fprintf(out, "  %7s  %6s  %6s  %6s", "-", "-", "-", "-");
        fputc('\n', out);
    }
    fprintf(out, "# %-20s : %g\n#\n", "Avg bus bandwidth", probe_sweep_avg_busbw(s));
}
