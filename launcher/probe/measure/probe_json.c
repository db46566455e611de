/* probe_json: typed reads of JSON fields whose failures name the file, the field's path and what was expected. */
#include "launcher/probe/measure/probe_json.h"

#include "common/esc/esc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *s_type_name(const json_t *v)
{
    static const char *const names[] = { "an object", "an array", "a string", "an integer",
                                         "a real",    "true",     "false",    "null" };
    return v ? names[json_typeof(v)] : "nothing";
}

int probe_json_bad(struct probe_jctx *ld, const char *path, const char *key, const char *want, const json_t *got)
{
    const char *dot = (*path && key[0] != '[') ? "." : "";
    if (got == NULL)
        probe_err_set(ld->err, "%s: field %s%s%s is missing; expected %s (schema: docs/probe.md)", ld->origin,
                      path, dot, key, want);
    else
        probe_err_set(ld->err, "%s: field %s%s%s: expected %s, found %s (schema: docs/probe.md)", ld->origin,
                      path, dot, key, want, s_type_name(got));
    return -1;
}

int probe_json_num(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   double min, double *out)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || (json_is_null(v) && !required))
        return required ? probe_json_bad(ld, path, key, "a number", NULL) : 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < min) {
        char want[64];
        snprintf(want, sizeof want, "a number >= %g", min);
        return probe_json_bad(ld, path, key, want, v);
    }
    *out = json_number_value(v);
    return 1;
}

int probe_json_int(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   long long min, long long max, long long *out)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || (json_is_null(v) && !required))
        return required ? probe_json_bad(ld, path, key, "an integer", NULL) : 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        char want[96];
        snprintf(want, sizeof want, "an integer from %lld to %lld", min, max);
        return probe_json_bad(ld, path, key, want, v);
    }
    *out = json_integer_value(v);
    return 1;
}

int probe_json_str(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   char *buf, size_t len)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || (json_is_null(v) && !required))
        return required ? probe_json_bad(ld, path, key, "a string", NULL) : 0;
    if (!json_is_string(v))
        return probe_json_bad(ld, path, key, "a string", v);
    const char *str = json_string_value(v); /* from a file: what is printed or put in a page is escaped */
    esc_term(buf, len, str, strlen(str), 0);
    return 1;
}

int probe_json_arr(struct probe_jctx *ld, const json_t *o, const char *path, const char *key, int required,
                   size_t max, json_t **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (v == NULL || (json_is_null(v) && !required))
        return required ? probe_json_bad(ld, path, key, "an array", NULL) : 0;
    if (!json_is_array(v))
        return probe_json_bad(ld, path, key, "an array", v);
    if (json_array_size(v) > max) {
        char want[64];
        snprintf(want, sizeof want, "an array of at most %zu entries", max);
        return probe_json_bad(ld, path, key, want, v);
    }
    *out = v;
    return 1;
}

int probe_json_obj_at(struct probe_jctx *ld, json_t *arr, size_t i, const char *path, json_t **out)
{
    *out = json_array_get(arr, i);
    if (json_is_object(*out))
        return 0;
    char key[32];
    snprintf(key, sizeof key, "[%zu]", i);
    return probe_json_bad(ld, path, key, "an object", *out);
}

