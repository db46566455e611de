/* sim_proc: the coordinator's process as /proc shows it to pl_agentsim: CPU time, peak RSS, whether it ended. */
#include "tests/agentsim/sim.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* /proc/PID/stat from its state field on (after the command's closing parenthesis), NULL when it cannot be read. */
static const char *s_stat(int pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

double sim_proc_cpu(int pid)
{
    char buf[2048];
    const char *p = s_stat(pid, buf, sizeof buf);
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long sim_proc_hwm_kib(int pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

int sim_proc_ended(int pid)
{
    char buf[2048];
    const char *p = s_stat(pid, buf, sizeof buf);
    return !p || *p == 'Z' || *p == 'X'; /* gone, or a zombie its parent has not reaped yet */
}
