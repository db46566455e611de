/* util: whole writes to a descriptor, a lookup in an envp array, and wait status to exit code. */
#include "util.h"

#include <sys/wait.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

int util_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

const char *util_env_get(char **envp, const char *name)
{
    size_t len = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

int util_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return 125;
}
