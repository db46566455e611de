/* cmd_token: `plaunch token [FILE]`: a fresh random token for TLS 1.3 PSK mode, printed for
 * `export PLAUNCH_TOKEN=$(plaunch token)` in a batch script, or written owner-only to FILE for --token-file. */
#include "launcher/cli/cmd_token.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/secfile.h"
#include "common/tls/tls_chan.h"

static const char s_usage[] =
    "Usage: plaunch token [FILE]\n"
    "Prints a fresh random token for the control plane of a multi-node job (TLS 1.3 with a pre-shared key),\n"
    "or writes it to FILE (mode 0600; an existing FILE is never overwritten) for --token-file.\n"
    "Give every node of the job the same token:\n"
    "    export PLAUNCH_TOKEN=$(plaunch token)        # in an sbatch script, before srun: steps inherit it\n"
    "    plaunch token /shared/job.token               # then plaunch --token-file /shared/job.token ...\n";

int cmd_token(int argc, char **argv)
{
    char hex[TLS_TOKEN_HEX_LEN + 2], err[512];
    if (argc > 2 || (argc == 2 && (argv[1][0] == '-' || !argv[1][0]))) {
        int help = argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0);
        fputs(s_usage, help ? stdout : stderr);
        return help ? 0 : 2;
    }
    if (tls_token_generate(hex, err, sizeof err) < 0) {
        fprintf(stderr, "plaunch token: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (argc == 2) {
        strcat(hex, "\n");
        if (secfile_write(argv[1], hex, strlen(hex), 0600, 0, err, sizeof err) < 0) {
            fprintf(stderr, "plaunch token: %s\n", err);
            rc = 1;
        }
    } else if (printf("%s\n", hex) < 0 || fflush(stdout) != 0) {
        rc = 1;
    }
    OPENSSL_cleanse(hex, sizeof hex);
    return rc;
}
