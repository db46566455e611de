/* gpus_cuda: CUDA versions: whether a runtime can run on a driver (the probe and the node preflight share the rule),
 * and the runtime a worker would load from its LD_LIBRARY_PATH, read from the library's file name. */
#include "common/gpus/gpus.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gpus_cuda_mismatch(int driver, int runtime, char *why, size_t cap)
{
    if (!driver || !runtime || driver >= runtime) {
        if (cap)
            why[0] = '\0';
        return 0;
    }
    if (driver / 1000 < runtime / 1000) {
        snprintf(why, cap, "a CUDA %d runtime cannot run on a CUDA %d driver: every CUDA call fails with \"CUDA "
                 "driver version is insufficient for CUDA runtime version\"", runtime / 1000, driver / 1000);
        return 1;
    }
    snprintf(why, cap, "the same major version runs under CUDA's minor-version compatibility, but PTX compiled at run "
             "time and features newer than %d.%d fail", driver / 1000, driver % 1000 / 10);
    return 2;
}

/* "12.4.127" (after "libcudart.so.") as CUDA's number 12040; 0 when it names no version. */
static int s_version(const char *v)
{
    char *end;
    long major = strtol(v, &end, 10), minor = 0;
    if (end == v || major <= 0 || major > 99)
        return 0;
    if (*end == '.')
        minor = strtol(end + 1, NULL, 10);
    return (int)(major * 1000 + (minor > 0 && minor < 100 ? minor * 10 : 0));
}

int gpus_cudart_version(const char *ld_library_path, char *where, size_t cap)
{
    int best = 0;
    if (cap)
        where[0] = '\0';
    for (const char *p = ld_library_path ? ld_library_path : ""; *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char dir[PATH_MAX], path[PATH_MAX + 300], target[PATH_MAX];
        struct stat st;
        snprintf(dir, sizeof dir, "%.*s", (int)(len < sizeof dir ? len : sizeof dir - 1), p);
        p = end ? end + 1 : p + len;
        snprintf(path, sizeof path, "%s/libcuda.so.1", dir);
        if (!dir[0] || stat(path, &st) == 0) /* cuda-compat: its own driver library comes with the runtime */
            continue;
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (strncmp(e->d_name, "libcudart.so.", 13) != 0)
                continue;
            int v = s_version(e->d_name + 13);
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            ssize_t n = readlink(path, target, sizeof target - 1); /* libcudart.so.12 -> libcudart.so.12.4.127 */
            if (n > 0) {
                target[n] = '\0';
                const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
                if (strncmp(base, "libcudart.so.", 13) == 0 && s_version(base + 13) > v)
                    v = s_version(base + 13);
            }
            if (v > best) {
                best = v;
                snprintf(where, cap, "%s", path);
            }
        }
        if (d)
            closedir(d);
    }
    return best;
}
