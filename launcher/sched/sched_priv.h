/* sched_priv: what sched.c and the scheduler readers below it (sched_slurm.c, sched_k8s.c) share; not for other
 * modules. The readers never call sched.c. */
#ifndef PLAUNCH_SCHED_PRIV_H
#define PLAUNCH_SCHED_PRIV_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "launcher/sched/sched_detect.h"
#include "common/util.h"

/* Adds a setting: option name, value and origin (printf format). 0, or -1 when the table is full (a bug). */
static inline int sched_put(struct sched *s, const char *name, const char *value, const char *origin_fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int sched_put(struct sched *s, const char *name, const char *value, const char *origin_fmt, ...)
{
    if (s->nsettings == SCHED_MAX_SETTINGS)
        return -1;
    struct sched_setting *st = &s->settings[s->nsettings++];
    va_list ap;
    st->name = name;
    snprintf(st->value, sizeof st->value, "%s", value);
    va_start(ap, origin_fmt);
    vsnprintf(st->origin, sizeof st->origin, origin_fmt, ap);
    va_end(ap);
    return 0;
}

/* A variable's value when set and not empty, else NULL. */
static inline const char *sched_env(char **envp, const char *name)
{
    const char *v = util_env_get(envp, name);
    return v && *v ? v : NULL;
}

/* A whole non-negative decimal number, or -1. */
static inline long sched_num(const char *v)
{
    char *end = NULL;
    if (!v || !*v)
        return -1;
    errno = 0;
    long n = strtol(v, &end, 10);
    return errno || *end || n < 0 ? -1 : n;
}

/* The first of the NULL-terminated variable names that is set (not empty), its name in *which; or NULL. */
static inline const char *sched_first_of(char **envp, const char *const *names, const char **which)
{
    for (; *names; names++) {
        const char *v = sched_env(envp, *names);
        if (v) {
            *which = *names;
            return v;
        }
    }
    return NULL;
}

/* sched_slurm.c: a Slurm step (or, forced, a batch script: srun mode). 1 when Slurm applies, 0 when not, -1 with
 * a message. */
int sched_slurm_read(char **envp, int forced, struct sched *s, char *err, size_t errlen);
/* sched_k8s.c: a Kubernetes pod of an Indexed Job, a JobSet or a PyTorchJob. 1, 0 or -1 as above. */
int sched_k8s_read(char **envp, int forced, struct sched *s, char *err, size_t errlen);

#endif
