/* cmd_status: `plaunch status` and `plaunch top`: the live view of a running or finished job (docs/goodput.md). */
#ifndef PLAUNCH_CMD_STATUS_H
#define PLAUNCH_CMD_STATUS_H

/* argv[0] is "status" or "top". 0 shown; 1 nothing could be read or asked; 2 bad usage. */
int cmd_status(int argc, char **argv);

#endif
