/* preflight_net: NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME against the interfaces that exist and are up. */
#include "launcher/preflight/preflight.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

/* An interface is up when its operstate says so (or "unknown", which loopback and tunnels report) and its flags
 * have IFF_UP. */
static int s_up(const char *net_dir, const char *name)
{
    char path[4096], buf[32] = "";
    snprintf(path, sizeof path, "%s/%s/operstate", net_dir, name);
    if (util_read_small(path, buf, sizeof buf) < 0)
        return 0;
    return strncmp(buf, "up", 2) == 0 || strncmp(buf, "unknown", 7) == 0;
}

/* Whether name is selected by one entry: exact ("=eth0" style, or any entry of GLOO's) or as a prefix (NCCL's). */
static int s_match(const char *entry, size_t len, int exact, const char *name)
{
    return exact ? strlen(name) == len && strncmp(name, entry, len) == 0 : strncmp(name, entry, len) == 0;
}

int preflight_ifname(const char *net_dir, const char *var, const char *value, int nccl_syntax, char *buf, size_t cap)
{
    const char *v = value;
    int exclude = 0, exact = !nccl_syntax;
    if (nccl_syntax && *v == '^') {
        exclude = 1;
        v++;
    }
    if (nccl_syntax && *v == '=') {
        exact = 1;
        v++;
    }
    if (exclude || !*v)
        return 0; /* an exclusion list selects whatever is left: nothing to name */
    int present = 0, up = 0;
    char down[256] = "";
    DIR *d = opendir(net_dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        for (const char *p = v; *p;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len && s_match(p, len, exact, e->d_name)) {
                present++;
                if (s_up(net_dir, e->d_name))
                    up++;
                else if (!down[0])
                    snprintf(down, sizeof down, "%s", e->d_name);
                break;
            }
            p = end ? end + 1 : p + len;
        }
    }
    if (d)
        closedir(d);
    if (up)
        return 0;
    if (present)
        snprintf(buf, cap, "%s=%.200s selects only interfaces that are down (%s): the workers cannot connect; "
                 "bring it up, or name an interface that is up (ip -br link)", var, value, down);
    else
        snprintf(buf, cap, "%s=%.200s names no interface of this node%s: the workers fail to create their "
                      "sockets; name one that exists (ip -br link)%s", var, value,
                      nccl_syntax && !exact ? " (NCCL reads each name as a prefix)" : "",
                      nccl_syntax ? ", with '=' for an exact name, '^' to exclude" : "");
    return 1;
}
