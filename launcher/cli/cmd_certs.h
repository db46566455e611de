/* cmd_certs: the `plaunch certs` subcommand: create a private job CA and issue node certificates. */
#ifndef PLAUNCH_CMD_CERTS_H
#define PLAUNCH_CMD_CERTS_H

/* argv[0] is "certs". Returns 0, 2 on bad usage, 1 on failure. */
int cmd_certs(int argc, char **argv);

#endif
