/* probe_driver: stand-in for `plaunch probe` until launcher/main.c dispatches it; tests/bb/probe_report.t builds it. */
#include "cmd_probe.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "probe") != 0) {
        fprintf(stderr, "usage: %s probe [options]\n", argv[0]);
        return 2;
    }
    return cmd_probe(argc - 1, argv + 1);
}
