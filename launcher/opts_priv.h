/* opts_priv: the option table's shape, shared by opts.c (table, command line, environment) and opts_ini.c
 * (config file). Not for other modules. */
#ifndef PLAUNCH_OPTS_PRIV_H
#define PLAUNCH_OPTS_PRIV_H

#include <stddef.h>

#include "opts.h"

typedef int (*opt_set_fn)(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);

struct optdef {
    const char *name;   /* long option; env PLAUNCH_<NAME>; config key (dashes or underscores) */
    const char *alias1; /* other spellings people bring from torchrun / paddle */
    const char *alias2;
    int has_arg;
    opt_set_fn set;
    const char *metavar;
    const char *help;
};

/* The option called name[0..len) ('-' and '_' alike, aliases included), or NULL. */
const struct optdef *opts_find(const char *name, size_t len);
/* The --config setter: a config file cannot name another config file. */
int opts_set_config(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
/* opts_compat.c: setters of the torchrun/Paddle spellings (--master-addr, --master-port, --ips, --standalone). */
int opts_compat_set_master_addr(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_compat_set_master_port(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_compat_set_ips(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
int opts_compat_set_standalone(struct opts *o, const char *val, const char *origin, char *err, size_t errlen);
/* Folds the torchrun/Paddle spellings (--master-addr/--master-port, --ips, --standalone) into nnodes, master,
 * node_rank and host, refusing contradictions; 0, or -1 with a message. Runs after every source was read. */
int opts_compat_resolve(struct opts *o, char *err, size_t errlen);
/* Reads the INI file at path into o; 0, or -1 with a message naming file:line. */
int opts_load_ini(struct opts *o, const char *path, char *err, size_t errlen);

#endif
