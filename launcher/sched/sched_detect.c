/* sched_detect: picks the scheduler whose environment this plaunch runs in (or the one --scheduler names) and returns
 * what it says about the job as option values with their sources. */
#include "launcher/sched/sched_priv.h"

#include <string.h>

int sched_detect(const char *mode, char **envp, struct sched *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->node_index = -1;
    if (!mode || strcmp(mode, "none") == 0)
        return 0;
    int slurm = strcmp(mode, "slurm") == 0, k8s = strcmp(mode, "k8s") == 0, rc;
    if (!k8s && (rc = sched_slurm_read(envp, slurm, s, err, errlen)) != 0)
        return rc < 0 ? -1 : 0;
    if (!slurm && (rc = sched_k8s_read(envp, k8s, s, err, errlen)) != 0)
        return rc < 0 ? -1 : 0;
    return 0;
}

const struct sched_setting *sched_detect_get(const struct sched *s, const char *name)
{
    for (int i = 0; i < s->nsettings; i++)
        if (strcmp(s->settings[i].name, name) == 0)
            return &s->settings[i];
    return NULL;
}
