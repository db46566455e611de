/* cmd_token: the `plaunch token` subcommand: a fresh pre-shared token for a job's control plane. */
#ifndef PLAUNCH_CMD_TOKEN_H
#define PLAUNCH_CMD_TOKEN_H

/* argv[0] is "token". Prints a token (or writes it to FILE, mode 0600, never over an existing file). Returns 0,
 * 2 on bad usage, 1 on failure. */
int cmd_token(int argc, char **argv);

#endif
