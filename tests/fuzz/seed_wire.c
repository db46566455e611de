/* seed_wire: writes the fuzz seed corpus, one valid encoding of every body type and REPORT kind (and a newer-version
 * JOIN), to DIR. */
#include <stdio.h>
#include <stdlib.h>

#include "common/wire/wire.h"
#include "tests/unit/wire_samples.h"

static int s_write(const char *dir, const char *name, const wire_msg_t *msg)
{
    char path[4096], err[512] = "";
    size_t len;
    void *buf = wire_encode_alloc(msg, &len, err, sizeof err);
    FILE *f = NULL;
    int rc = -1;
    if (!buf) {
        fprintf(stderr, "seed_wire: %s: %s\n", name, err);
        goto out;
    }
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len) {
        perror(path);
        goto out;
    }
    rc = 0;
out:
    if (f && fclose(f) != 0)
        rc = -1;
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    struct sample s;
    if (argc != 2) {
        fprintf(stderr, "usage: seed_wire DIR\n");
        return 2;
    }
    for (size_t i = 0; i < SAMPLE_NTYPES; i++) {
        sample_init(&s, sample_types[i]);
        if (s_write(argv[1], wire_type_name(sample_types[i]), &s.msg) < 0)
            return 1;
    }
    for (size_t i = 0; i < SAMPLE_NREPORTS; i++) {
        char name[64];
        sample_init(&s, WIRE_REPORT);
        sample_report(&s, sample_reports[i]);
        snprintf(name, sizeof name, "REPORT-%s", wire_report_name(sample_reports[i]));
        if (s_write(argv[1], name, &s.msg) < 0)
            return 1;
    }
    sample_init(&s, WIRE_JOIN);
    s.msg.protocol_version = WIRE_PROTOCOL_VERSION + 1;
    return s_write(argv[1], "JOIN-newer-version", &s.msg) < 0 ? 1 : 0;
}
