/* metrics_text: the Prometheus text exposition format (version 0.0.4) written into one bounded buffer: metric
 * families (# HELP, # TYPE, samples), label values and help text escaped as the format says, every sample
 * carrying the exposition's base labels (job, node). */
#ifndef PLAUNCH_METRICS_TEXT_H
#define PLAUNCH_METRICS_TEXT_H

#include <stddef.h>

/* The largest exposition: past it samples are left out (mtext_truncated says so) rather than memory grown. */
#define MTEXT_MAX (4u << 20)
#define MTEXT_LABELS_MAX 8   /* labels of one sample, the base ones included */

struct mtext {
    char *buf;
    size_t len, cap;
    int truncated;           /* something did not fit in MTEXT_MAX (or memory) */
    int nbase;
    const char *base[4];     /* the base labels: name, value, name, value (borrowed) */
};

/* An empty exposition whose samples all carry these base labels (name/value pairs, at most two; values borrowed). */
void mtext_init(struct mtext *t, const char *const *base, int nbase);
/* One family's header: "# HELP name help" (help escaped) and "# TYPE name type" (counter, gauge). */
void mtext_family(struct mtext *t, const char *name, const char *type, const char *help);
/* One sample of the family just opened: name{base labels, kv pairs (nkv names and values)} value. A value
 * that is not finite is written NaN, +Inf or -Inf. */
void mtext_sample(struct mtext *t, const char *name, const char *const *kv, int nkv, double value);
/* Appends the escaped label value (backslash, double quote and line feed as \\, \" and \n). */
void mtext_escape_label(struct mtext *t, const char *v);
/* The text (NUL-terminated; "" when empty) and its length; the buffer is the caller's to free with mtext_free. */
const char *mtext_str(const struct mtext *t);
void mtext_free(struct mtext *t);

#endif
