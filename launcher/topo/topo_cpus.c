/* topo_cpus: CPU lists as Linux writes them ("0-3,8") read, written and parsed; the binding modes' spellings. */
#include "launcher/topo/topo.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

int topo_cpus_parse(const char *s, size_t len, cpu_set_t *set)
{
    CPU_ZERO(set);
    size_t i = 0;
    int any = 0;
    while (i < len) {
        long a = 0, b;
        size_t d = i;
        while (i < len && isdigit((unsigned char)s[i]) && a < CPU_SETSIZE)
            a = a * 10 + (s[i++] - '0');
        if (i == d || a >= CPU_SETSIZE)
            return -1;
        b = a;
        if (i < len && s[i] == '-') {
            d = ++i;
            b = 0;
            while (i < len && isdigit((unsigned char)s[i]) && b < CPU_SETSIZE)
                b = b * 10 + (s[i++] - '0');
            if (i == d || b >= CPU_SETSIZE || b < a)
                return -1;
        }
        for (long c = a; c <= b; c++)
            CPU_SET((int)c, set);
        any = 1;
        if (i < len && s[i] != ',')
            return -1;
        if (i < len && ++i == len)
            return -1; /* a trailing comma */
    }
    return any ? 0 : -1;
}

void topo_cpus_format(const cpu_set_t *set, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && o + 24 < cap; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
            e++;
        o += (size_t)snprintf(buf + o, cap - o, e == c ? "%s%d" : "%s%d-%d", o ? "," : "", c, e);
        c = e;
    }
    if (!o)
        snprintf(buf, cap, "none");
}

int topo_cpus_read(const char *path, cpu_set_t *set)
{
    char buf[8192];
    ssize_t n = util_read_small(path, buf, sizeof buf);
    return n < 0 ? -1 : topo_cpus_parse(buf, (size_t)n, set);
}

static const char *const s_names[] = {
    [TOPO_AUTO] = "auto", [TOPO_NONE] = "none", [TOPO_NODE] = "numa", [TOPO_SOCKET] = "socket",
    [TOPO_EXCLUSIVE] = "cores", [TOPO_CORE_COMPLEX] = "core-complex", [TOPO_LIST] = "list",
};

const char *topo_mode_name(int mode)
{
    return mode >= 0 && mode <= TOPO_LIST ? s_names[mode] : "?";
}

/* "list:" then one CPU list per local rank, separated by ':' */
static int s_check_list(const char *l, char *err, size_t errlen)
{
    for (const char *p = l;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        cpu_set_t set;
        if (topo_cpus_parse(p, len, &set) < 0) {
            int shown = len > 100 ? 100 : (int)len;
            snprintf(err, errlen, "'%.*s' is not a CPU list such as 0-3,8 (CPUs below %d)", shown, p, CPU_SETSIZE);
            return -1;
        }
        if (!end)
            return 0;
        p = end + 1;
    }
}

int topo_mode_parse(const char *val, int torch, int *mode, char *err, size_t errlen)
{
    /* torchrun's words (torch/numa/binding.py AffinityMode) are accepted by both spellings */
    static const struct { const char *word; int mode; } words[] = {
        { "node", TOPO_NODE }, { "socket", TOPO_SOCKET }, { "exclusive", TOPO_EXCLUSIVE },
        { "core-complex", TOPO_CORE_COMPLEX }, { "none", TOPO_NONE }, { "numa", TOPO_NODE },
        { "cores", TOPO_EXCLUSIVE }, { "auto", TOPO_AUTO },
    };
    size_t nwords = torch ? 4 : sizeof words / sizeof *words;
    for (size_t i = 0; i < nwords; i++)
        if (strcmp(val, words[i].word) == 0) {
            *mode = words[i].mode;
            return 0;
        }
    if (!torch && strncmp(val, "list:", 5) == 0) {
        char why[200];
        if (s_check_list(val + 5, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s; expected list:CPUS:CPUS:... (one CPU list per local rank)", why);
            return -1;
        }
        *mode = TOPO_LIST;
        return 0;
    }
    snprintf(err, errlen, torch ? "expected torchrun's node, socket, exclusive or core-complex"
                                : "expected none, numa, socket, cores, core-complex, auto or list:CPUS:CPUS:...");
    return -1;
}
