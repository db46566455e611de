/* probe_run: the live side of `plaunch probe`: is there a GPU, where is the worker, how it is started. */
#include "launcher/probe/measure/probe_run.h"

#include "common/proc.h"
#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char S_NO_GPU_HINT[] = "run `plaunch probe` on a machine with NVIDIA GPUs and their driver, or "
                                    "re-analyse saved measurements with `plaunch probe --report FILE.json`";

int probe_run_gpu_check(struct probe_err *err)
{
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (cvd && (cvd[0] == '\0' || strcmp(cvd, "-1") == 0 || strcmp(cvd, "NoDevFiles") == 0)) {
        probe_err_set(err, "no GPU to probe: CUDA_VISIBLE_DEVICES='%s' hides every GPU; unset it or list GPUs", cvd);
        return -1;
    }
    const char *lib = getenv("PLAUNCH_NVML_LIBRARY");
    lib = lib && lib[0] ? lib : "libnvidia-ml.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        probe_err_set(err, "no NVIDIA GPU here: the driver's NVML library cannot be loaded (%s); %s", dlerror(),
                      S_NO_GPU_HINT);
        return -1;
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*count)(unsigned *) = (int (*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
    int (*shutdown)(void) = (int (*)(void))dlsym(h, "nvmlShutdown");
    const char *(*errstr)(int) = (const char *(*)(int))dlsym(h, "nvmlErrorString");
    unsigned n = 0;
    int rc = -1;
    if (init == NULL || count == NULL || shutdown == NULL) {
        probe_err_set(err, "%s is not a usable NVML library (nvmlInit_v2 or nvmlDeviceGetCount_v2 missing); "
                           "reinstall the NVIDIA driver", lib);
    } else if ((rc = init()) != 0) {
        probe_err_set(err, "no usable NVIDIA GPU: NVML failed to start (%s); check that `nvidia-smi` lists the GPUs; "
                           "%s", errstr ? errstr(rc) : "unknown error", S_NO_GPU_HINT);
        rc = -1;
    } else {
        rc = count(&n);
        shutdown();
        if (rc != 0 || n == 0)
            probe_err_set(err, "no NVIDIA GPU found: the driver is loaded but NVML counts %u devices; %s", n,
                          S_NO_GPU_HINT);
        rc = rc == 0 && n > 0 ? (int)n : -1;
    }
    dlclose(h);
    return rc;
}

char *probe_run_worker_path(struct probe_err *err)
{
    const char *env = getenv("PLAUNCH_PROBE_WORKER");
    char self[PATH_MAX], *path = NULL;
    if (env && env[0]) {
        path = strdup(env);
    } else {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n < 0) {
            probe_err_set(err, "cannot find this program's directory (/proc/self/exe: %s); set "
                               "PLAUNCH_PROBE_WORKER to the plaunch-probe-worker binary", strerror(errno));
            return NULL;
        }
        self[n] = '\0';
        if (asprintf(&path, "%s/plaunch-probe-worker", dirname(self)) < 0)
            path = NULL;
    }
    if (path == NULL) {
        probe_err_set(err, "out of memory");
        return NULL;
    }
    if (access(path, X_OK) < 0) {
        probe_err_set(err, "the probe worker %s is not there (%s): build it with `make` where nvcc and nccl.h "
                           "exist, or set PLAUNCH_PROBE_WORKER to its path", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

char **probe_run_worker_argv(const char *worker, const struct probe_run_opts *o, const char *out_path)
{
    const char *pairs[][2] = { { "-b", o->min_bytes }, { "-e", o->max_bytes },      { "-f", o->factor },
                               { "-n", o->iters },     { "-w", o->warmup },         { "--grad-bytes", o->grad_bytes },
                               { "--step-gflop", o->step_gflop }, { "--op", o->ops },
                               { "-d", o->dtype },     { "--timing", o->timing } };
    size_t n = 0, cap = 2 * (sizeof pairs / sizeof pairs[0]) + 6;
    char **argv = calloc(cap, sizeof *argv);
    if (argv == NULL)
        return NULL;
    argv[n++] = strdup(worker);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i][1]) {
            argv[n++] = strdup(pairs[i][0]);
            argv[n++] = strdup(pairs[i][1]);
        }
    if (o->no_pairwise)
        argv[n++] = strdup("--no-pairwise");
    argv[n++] = strdup("--out");
    argv[n++] = strdup(out_path);
    for (size_t i = 0; i < n; i++)
        if (argv[i] == NULL) {
            for (size_t j = 0; j < n; j++)
                free(argv[j]);
            free(argv);
            return NULL;
        }
    return argv;
}

void probe_run_argv_free(char ***argv)
{
    if (argv == NULL || *argv == NULL)
        return;
    for (size_t i = 0; (*argv)[i]; i++)
        free((*argv)[i]);
    free(*argv);
    *argv = NULL;
}

/* environ without the variables we set, plus ours; NULL when out of memory. *cvd is the one string allocated. */
static char **s_worker_env(const char *gpu, char **cvd)
{
    static const char *const names[] = { "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=",
                                         "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=", "NCCL_NVLS_ENABLE=" };
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 8, sizeof *env);
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int ours = 0;
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
            ours |= strncmp(environ[i], names[j], strlen(names[j])) == 0;
        if (!ours)
            env[k++] = environ[i];
    }
    static char fixed[][32] = { "RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1",
                                "CUDA_DEVICE_ORDER=PCI_BUS_ID", "NCCL_NVLS_ENABLE=0" };
    for (size_t j = 0; j < sizeof fixed / sizeof fixed[0]; j++)
        env[k++] = fixed[j];
    if (asprintf(cvd, "CUDA_VISIBLE_DEVICES=%s", gpu) < 0) {
        free(env);
        return NULL;
    }
    env[k] = *cvd;
    return env;
}

int probe_run_local(char *const argv[], const char *gpu, struct probe_err *err)
{
    char *cvd = NULL, **env = s_worker_env(gpu, &cvd);
    int status = 0;
    if (env == NULL) {
        probe_err_set(err, "out of memory while preparing the probe worker's environment");
        return -1;
    }
    struct proc_spawn sp = PROC_SPAWN_INIT;
    sp.path = argv[0];
    sp.argv = argv;
    sp.envp = env;
    int rc = proc_run(&sp, &status), e = errno;
    free(cvd);
    free(env);
    if (rc < 0) {
        probe_err_set(err, "cannot start the probe worker %s: %s", argv[0], strerror(e));
        return -1;
    }
    return util_exit_code(status);
}
