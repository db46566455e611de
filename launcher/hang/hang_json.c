/* hang_json: traces to JSON within a bound (levels of what to drop), and back with every key checked. */
#include "launcher/hang/hang_json.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire/wire.h"

#define S_PID_MAX 4194304 /* PID_MAX_LIMIT */

/* What one encoding keeps: the main threads' frames; other threads of the main process and their frames; threads
 * (the first ones) of the other processes (-1: those processes dropped) and their frames; string bytes. */
struct s_lim {
    int main_frames, other_threads, other_frames, np_threads, np_frames, str;
    const char *why;
};

static const struct s_lim s_lims[] = {
    { HANG_FRAMES_MAX, HANG_THREADS_MAX, HANG_FRAMES_MAX, HANG_THREADS_MAX, HANG_FRAMES_MAX, HANG_STR_MAX, "" },
    { HANG_FRAMES_MAX, HANG_THREADS_MAX, 12, HANG_THREADS_MAX, 12, HANG_STR_MAX,
      "frames of threads other than the main ones beyond 12" },
    { HANG_FRAMES_MAX, 16, 6, 4, 6, HANG_STR_MAX,
      "threads beyond 16 (beyond 4 in the other processes), frames of threads other than the main ones beyond 6" },
    { HANG_FRAMES_MAX, 4, 4, 1, 4, 160, "threads beyond 4 (1 in the other processes), frames of threads other than "
      "the main ones beyond 4, strings beyond 160 bytes" },
    { 32, 0, 0, 0, 0, 128, "every thread but the main ones, the other processes' threads, frames beyond 32, strings "
      "beyond 128 bytes" },
    { 16, 0, 0, -1, 0, 96, "every thread but the main ones, the other processes, frames beyond 16, strings beyond 96 "
      "bytes" },
    { 6, 0, 0, -1, 0, 64, "every thread but the main ones, the other processes, frames beyond 6, strings beyond 64 "
      "bytes" },
    { 0, 0, 0, -1, 0, 64, "every frame, the other processes" },
};

#define S_NLIMS (sizeof s_lims / sizeof s_lims[0])

/* A string cut to max - 1 bytes ("..." marks it; paths keep their tail), on a UTF-8 character boundary. */
static json_t *s_jstr(const char *s, int max, int tail)
{
    size_t len = strlen(s);
    if (len < (size_t)max)
        return json_string(s);
    char buf[HANG_STR_MAX + 8];
    size_t keep = (size_t)max - 4;
    if (tail) {
        const char *from = s + len - keep;
        while ((*from & 0xc0) == 0x80)
            from++;
        snprintf(buf, sizeof buf, "...%s", from);
    } else {
        while (keep > 0 && (s[keep] & 0xc0) == 0x80)
            keep--;
        snprintf(buf, sizeof buf, "%.*s...", (int)keep, s);
    }
    return json_string(buf);
}

/* Sets key to s unless s is empty; 0, or -1. */
static int s_put_str(json_t *o, const char *key, const char *s, int max, int tail)
{
    return s[0] ? json_object_set_new(o, key, s_jstr(s, max, tail)) : 0;
}

static int s_put_int(json_t *o, const char *key, long long v, int always)
{
    return v || always ? json_object_set_new(o, key, json_integer(v)) : 0;
}

