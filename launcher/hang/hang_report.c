/* hang_report: a hung job's stacks, one JSON document per rank as the agents sent them, decoded (every field
 * checked: a peer's bytes) and grouped by launcher/hang/ into the root-cause lines and hang.GENERATION.txt. */
#include "launcher/hang/hang_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/hang/hang_group.h"
#include "launcher/hang/hang_json.h"
#include "common/log.h"

int hang_report_text(const char *job_id, unsigned generation, const char *why, const char *const *stacks, int n,
                    int odd, int dropped, char *summary, size_t scap, char *text, size_t tcap)
{
    struct hang_rank *in = calloc((size_t)(n > 0 ? n : 1), sizeof *in);
    struct hang_json_rank *who = calloc((size_t)(n > 0 ? n : 1), sizeof *who);
    struct hang_trace **t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    char err[256];
    int bad = 0;
    summary[0] = text[0] = '\0';
    for (int i = 0; in && who && t && i < n; i++) {
        int has = 0;
        in[i].rank = i;
        in[i].error = "no answer from its node";
        if (!stacks[i])
            continue;
        t[i] = hang_json_decode(stacks[i], strlen(stacks[i]), &who[i], &has, err, sizeof err);
        if (!t[i] || !has || who[i].rank != i) {
            if (!bad++)
                log_warn("stacks of rank %d dropped: %s", i, t[i] ? "the document names another rank" : err);
            hang_trace_destroy(&t[i]);
            in[i].error = "its stacks could not be read";
            continue;
        }
        in[i] = (struct hang_rank){ .rank = i, .node = who[i].node, .gpu = who[i].gpu, .pid = who[i].pid,
                                    .trace = t[i], .error = who[i].error };
    }
    hang_group_t *g = in && who && t ? hang_group_new(in, n) : NULL;
    char *sum = g ? hang_group_summary(g) : NULL, *full = g ? hang_group_text(g, (int)generation) : NULL;
    int odds[2];
    if (odd < 0 && g && hang_group_odd(g, odds, 2) == 1)
        odd = odds[0];
    /* the summary's sentences, one per line under the root cause's heading */
    size_t o = 0;
    for (const char *p = sum ? sum : "(the stacks could not be grouped: out of memory)"; *p && o + 8 < scap;) {
        const char *e = strstr(p, "; ");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        o += (size_t)snprintf(summary + o, scap - o, "  %.*s\n", (int)len, p);
        p += len + (e ? 2 : 0);
    }
    snprintf(text, tcap, "job %s, generation %u: %s\n%s%s%s", job_id, generation, why,
             dropped ? "(some ranks' stacks were over the coordinator's bound and are not here)\n" : "",
             full ? "\n" : "", full ? full : "");
    free(sum);
    free(full);
    hang_group_destroy(&g);
    for (int i = 0; t && i < n; i++)
        hang_trace_destroy(&t[i]);
    free(t);
    free(who);
    free(in);
    return odd;
}
