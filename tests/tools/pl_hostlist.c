/* pl_hostlist: prints the hosts of a Slurm host list (sched_hostlist), for tests/bb/hostlist.t to compare with
 * `scontrol show hostnames`. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "launcher/sched/sched_hostlist.h"

/* Enough for any test, and a bound that a hostile list ("a[0-999999999]") meets at once. */
#define PH_MAX (1 << 20)

static int s_print_host(void *arg, int index, const char *name)
{
    (void)arg, (void)index;
    return puts(name) < 0;
}

int main(int argc, char **argv)
{
    char err[512], name[SCHED_HOSTLIST_NAME_MAX + 1];
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "Usage: pl_hostlist EXPR [INDEX]\n"
                        "Prints the hosts of EXPR one per line (at most 1048576), or with INDEX the host at that\n"
                        "index (0 first); exit 2 with the message on stderr when EXPR or INDEX is bad.\n");
        return 2;
    }
    if (argc == 3) {
        char *end;
        long index = strtol(argv[2], &end, 10);
        if (*argv[2] == '\0' || *end != '\0' || index < INT_MIN || index > INT_MAX) {
            fprintf(stderr, "pl_hostlist: INDEX '%s' is not a number\n", argv[2]);
            return 2;
        }
        if (sched_hostlist_nth(argv[1], (int)index, name, sizeof name, err, sizeof err) < 0) {
            fprintf(stderr, "pl_hostlist: %s\n", err);
            return 2;
        }
        puts(name);
        return 0;
    }
    if (sched_hostlist_each(argv[1], PH_MAX, s_print_host, NULL, err, sizeof err) < 0) {
        fprintf(stderr, "pl_hostlist: %s\n", err);
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