static json_t *s_thread(const struct hang_thread *th, int py, int frames, int str)
{
    json_t *o = json_object(), *fa = json_array();
    int rc = !o || !fa || s_put_int(o, "tid", th->tid, 1) < 0 || s_put_str(o, "id", th->id, str, 0) < 0 ||
             s_put_str(o, "name", th->name, str, 0) < 0 || s_put_str(o, "state", th->state, str, 0) < 0 ||
             s_put_str(o, "wchan", th->wchan, str, 0) < 0 || s_put_str(o, "error", th->error, HANG_ERR_MAX, 0) < 0 ||
             (th->current && json_object_set_new(o, "current", json_true()) < 0) ||
             ((th->cut || th->nframes > frames) && json_object_set_new(o, "cut", json_true()) < 0);
    for (int i = 0; !rc && i < th->nframes && i < frames; i++) {
        const struct hang_frame *f = &th->frames[i];
        json_t *fo = json_object();
        rc = !fo || json_array_append_new(fa, fo) < 0 || s_put_str(fo, "fn", f->fn, str, 0) < 0 ||
             s_put_str(fo, "file", f->file, str, 1) < 0 || s_put_int(fo, "line", f->line, 0) < 0 ||
             (!py && s_put_str(fo, "module", f->module, str, 0) < 0) ||
             (!py && s_put_int(fo, "offset", (long long)(f->offset & 0x7fffffffffffffffULL), 0) < 0);
    }
    if (!rc && json_object_set(o, "frames", fa) < 0)
        rc = 1;
    json_decref(fa);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The threads of one kind kept by l: the main one (main_frames) and up to `others` more (other_frames). */
static int s_threads(json_t *po, const char *key, const struct hang_thread *ths, int n, int main, int py, int others,
                     int main_frames, int other_frames, int str)
{
    if (n == 0)
        return 0;
    json_t *a = json_array();
    int rc = !a;
    for (int i = 0, kept = 0; !rc && i < n; i++) {
        if (i != main && kept++ >= others)
            continue;
        json_t *to = s_thread(&ths[i], py, i == main ? main_frames : other_frames, str);
        rc = !to || json_array_append_new(a, to) < 0;
    }
    rc = rc || json_object_set(po, key, a) < 0;
    json_decref(a);
    return rc ? -1 : 0;
}

static json_t *s_proc(const struct hang_proc *p, int primary, const struct s_lim *l)
{
    json_t *o = json_object();
    int nt = primary ? l->other_threads : l->np_threads - 1, nf = primary ? l->other_frames : l->np_frames;
    int mn = primary ? hang_trace_main_native(p) : l->np_threads > 0 ? 0 : -2;
    int mp = primary ? hang_trace_main_python(p) : l->np_threads > 0 ? 0 : -2;
    int mf = primary ? l->main_frames : l->np_frames;
    if (!o || s_put_int(o, "pid", p->pid, 1) < 0 || s_put_int(o, "ppid", p->ppid, 0) < 0 ||
        s_put_int(o, "root", p->root, 0) < 0 || s_put_str(o, "comm", p->comm, l->str, 0) < 0 ||
        s_put_str(o, "exe", p->exe, l->str, 1) < 0 || s_put_str(o, "state", p->state, l->str, 0) < 0 ||
        (p->python && json_object_set_new(o, "python", json_true()) < 0) ||
        s_put_int(o, "threads_total", p->threads_total, 0) < 0 ||
        s_put_str(o, "error", p->error, HANG_ERR_MAX, 0) < 0 ||
        (mn != -2 && s_threads(o, "threads", p->threads, p->nthreads, mn, 0, nt, mf, nf, l->str) < 0) ||
        s_put_str(o, "py_source", p->py_source, l->str, 0) < 0 ||
        s_put_str(o, "py_error", p->py_error, HANG_ERR_MAX, 0) < 0 ||
        (mp != -2 && s_threads(o, "py_threads", p->py, p->npy, mp, 1, nt, mf, nf, l->str) < 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static char *s_encode(const struct hang_trace *t, const struct hang_json_rank *who, const struct s_lim *l)
{
    json_t *root = json_object(), *procs = json_array();
    char *text = NULL, cut[HANG_ERR_MAX * 2];
    int primary = hang_trace_primary(t);
    snprintf(cut, sizeof cut, "%s%s%s", t->cut, t->cut[0] && l->why[0] ? "; " : "", l->why);
    if (!root || !procs || json_object_set_new(root, "v", json_integer(1)) < 0)
        goto out;
    if (who && (s_put_int(root, "rank", who->rank, 1) < 0 ||
                s_put_str(root, "node", who->node, HANG_SHORT_MAX, 0) < 0 ||
                s_put_str(root, "gpu", who->gpu, HANG_SHORT_MAX, 0) < 0 || s_put_int(root, "pid", who->pid, 1) < 0 ||
                s_put_str(root, "error", who->error, HANG_ERR_MAX, 0) < 0))
        goto out;
    if (s_put_str(root, "cut", cut, HANG_ERR_MAX, 0) < 0 || json_object_set(root, "procs", procs) < 0)
        goto out;
    for (int i = 0; i < t->nprocs; i++) {
        if (i != primary && l->np_threads < 0)
            continue;
        json_t *po = s_proc(&t->procs[i], i == primary, l);
        if (!po || json_array_append_new(procs, po) < 0)
            goto out;
    }
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
out:
    json_decref(procs);
    json_decref(root);
    return text;
}

static size_t s_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* A lower bound of the frames' share of l's encoding (their strings alone): a level whose bound is past max is
 * not encoded at all, so a big trace costs one or two encodings, not eight. */
static size_t s_floor(const struct hang_trace *t, const struct s_lim *l)
{
    size_t sum = 0, str = (size_t)l->str - 1;
    int primary = hang_trace_primary(t);
    for (int i = 0; i < t->nprocs; i++) {
        const struct hang_proc *p = &t->procs[i];
        int prim = i == primary;
        if (!prim && l->np_threads <= 0)
            continue; /* dropped, or its header alone */
        for (int py = 0; py < 2; py++) {
            const struct hang_thread *ths = py ? p->py : p->threads;
            int n = py ? p->npy : p->nthreads, kept = 0;
            int main = prim ? (py ? hang_trace_main_python(p) : hang_trace_main_native(p)) : 0;
            for (int k = 0; k < n; k++) {
                int is_main = k == main, frames;
                if (!is_main && kept >= (prim ? l->other_threads : l->np_threads - 1))
                    continue;
                kept += !is_main;
                frames = prim ? (is_main ? l->main_frames : l->other_frames) : l->np_frames;
                for (int f = 0; f < ths[k].nframes && f < frames; f++)
                    sum += s_min(strlen(ths[k].frames[f].fn), str) + s_min(strlen(ths[k].frames[f].file), str) +
                           s_min(strlen(ths[k].frames[f].module), str);
            }
        }
    }
    return sum;
}

char *hang_json_encode(const struct hang_trace *t, const struct hang_json_rank *who, size_t max)
{
    if (max && max < HANG_JSON_MIN)
        return NULL;
    for (size_t k = 0; k < S_NLIMS; k++) {
        if (max && k + 1 < S_NLIMS && s_floor(t, &s_lims[k]) > max)
            continue;
        char *text = s_encode(t, who, &s_lims[k]);
        if (!text || !max || strlen(text) <= max)
            return text;
        free(text);
    }
    /* Not even the headers fit: the rank alone, and why. */
    struct hang_trace *empty = hang_trace_new();
    char *text = NULL;
    if (empty && hang_trace_set(empty, &empty->cut, "every process (their headers alone were past the bound)",
                                HANG_ERR_MAX) == 0)
        text = s_encode(empty, who, &s_lims[S_NLIMS - 1]);
    hang_trace_destroy(&empty);
    return text;
}

/* ---- decoding ---------------------------------------------------------------------------------------------- */

static const char *s_type(const json_t *v)
{
    static const char *const names[] = { "an object", "an array", "a string", "an integer",
                                         "a real",    "true",     "false",    "null" };
    return v ? names[json_typeof(v)] : "nothing";
}

/* o is an object and every key of it is one of allowed (NULL-terminated). */
static int s_keys(const json_t *o, const char *const *allowed, const char *where, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    if (!json_is_object(o)) {
        snprintf(err, errlen, "stacks: %s: expected an object, found %s", where, s_type(o));
        return -1;
    }
    json_object_foreach((json_t *)o, key, v) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(key, *a) == 0;
        if (!known) {
            snprintf(err, errlen, "stacks: %s: unknown key '%.64s'", where, key);
            return -1;
        }
    }
    return 0;
}

static int s_int(const json_t *o, const char *key, long long lo, long long hi, int required, long long *out,
                 const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v && !required)
        return 0;
    if (!json_is_integer(v)) {
        snprintf(err, errlen, "stacks: %s.%s: expected an integer, found %s", where, key, s_type(v));
        return -1;
    }
    long long x = json_integer_value(v);
    if (x < lo || x > hi) {
        snprintf(err, errlen, "stacks: %s.%s: %lld is out of range [%lld, %lld]", where, key, x, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int s_bool(const json_t *o, const char *key, int *out, const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_boolean(v)) {
        snprintf(err, errlen, "stacks: %s.%s: expected true or false, found %s", where, key, s_type(v));
        return -1;
    }
    if (v)
        *out = json_is_true(v);
    return 0;
}

/* A string of fewer than cap bytes without control characters, copied into *slot (or buf when slot is NULL). */
static int s_str(struct hang_trace *t, const json_t *o, const char *key, size_t cap, char **slot, char *buf,
                 const char *where, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_string(v)) {
        snprintf(err, errlen, "stacks: %s.%s: expected a string, found %s", where, key, s_type(v));
        return -1;
    }
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    int clean = strlen(s) == len;
    for (size_t k = 0; clean && k < len; k++)
        clean = (unsigned char)s[k] >= 0x20 && s[k] != 0x7f;
    if (len >= cap || !clean) {
        snprintf(err, errlen, "stacks: %s.%s: a string of %zu bytes; at most %zu without control characters", where,
                 key, len, cap - 1);
        return -1;
    }
    if (!slot) {
        memcpy(buf, s, len + 1);
        return 0;
    }
    if (hang_trace_set(t, slot, s, cap) < 0) {
        snprintf(err, errlen, "stacks: %s.%s: out of memory", where, key);
        return -1;
    }
    return 0;
}

/* The array at key (absent: 0 items) of at most max items; its size, or -1. */
static int s_array(const json_t *o, const char *key, size_t max, json_t **out, const char *where, char *err,
                   size_t errlen)
{
    json_t *v = *out = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_array(v) || json_array_size(v) > max) {
        snprintf(err, errlen, "stacks: %s.%s: expected an array of at most %zu, found %s%s", where, key, max,
                 s_type(v), json_is_array(v) ? " too long" : "");
        return -1;
    }
    return (int)json_array_size(v);
}

static int s_frame(struct hang_trace *t, struct hang_thread *th, const json_t *o, int py, const char *where, char *err,
                   size_t errlen)
{
    static const char *const keys[] = { "fn", "file", "line", "module", "offset", NULL };
    static const char *const py_keys[] = { "fn", "file", "line", NULL };
    char fn[HANG_STR_MAX], file[HANG_STR_MAX], module[HANG_SHORT_MAX];
    long long line = 0, offset = 0;
    fn[0] = file[0] = module[0] = '\0';
    if (s_keys(o, py ? py_keys : keys, where, err, errlen) < 0 ||
        s_str(t, o, "fn", HANG_STR_MAX, NULL, fn, where, err, errlen) < 0 ||
        s_str(t, o, "file", HANG_STR_MAX, NULL, file, where, err, errlen) < 0 ||
        s_int(o, "line", 0, 1000000000, 0, &line, where, err, errlen) < 0 ||
        s_str(t, o, "module", HANG_SHORT_MAX, NULL, module, where, err, errlen) < 0 ||
        s_int(o, "offset", 0, 0x7fffffffffffffffLL, 0, &offset, where, err, errlen) < 0)
        return -1;
    if (hang_trace_add_frame(t, th, fn, file, (int)line, module, (uint64_t)offset) < 0) {
        snprintf(err, errlen, "stacks: %s: past the trace's bound of %u string bytes", where, HANG_TRACE_BYTES_MAX);
        return -1;
    }
    return 0;
}

static int s_dthread(struct hang_trace *t, struct hang_proc *p, const json_t *o, int py, const char *where, char *err,
                     size_t errlen)
{
    static const char *const keys[] = { "tid", "id", "name", "state", "wchan", "error", "current", "cut", "frames",
                                        NULL };
    char at[192];
    long long tid = 0;
    json_t *fa;
    if (s_keys(o, keys, where, err, errlen) < 0 ||
        s_int(o, "tid", 0, S_PID_MAX, 1, &tid, where, err, errlen) < 0)
        return -1;
    struct hang_thread *th = hang_trace_add_thread(t, p, py, (int)tid);
    int nf = s_array(o, "frames", HANG_FRAMES_MAX, &fa, where, err, errlen);
    if (!th || nf < 0 || s_str(t, o, "id", HANG_SHORT_MAX, &th->id, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "name", HANG_SHORT_MAX, &th->name, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "state", HANG_SHORT_MAX, &th->state, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "wchan", HANG_SHORT_MAX, &th->wchan, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "error", HANG_ERR_MAX, &th->error, NULL, where, err, errlen) < 0 ||
        s_bool(o, "current", &th->current, where, err, errlen) < 0 ||
        s_bool(o, "cut", &th->cut, where, err, errlen) < 0) {
        if (!th)
            snprintf(err, errlen, "stacks: %s: out of memory", where);
        return -1;
    }
    for (int i = 0; i < nf; i++) {
        snprintf(at, sizeof at, "%s.frames[%d]", where, i);
        if (s_frame(t, th, json_array_get(fa, (size_t)i), py, at, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int s_dproc(struct hang_trace *t, const json_t *o, const char *where, char *err, size_t errlen)
{
    static const char *const keys[] = { "pid", "ppid", "root", "comm", "exe", "state", "python", "threads_total",
                                        "error", "threads", "py_source", "py_error", "py_threads", NULL };
    char at[192];
    long long pid = 0, ppid = 0, root = 0, total = 0;
    json_t *ta = NULL, *pa = NULL;
    if (s_keys(o, keys, where, err, errlen) < 0 ||
        s_int(o, "pid", 1, S_PID_MAX, 1, &pid, where, err, errlen) < 0 ||
        s_int(o, "ppid", 0, S_PID_MAX, 0, &ppid, where, err, errlen) < 0 ||
        s_int(o, "root", 0, S_PID_MAX, 0, &root, where, err, errlen) < 0 ||
        s_int(o, "threads_total", 0, 1 << 24, 0, &total, where, err, errlen) < 0)
        return -1;
    if (hang_trace_find(t, (int)pid)) {
        snprintf(err, errlen, "stacks: %s.pid: process %lld appears twice", where, pid);
        return -1;
    }
    struct hang_proc *p = hang_trace_add_proc(t, (int)pid, (int)ppid, (int)root);
    int nt = s_array(o, "threads", HANG_THREADS_MAX, &ta, where, err, errlen);
    int np = nt < 0 ? -1 : s_array(o, "py_threads", HANG_PY_THREADS_MAX, &pa, where, err, errlen);
    if (!p || np < 0 || s_str(t, o, "comm", HANG_SHORT_MAX, &p->comm, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "exe", HANG_STR_MAX, &p->exe, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "state", HANG_SHORT_MAX, &p->state, NULL, where, err, errlen) < 0 ||
        s_bool(o, "python", &p->python, where, err, errlen) < 0 ||
        s_str(t, o, "error", HANG_ERR_MAX, &p->error, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "py_source", HANG_SHORT_MAX, &p->py_source, NULL, where, err, errlen) < 0 ||
        s_str(t, o, "py_error", HANG_ERR_MAX, &p->py_error, NULL, where, err, errlen) < 0) {
        if (!p)
            snprintf(err, errlen, "stacks: %s: more than %d processes", where, HANG_PROCS_MAX);
        return -1;
    }
    p->threads_total = (int)total;
    for (int i = 0; i < nt; i++) {
        snprintf(at, sizeof at, "%s.threads[%d]", where, i);
        if (s_dthread(t, p, json_array_get(ta, (size_t)i), 0, at, err, errlen) < 0)
            return -1;
    }
    for (int i = 0; i < np; i++) {
        snprintf(at, sizeof at, "%s.py_threads[%d]", where, i);
        if (s_dthread(t, p, json_array_get(pa, (size_t)i), 1, at, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int s_dwho(struct hang_trace *t, const json_t *root, struct hang_json_rank *who, int *has_who, char *err,
                  size_t errlen)
{
    struct hang_json_rank w;
    long long rank = 0, pid = 0;
    memset(&w, 0, sizeof w);
    *has_who = json_object_get(root, "rank") != NULL;
    if (!*has_who)
        return json_object_get(root, "node") || json_object_get(root, "pid") || json_object_get(root, "gpu") ||
               json_object_get(root, "error")
               ? (snprintf(err, errlen, "stacks: node, gpu, pid and error come only with rank"), -1) : 0;
    if (s_int(root, "rank", 0, WIRE_MAX_WORLD - 1, 1, &rank, "document", err, errlen) < 0 ||
        s_int(root, "pid", 1, S_PID_MAX, 1, &pid, "document", err, errlen) < 0 ||
        s_str(t, root, "node", sizeof w.node, NULL, w.node, "document", err, errlen) < 0 ||
        s_str(t, root, "gpu", sizeof w.gpu, NULL, w.gpu, "document", err, errlen) < 0 ||
        s_str(t, root, "error", sizeof w.error, NULL, w.error, "document", err, errlen) < 0)
        return -1;
    if (!w.node[0]) {
        snprintf(err, errlen, "stacks: document.node: missing or empty with rank");
        return -1;
    }
    w.rank = (int)rank, w.pid = (int)pid;
    if (who)
        *who = w;
    return 0;
}

struct hang_trace *hang_json_decode(const char *text, size_t len, struct hang_json_rank *who, int *has_who,
                                    char *err, size_t errlen)
{
    static const char *const keys[] = { "v", "rank", "node", "gpu", "pid", "error", "cut", "procs", NULL };
    json_error_t je;
    json_t *root = NULL, *pa = NULL;
    long long v = 0;
    int have = 0;
    char at[64];
    struct hang_trace *t = NULL;
    if (len > HANG_JSON_MAX) {
        snprintf(err, errlen, "stacks: a document of %zu bytes; at most %u", len, HANG_JSON_MAX);
        return NULL;
    }
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "stacks: not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        return NULL;
    }
    t = hang_trace_new();
    if (!t || s_keys(root, keys, "document", err, errlen) < 0 ||
        s_int(root, "v", 1, 1, 1, &v, "document", err, errlen) < 0 ||
        s_dwho(t, root, who, has_who ? has_who : &have, err, errlen) < 0 ||
        s_str(t, root, "cut", HANG_ERR_MAX * 2, &t->cut, NULL, "document", err, errlen) < 0)
        goto fail;
    int n = s_array(root, "procs", HANG_PROCS_MAX, &pa, "document", err, errlen);
    if (n < 0)
        goto fail;
    for (int i = 0; i < n; i++) {
        snprintf(at, sizeof at, "procs[%d]", i);
        if (s_dproc(t, json_array_get(pa, (size_t)i), at, err, errlen) < 0)
            goto fail;
    }
    json_decref(root);
    return t;
fail:
    if (!t)
        snprintf(err, errlen, "stacks: out of memory");
    json_decref(root);
    hang_trace_destroy(&t);
    return NULL;
}
