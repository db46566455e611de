/* opts_prog: the program the workers run, as torchrun builds it: a .py script (or --run-path) with the
 * interpreter (--python, else PYTHON_EXEC, else python3 on PATH), -m/--module MODULE, --no-python as given. */
#include "launcher/opts/opts_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int opts_prog_set_python(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (!*val || strlen(val) >= sizeof o->python) {
        snprintf(err, errlen, "%s: expected the Python interpreter to run scripts with, e.g. python3 or "
                 "/opt/venv/bin/python (at most %zu characters)", origin, sizeof o->python - 1);
        return -1;
    }
    memcpy(o->python, val, strlen(val) + 1);
    return 0;
}

int opts_prog_set_module(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->module, origin, err, errlen);
}

int opts_prog_set_no_python(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->no_python, origin, err, errlen);
}

int opts_prog_set_run_path(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->run_path, origin, err, errlen);
}

static int s_ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n > k && strcmp(s + n - k, tail) == 0;
}

int opts_prog_resolve(struct opts *o, char **envp, char *err, size_t errlen)
{
    static char **argv_buf;
    if (o->prog_argc < 1)
        return 0;
    if (o->no_python && (o->module || o->run_path)) {
        snprintf(err, errlen, "--no-python runs '%s' as it is; %s asks for Python: drop one of them",
                 o->prog_argv[0], o->module ? "-m/--module" : "--run-path");
        return -1;
    }
    if (o->module && o->run_path) {
        snprintf(err, errlen, "-m/--module and --run-path both say how to run '%s': drop one of them",
                 o->prog_argv[0]);
        return -1;
    }
    /* torchrun runs every program with its interpreter; plaunch only a script (.py) or what -m or --run-path
     * name, so 'plaunch python3 train.py' and 'plaunch ./train' keep working (docs/environment.md). */
    int add = !o->no_python && (o->module || o->run_path || s_ends_with(o->prog_argv[0], ".py"));
    if (!add)
        return 0;
    const char *py = o->python[0] ? o->python : util_env_get(envp, "PYTHON_EXEC");
    py = py && *py ? py : "python3";
    snprintf(o->python_used, sizeof o->python_used, "%s", py);
    free(argv_buf);
    argv_buf = calloc((size_t)o->prog_argc + 3, sizeof *argv_buf);
    if (!argv_buf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int n = 0;
    argv_buf[n++] = o->python_used;
    if (o->module)
        argv_buf[n++] = "-m";
    for (int i = 0; i < o->prog_argc; i++)
        argv_buf[n++] = o->prog_argv[i];
    argv_buf[n] = NULL;
    o->prog_argv = argv_buf;
    o->prog_argc = n;
    return 0;
}
