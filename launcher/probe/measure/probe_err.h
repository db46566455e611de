/* probe_err: the error record every probe function that can fail fills. */
#ifndef PLAUNCH_PROBE_ERR_H
#define PLAUNCH_PROBE_ERR_H

/* A complete sentence naming the thing and the fix. */
struct probe_err {
    char msg[1024];
};
/* Formats into err->msg; does nothing when err is NULL. */
void probe_err_set(struct probe_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
