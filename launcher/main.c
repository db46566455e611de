/* main: plaunch entry point; dispatches subcommands and the launcher run. */
#include <stdio.h>
int main(void) { puts("plaunch skeleton"); return 0; }
