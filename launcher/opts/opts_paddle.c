/* opts_paddle: paddle.distributed.launch's options that have no plaunch name of their own (--run_mode,
 * --log_level, --legacy, --log_overwrite, --sort_ip, --enable_gpu_log, --elastic_level, and those of modes plaunch
 * does not run, refused with a sentence), its --master http:// and etcd:// forms, and its PADDLE_* / POD_IP
 * variables, read with Paddle's precedence (over the command line, as context/args_envs.py applies them). */
#include "launcher/opts/opts_priv.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

int opts_paddle_set_run_mode(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strcmp(val, "collective") == 0)
        return 0;
    snprintf(err, errlen, "%s '%.60s': plaunch runs collective jobs only (--run_mode collective, Paddle's default "
             "with GPUs); parameter-server (ps, ps-heter) and rpc modes are not supported", origin, val);
    return -1;
}

int opts_paddle_set_log_level(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    static const char *const levels[] = { "DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL" };
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (strcasecmp(val, levels[i]) == 0) {
            /* plaunch's own lines: ERROR and above keep only errors (--quiet); the others show its notes */
            o->quiet = i >= 4;
            return 0;
        }
    snprintf(err, errlen, "%s '%.60s': expected DEBUG, INFO, WARNING, ERROR or CRITICAL", origin, val);
    return -1;
}

int opts_paddle_set_legacy(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    int on;
    if (opts_parse_bool(val, &on, origin, err, errlen) < 0)
        return -1;
    if (on) {
        snprintf(err, errlen, "%s %s: the legacy launcher (paddle.distributed.fleet.launch) is not what plaunch "
                 "speaks; plaunch takes the current launcher's options: drop --legacy", origin, val);
        return -1;
    }
    return 0;
}

int opts_paddle_set_log_overwrite(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return opts_parse_bool(val, &o->log_overwrite, origin, err, errlen);
}

/* --sort_ip: plaunch ranks the nodes by address always, one of the orders Paddle's false allows too. */
int opts_paddle_set_sort_ip(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    int on;
    return opts_parse_bool(val, &on, origin, err, errlen);
}

/* --enable_gpu_log false: no GPU sampling (plaunch's monitor is its GPU log). */
int opts_paddle_set_gpu_log(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    int on;
    if (opts_parse_bool(val, &on, origin, err, errlen) < 0)
        return -1;
    if (!on)
        o->monitor = 0;
    return 0;
}

int opts_paddle_set_elastic_level(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    if (strcmp(val, "-1") == 0)
        return 0;
    snprintf(err, errlen, "%s '%.30s': Paddle's elastic levels are not plaunch's; elastic jobs are --nnodes MIN:MAX "
             "(restarts: --max_restart); give -1 or drop it", origin, val);
    return -1;
}

/* An option of a mode plaunch does not run: "ORIGIN: WHY". */
static int s_refuse(const char *origin, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", origin, why);
    return -1;
}

int opts_paddle_refuse_ps(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_refuse(origin, "a parameter-server option; plaunch runs collective jobs only: drop it", err, errlen);
}

int opts_paddle_refuse_auto(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_refuse(origin, "Paddle's auto-parallel tuner is not part of plaunch: run the tuner with Paddle's "
                    "launcher, or drop it", err, errlen);
}

int opts_paddle_refuse_device(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_refuse(origin, "plaunch runs NVIDIA GPUs (--gpus/--devices) and CPU workers only: drop it", err,
                    errlen);
}

int opts_paddle_refuse_start_port(struct opts *o, const char *val, const char *origin, char *err, size_t errlen)
{
    return s_refuse(origin, "plaunch gives each rank a free port of its own (PADDLE_CURRENT_ENDPOINT), never a "
                    "fixed range that another job may hold: drop it", err, errlen);
}

/* Paddle's variables and the options they stand for (context/args_envs.py's env_args_mapping). */
static const char *const s_env_map[][2] = {
    { "POD_IP", "host" },           { "PADDLE_MASTER", "master" },        { "PADDLE_DEVICES", "devices" },
    { "PADDLE_NNODES", "nnodes" },  { "PADDLE_RUN_MODE", "run_mode" },    { "PADDLE_LOG_LEVEL", "log_level" },
    { "PADDLE_LOG_OVERWRITE", "log_overwrite" }, { "PADDLE_SORT_IP", "sort_ip" },
    { "PADDLE_NPROC_PER_NODE", "nproc_per_node" }, { "PADDLE_JOB_ID", "job_id" }, { "PADDLE_RANK", "rank" },
    { "PADDLE_LOG_DIR", "log_dir" }, { "PADDLE_MAX_RESTART", "max_restart" },
    { "PADDLE_ELASTIC_LEVEL", "elastic_level" }, { "PADDLE_ELASTIC_TIMEOUT", "elastic_timeout" },
    { "PADDLE_SERVER_NUM", "server_num" }, { "PADDLE_TRAINER_NUM", "trainer_num" },
    { "PADDLE_SERVERS_ENDPOINTS", "servers" }, { "PADDLE_TRAINERS_ENDPOINTS", "trainers" },
    { "PADDLE_GLOO_PORT", "gloo_port" }, { "PADDLE_WITH_GLOO", "with_gloo" }, { "PADDLE_START_PORT", "start_port" },
    { "PADDLE_IPS", "ips" }, { "PADDLE_AUTO_PARALLEL_CONFIG", "auto_parallel_config" },
    { "PADDLE_AUTO_CLUSTER", "auto_cluster_config" }, { "PADDLE_TRAINER_ID", "rank" },
};

int opts_paddle_env(char **envp, opts_paddle_apply_fn apply, void *arg, char *err, size_t errlen)
{
    /* A launcher's worker (Paddle's or plaunch's) has PADDLE_CURRENT_ENDPOINT: its PADDLE_* describe the outer
     * job, not options for a launch inside it. */
    if (util_env_get(envp, "PADDLE_CURRENT_ENDPOINT"))
        return 0;
    for (size_t i = 0; i < sizeof s_env_map / sizeof *s_env_map; i++) {
        const char *v = util_env_get(envp, s_env_map[i][0]);
        if (v && *v && apply(arg, s_env_map[i][1], s_env_map[i][0], v, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Paddle's --master: ip:port, or http://ip:port (its HTTP key-value master), or etcd://ip:port[,ip:port] (the
 * coordinator elected through etcd, kept as given). */
int opts_paddle_master(const char *val, char *out, size_t cap, const char *origin, char *err, size_t errlen)
{
    if (strncmp(val, "etcd://", 7) == 0)
        return opts_etcd_master(val, out, cap, origin, err, errlen);
    const char *hp = strncmp(val, "http://", 7) == 0 ? val + 7 : val;
    size_t n = strlen(hp);
    while (n > 0 && hp[n - 1] == '/')
        n--;
    if (strstr(hp, "://") || n >= cap) {
        snprintf(err, errlen, "%s '%.200s': expected HOST:PORT of the coordinator (or http://HOST:PORT), e.g. "
                 "10.0.0.1:6170", origin, val);
        return -1;
    }
    snprintf(out, cap, "%.*s", (int)n, hp);
    return 0;
}
