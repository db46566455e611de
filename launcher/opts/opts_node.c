/* opts_node: the options of the node's set-up around the workers: --preflight (warn, also spelled on; strict; off),
 * --preflight-shm, --gpu-release-wait, and where the workers run: --cpu-bind and torchrun's --numa-binding (one
 * mode, two spellings), --print-binding. */
#include "launcher/opts/opts_priv.h"

#include <stdio.h>
#include <string.h>

#include "launcher/preflight/preflight.h"
#include "launcher/topo/topo.h"

#define s_copy opts_copy

int opts_node_set_preflight(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strcmp(val, "warn") && strcmp(val, "on") && strcmp(val, "strict") && strcmp(val, "off")) {
        snprintf(err, errlen, "%s '%s': expected warn (report findings; also spelled on), strict (refuse to start on "
                 "any) or off", origin, val);
        return -1;
    }
    return s_copy(o->preflight, sizeof o->preflight, strcmp(val, "on") == 0 ? "warn" : val, origin, err, errlen);
}

/* --cpu-bind (plaunch's words) and --numa-binding (torchrun's) set one mode: the last one given wins. */
static int s_set_bind(struct opts *o, const char *val, int torch, const char *origin, char *err, size_t errlen)
{
    char why[300];
    if (topo_mode_parse(val, torch, &o->cpu_bind, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s '%.200s': %s", origin, val, why);
        return -1;
    }
    return s_copy(o->cpu_bind_list, sizeof o->cpu_bind_list, o->cpu_bind == TOPO_LIST ? val + 5 : "", origin, err,
                  errlen);
}

int opts_node_set_cpu_bind(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_set_bind(o, val, 0, origin, err, errlen);
}

int opts_node_set_numa_binding(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_set_bind(o, val, 1, origin, err, errlen);
}

int opts_node_set_print_binding(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->print_binding, origin, err, errlen);
}

int opts_node_set_preflight_shm(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    char gpu[64];
    const char *comma = strchr(val, ',');
    snprintf(gpu, sizeof gpu, "%.*s", comma ? (int)(comma - val) : (int)strlen(val), val);
    if (preflight_parse_size(gpu, &o->shm_gpu) < 0 || preflight_parse_size(comma ? comma + 1 : gpu, &o->shm_cpu) < 0) {
        snprintf(err, errlen, "%s '%.100s': expected the /dev/shm a GPU worker and a CPU worker need, as SIZE[,SIZE] "
                 "such as 1G,256M (K, M, G suffixes)", origin, val);
        return -1;
    }
    return 0;
}

int opts_node_set_gpu_release_wait(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_seconds(val, 0, 0, OPTS_MAX_WAIT_S, &o->gpu_release_wait, origin, err, errlen);
}
