/* probe_json: typed reads of JSON fields whose failures name the file, the field's path and what was expected. */
#ifndef PLAUNCH_PROBE_JSON_H
#define PLAUNCH_PROBE_JSON_H

#include "launcher/probe/measure/probe_err.h"

#include <jansson.h>

/* origin names the document (a path) in messages; failures are written to err. */
struct probe_jctx {
    const char *origin;
    struct probe_err *err;
};

/* Sets err to "ORIGIN: field PATH.KEY: expected WANT, found ..." and returns -1. */
int probe_json_bad(struct probe_jctx *ld, const char *path, const char *key, const char *want, const json_t *got);
/* Field readers: 1 = read, 0 = absent (or null) and optional, -1 = error (err set). */
int probe_json_num(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   double min, double *out);
int probe_json_int(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   long long min, long long max, long long *out);
int probe_json_str(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   char *buf, size_t len);
/* An array of at most max entries; *out is NULL when absent. */
int probe_json_arr(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   size_t max, json_t **out);
/* arr[i] as an object: 0, or -1 naming PATH[i]. */
int probe_json_obj_at(struct probe_jctx *ld, json_t *arr, size_t i, const char *path, json_t **out);

#endif
